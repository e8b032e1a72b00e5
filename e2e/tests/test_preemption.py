"""Gang preemption on the real control plane.

Four nodes of 8 cpu, full with four low-priority gangs (ReplicaSets of 2 x 4
cpu, PodGroup priorities 1 to 4), each packed on one node; then a gang of
2 x 8 cpu at priority 100 arrives and needs two whole nodes. KWOK removes a
pod being deleted (``e2e/kwok_stages.py``, pod-delete), so an evicted victim
goes at once; its ReplicaSet recreates it, and the recreated members wait
whole (there is no room).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.faultproxy import FaultProxy, Rule
from e2e.pki import Pki
from e2e.scheduler import SchedulerProcess, StartScheduler
from e2e.tests import manifests as m
from e2e.tests.helpers import condition, podgroup
from e2e.waiting import DEFAULT_TIMEOUT_SECONDS, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.version_sensitive]

LOW = ("low-1", "low-2", "low-3", "low-4")


def message_of(group: Json, kind: str) -> str:
    return str(condition(group, kind).get("message", ""))


def running_by_group(cluster: Cluster, namespace: str) -> dict[str, set[str]]:
    """Each gang's pods on a node now (not being deleted), by uid."""
    found: dict[str, set[str]] = {}
    for pod in w.list_pods(cluster.api, namespace):
        group = pod["metadata"]["labels"].get(w.GROUP_LABEL)
        if group and pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp"):
            found.setdefault(group, set()).add(pod["metadata"]["uid"])
    return found


def events_with(cluster: Cluster, namespace: str, reason: str) -> list[Json]:
    items: list[Json] = cluster.api.get(f"/api/v1/namespaces/{namespace}/events").get("items", [])
    return [e for e in items if e.get("reason") == reason]


def fill(
    cluster: Cluster, namespace: str, pool: str, priority_class: str | None = None
) -> dict[str, set[str]]:
    """The four low gangs, one after the other, each packed on one node."""
    for priority, name in enumerate(LOW, start=1):
        w.create_podgroup(cluster.api, namespace, name, 2, priority=priority)
        w.create_replicaset(
            cluster.api,
            namespace,
            name,
            replicas=2,
            pool=pool,
            cpu="4",
            group=name,
            priority_class=priority_class,
        )
        wait_for(
            lambda name=name: running_by_group(cluster, namespace),  # type: ignore[misc]
            lambda found, name=name: len(found.get(name, ())) == 2,  # type: ignore[misc]
            describe=f"gang {name} running",
        )
    return running_by_group(cluster, namespace)


def urgent(cluster: Cluster, namespace: str, pool: str, **spec: object) -> None:
    w.create_podgroup(cluster.api, namespace, "urgent", 2, **(spec or {"priority": 100}))
    w.create_replicaset(
        cluster.api,
        namespace,
        "urgent",
        replicas=2,
        pool=pool,
        cpu="8",
        group="urgent",
        priority_class=str(spec["priorityClassName"]) if "priorityClassName" in spec else None,
    )


def urgent_whole(
    cluster: Cluster,
    namespace: str,
    *,
    size: int = 2,
    why: str = "",
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> dict[str, set[str]]:
    """Wait until the urgent gang's ``size`` pods run; each gang's running pods then."""
    return wait_for(
        lambda: running_by_group(cluster, namespace),
        lambda found: len(found.get("urgent", ())) == size,
        describe=f"the urgent gang bound whole{why}",
        timeout=timeout,
    )


def no_partial_gang(found: dict[str, set[str]]) -> bool:
    return all(len(uids) in (0, 2) for name, uids in found.items() if name in LOW)


def test_a_high_gang_binds_whole_after_exactly_the_planned_gangs_are_evicted_whole(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(4, cpu="8")
    start_scheduler()
    before = fill(cluster, namespace, pool)
    urgent(cluster, namespace, pool)

    placed = urgent_whole(cluster, namespace)
    # The two lowest gangs went whole; the others were not touched; none is partial.
    assert {name for name in LOW if not placed.get(name)} == {"low-1", "low-2"}
    assert placed["low-3"] == before["low-3"]
    assert placed["low-4"] == before["low-4"]
    assert no_partial_gang(placed)
    # Exactly the planned victims were evicted: the plan named them, each pod was told.
    (plan,) = [
        e["message"]
        for e in events_with(cluster, namespace, "Preempting")
        if e["involvedObject"]["name"] == "urgent"
    ]
    assert plan.startswith("preempting ")
    assert f"{namespace}/low-1 (2 pods, priority 1" in plan
    assert f"{namespace}/low-2 (2 pods, priority 2" in plan
    assert "low-3" not in plan
    assert "low-4" not in plan
    told = {
        e["involvedObject"]["uid"]
        for e in events_with(cluster, namespace, "Preempted")
        if e["involvedObject"]["kind"] == "Pod"
    }
    assert told == before["low-1"] | before["low-2"]
    for name in ("low-1", "low-2"):
        assert any(
            e["involvedObject"]["name"] == name and "PodGroup" in e["involvedObject"]["kind"]
            for e in events_with(cluster, namespace, "Preempted")
        )
    # The recreated victims wait whole: no room, and no gang is left partial.
    wait_for(
        lambda: podgroup(cluster, namespace, "low-1"),
        lambda group: "Insufficient cpu" in message_of(group, "Unschedulable"),
        describe="low-1's recreated members waiting for room",
    )
    assert no_partial_gang(running_by_group(cluster, namespace))
    for pod in w.list_pods(cluster.api, namespace, "app=urgent"):
        assert pod["status"].get("nominatedNodeName") in (None, pod["spec"]["nodeName"])


def test_a_disruption_budget_makes_the_plan_choose_other_victims(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(4, cpu="8")
    start_scheduler()
    before = fill(cluster, namespace, pool)
    budgets = m.disruption_budgets(namespace)
    cluster.api.create(budgets, m.disruption_budget("keep-low-1", "low-1", 0))
    wait_for(
        lambda: cluster.api.get(f"{budgets}/keep-low-1"),
        lambda pdb: (pdb.get("status") or {}).get("expectedPods") == 2,
        describe="the budget's status computed",
    )
    urgent(cluster, namespace, pool)
    placed = urgent_whole(cluster, namespace)
    assert placed["low-1"] == before["low-1"]
    assert {name for name in LOW if not placed.get(name)} == {"low-2", "low-3"}
    assert no_partial_gang(placed)


def test_a_gang_under_two_budgets_is_no_victim_since_eviction_refuses_its_pods(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    # Each budget alone would allow low-1's eviction; the Eviction API refuses a pod
    # that more than one budget covers, so a plan with low-1 would stop halfway.
    add_nodes(4, cpu="8")
    start_scheduler()
    before = fill(cluster, namespace, pool)
    path = m.disruption_budgets(namespace)
    for name in ("low-1-a", "low-1-b"):
        cluster.api.create(path, m.disruption_budget(name, "low-1", 2))
        wait_for(
            lambda name=name: cluster.api.get(f"{path}/{name}"),  # type: ignore[misc]
            lambda pdb: (pdb.get("status") or {}).get("disruptionsAllowed") == 2,
            describe=f"budget {name}'s status computed",
        )
    # What the API server answers (recorded here, so a change in a release shows up).
    victim = next(
        p
        for p in w.list_pods(cluster.api, namespace)
        if p["metadata"]["labels"].get("app") == "low-1"
    )
    name = victim["metadata"]["name"]
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
        "dryRun": ["All"],
    }
    status, text = cluster.api.raw(
        "POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction?dryRun=All", eviction
    )
    assert status == 500, text
    answer = json.loads(text)
    assert answer["message"] == (
        "This pod has more than one PodDisruptionBudget, "
        "which the eviction subresource does not support."
    )
    assert "reason" not in answer  # a bare 500: nothing says it is about budgets but the text
    urgent(cluster, namespace, pool)
    placed = urgent_whole(cluster, namespace)
    assert placed["low-1"] == before["low-1"]
    assert {name for name in LOW if not placed.get(name)} == {"low-2", "low-3"}
    assert no_partial_gang(placed)


def test_a_gang_whose_priority_class_never_preempts_waits(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(4, cpu="8")
    name = f"never-{pool}"
    cluster.api.create(m.PRIORITY_CLASSES, m.priority_class(name, 100, preemption_policy="Never"))
    try:
        start_scheduler()
        before = fill(cluster, namespace, pool)
        urgent(cluster, namespace, pool, priorityClassName=name)
        wait_for(
            lambda: podgroup(cluster, namespace, "urgent"),
            lambda group: "preemptionPolicy is Never" in message_of(group, "Unschedulable"),
            describe="urgent waiting, saying it does not preempt",
        )
        assert running_by_group(cluster, namespace) == before
        assert events_with(cluster, namespace, "Preempted") == []
    finally:
        cluster.api.delete(f"{m.PRIORITY_CLASSES}/{name}")


def test_dry_run_evicts_nothing_and_shows_the_plan(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(4, cpu="8")
    start_scheduler("--preemption=dry-run")
    before = fill(cluster, namespace, pool)
    urgent(cluster, namespace, pool)
    group = wait_for(
        lambda: podgroup(cluster, namespace, "urgent"),
        lambda group: "Preemption (dry-run) would preempt" in message_of(group, "Unschedulable"),
        describe="urgent's condition showing the plan",
    )
    message = message_of(group, "Unschedulable")
    assert f"{namespace}/low-1 (2 pods, priority 1" in message
    assert f"{namespace}/low-2 (2 pods, priority 2" in message
    (event,) = [
        e["message"]
        for e in events_with(cluster, namespace, "Preempting")
        if e["involvedObject"]["name"] == "urgent"
    ]
    assert event.startswith("dry-run: would preempt ")
    assert running_by_group(cluster, namespace) == before
    assert events_with(cluster, namespace, "Preempted") == []


def test_victim_jobs_that_ignore_disruptions_recreate_their_pods_and_wait_whole(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    """Jobs whose podFailurePolicy ignores DisruptionTarget: the condition we write is what
    lets a preempted Job go on (its pods recreated) instead of failing."""
    add_nodes(2, cpu="8")
    start_scheduler()
    for priority, name in enumerate(("job-1", "job-2"), start=1):
        w.create_podgroup(cluster.api, namespace, name, 2, priority=priority)
        template = {
            "metadata": {
                "labels": {"app": name, w.GROUP_LABEL: name},
                "annotations": {w.COMPLETE_AFTER: "1h"},
            },
            "spec": {
                "schedulerName": "coscheduler",
                "nodeSelector": {w.POOL_LABEL: pool},
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {
                        "name": "work",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "4", "memory": "1Gi"}},
                    }
                ],
            },
        }
        cluster.api.create(
            f"/apis/batch/v1/namespaces/{namespace}/jobs",
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name},
                "spec": {
                    "parallelism": 2,
                    "completions": 2,
                    "backoffLimit": 0,
                    "podFailurePolicy": {
                        "rules": [
                            {
                                "action": "Ignore",
                                "onPodConditions": [{"type": "DisruptionTarget"}],
                            }
                        ]
                    },
                    "template": template,
                },
            },
        )
        wait_for(
            lambda name=name: running_by_group(cluster, namespace),  # type: ignore[misc]
            lambda found, name=name: len(found.get(name, ())) == 2,  # type: ignore[misc]
            describe=f"job {name} running",
        )
    before = running_by_group(cluster, namespace)
    w.create_podgroup(cluster.api, namespace, "urgent", 2, priority=100)
    w.create_replicaset(
        cluster.api, namespace, "urgent", replicas=2, pool=pool, cpu="4", group="urgent"
    )
    placed = urgent_whole(cluster, namespace)
    assert not placed.get("job-1")
    assert placed["job-2"] == before["job-2"]
    # The Job did not fail: it made its two pods again, and they wait whole.
    recreated = wait_for(
        lambda: w.list_pods(cluster.api, namespace, "app=job-1"),
        lambda pods: sum(1 for p in pods if p["metadata"]["uid"] not in before["job-1"]) == 2,
        describe="job-1's pods recreated",
    )
    assert all(
        not p["spec"].get("nodeName")
        for p in recreated
        if not p["metadata"].get("deletionTimestamp")
    )
    job = cluster.api.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/job-1")
    assert not any(
        c["type"] == "Failed" and c["status"] == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def test_a_queue_under_its_nominal_reclaims_a_borrowers_gang_whole_and_no_ping_pong(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="8")
    queues = w.QUEUES
    names = {"a": f"{namespace}-a", "b": f"{namespace}-b"}
    for queue in names.values():
        w.create_queue(cluster.api, queue, nominal={"cpu": "8"}, namespaces=[namespace])
    try:
        start_scheduler()
        # b borrows a's idle nominal: two gangs of high priority fill both nodes.
        for name in ("b-1", "b-2"):
            w.create_podgroup(cluster.api, namespace, name, 2, priority=50, queue=names["b"])
            w.create_replicaset(
                cluster.api, namespace, name, replicas=2, pool=pool, cpu="4", group=name
            )
            wait_for(
                lambda name=name: running_by_group(cluster, namespace),  # type: ignore[misc]
                lambda found, name=name: len(found.get(name, ())) == 2,  # type: ignore[misc]
                describe=f"gang {name} running",
            )
        before = running_by_group(cluster, namespace)
        # a wants its nominal back, at the lowest priority.
        w.create_podgroup(cluster.api, namespace, "a-1", 2, priority=0, queue=names["a"])
        w.create_replicaset(
            cluster.api, namespace, "a-1", replicas=2, pool=pool, cpu="4", group="a-1"
        )
        placed = wait_for(
            lambda: running_by_group(cluster, namespace),
            lambda found: len(found.get("a-1", ())) == 2,
            describe="a's gang bound whole after reclaim",
        )
        evicted = [name for name in ("b-1", "b-2") if placed.get(name) != before[name]]
        assert len(evicted) == 1, placed  # one of b's gangs, whole; b keeps its nominal
        kept = "b-2" if evicted == ["b-1"] else "b-1"
        assert placed[kept] == before[kept]
        # The evicted gang's recreated pods wait whole; b, at its nominal, takes nothing back.
        wait_for(
            lambda: podgroup(cluster, namespace, evicted[0]),
            lambda group: "Insufficient cpu" in message_of(group, "Unschedulable"),
            describe=f"{evicted[0]}'s recreated members waiting",
        )
        now = running_by_group(cluster, namespace)
        assert len(now.get("a-1", ())) == 2
        assert not now.get(evicted[0])
        plans = [e["message"] for e in events_with(cluster, namespace, "Preempting")]
        assert len(plans) == 1, plans
    finally:
        for queue in names.values():
            cluster.api.delete(f"{queues}/{queue}")


def test_a_gang_held_back_by_its_queues_max_preempts_a_lower_gang_of_its_queue(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    # Room enough in the cluster (three nodes, one gang of 8 cpu running); the queue's max
    # of 8 cpu is what keeps the urgent gang out. Another queue's lower gang is not touched.
    add_nodes(3, cpu="8")
    queues = w.QUEUES
    capped, other = f"{namespace}-capped", f"{namespace}-other"
    w.create_queue(cluster.api, capped, max={"cpu": "8"}, namespaces=[namespace])
    w.create_queue(cluster.api, other, namespaces=[namespace])
    try:
        start_scheduler()
        for name, queue in (("low-1", capped), ("low-2", other)):
            w.create_podgroup(cluster.api, namespace, name, 2, priority=1, queue=queue)
            w.create_replicaset(
                cluster.api, namespace, name, replicas=2, pool=pool, cpu="4", group=name
            )
            wait_for(
                lambda name=name: running_by_group(cluster, namespace),  # type: ignore[misc]
                lambda found, name=name: len(found.get(name, ())) == 2,  # type: ignore[misc]
                describe=f"gang {name} running",
            )
        before = running_by_group(cluster, namespace)
        w.create_podgroup(cluster.api, namespace, "urgent", 2, priority=100, queue=capped)
        w.create_replicaset(
            cluster.api, namespace, "urgent", replicas=2, pool=pool, cpu="4", group="urgent"
        )
        placed = urgent_whole(cluster, namespace, why=" within its queue's max")
        assert placed.get("low-2") == before["low-2"]
        assert not placed.get("low-1"), placed  # evicted whole; its recreated pods wait
        wait_for(
            lambda: podgroup(cluster, namespace, "low-1"),
            lambda group: "QueueMaxReached" in str(group.get("status", {}).get("conditions")),
            describe="low-1's recreated members waiting for the queue",
        )
        plans = [e["message"] for e in events_with(cluster, namespace, "Preempting")]
        assert len(plans) == 1, plans
        assert f"{namespace}/low-1" in plans[0], plans
    finally:
        for queue in (capped, other):
            cluster.api.delete(f"{queues}/{queue}")


@contextlib.contextmanager
def through_fault_proxy(
    cluster: Cluster, namespace: str, pool: str, tmp_path: Path
) -> Iterator[tuple[FaultProxy, str]]:
    """A scheduler that talks through the fault proxy, and a PriorityClass that never preempts.

    The low gangs' pods get that class: their recreated members wait, so what a
    test sees is the urgent gang's doing only.
    """
    never = f"low-never-{pool}"
    cluster.api.create(m.PRIORITY_CLASSES, m.priority_class(never, 0, preemption_policy="Never"))
    proxy = FaultProxy.start(
        upstream_port=cluster.state.ports["apiserver"], pki=Pki(cluster.pki_dir), directory=tmp_path
    )
    scheduler = SchedulerProcess(
        kubeconfig=proxy.kubeconfig,
        log_path=tmp_path / "coscheduler.log",
        args=["--namespace", namespace, "--no-leader-elect", "--backoff-max-seconds", "2",
              "--metrics-port", "0"],
    )  # fmt: skip
    try:
        scheduler.start()
        yield proxy, never
    except BaseException:
        print(f"\n--- {scheduler.log_path} ---\n{scheduler.log()[-6000:]}")
        raise
    finally:
        scheduler.stop()
        proxy.stop()
        cluster.api.delete(f"{m.PRIORITY_CLASSES}/{never}")


def test_a_refused_first_eviction_costs_its_gang_nothing_and_the_plan_moves_on(
    cluster: Cluster,
    namespace: str,
    pool: str,
    podgroup_crd: str,
    add_nodes: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    # The scheduler talks through the fault proxy, which answers its first eviction 429
    # (as a budget that changed after the last check would): the plan stops before any
    # pod goes, the refused gang is spared and told, another plan places the urgent gang.
    # (The victims' recreated pods may then preempt lower gangs in turn, by priority.)
    add_nodes(4, cpu="8")
    with through_fault_proxy(cluster, namespace, pool, tmp_path) as (proxy, never):
        before = fill(cluster, namespace, pool, never)
        refusal = Rule("status", 1.0, ("create",), ("pods/eviction",), status=429, max_count=1)
        proxy.inject([refusal], seed=1)
        urgent(cluster, namespace, pool)
        urgent_whole(cluster, namespace, why=" after the refusal", timeout=60)
        assert proxy.stats()["faults"].get("status", 0) == 1
        told = [
            e["message"]
            for e in events_with(cluster, namespace, "EvictionRefused")
            if e["message"].startswith("not preempting") and "eviction refused" in e["message"]
        ]
        assert len(told) == 1, told
        spared = told[0].removeprefix("not preempting ").split(":")[0].split("/")[-1]
        # The refused gang's pods were not evicted by the urgent gang, and the one whose
        # eviction was refused says so in its DisruptionTarget condition.
        evicted_by_urgent = {
            e["involvedObject"]["name"]
            for e in events_with(cluster, namespace, "Preempted")
            if e["involvedObject"]["kind"] == "Pod" and "/urgent " in e["message"]
        }
        pods = {
            p["metadata"]["uid"]: p
            for p in w.list_pods(cluster.api, namespace)
            if p["metadata"]["uid"] in before[spared]
        }
        conditions = [
            c
            for p in pods.values()
            for c in p["status"].get("conditions", [])
            if c["type"] == "DisruptionTarget"
        ]
        assert any(c["status"] == "False" and c["reason"] == "EvictionRefused" for c in conditions)
        refused_pod = next(
            p["metadata"]["name"]
            for p in pods.values()
            if any(c.get("reason") == "EvictionRefused" for c in p["status"].get("conditions", []))
        )
        assert refused_pod not in evicted_by_urgent
        assert len(pods) == 2  # the refused gang kept both members
        now = running_by_group(cluster, namespace)
        assert now[spared] == before[spared]
        assert len([name for name in LOW if not now.get(name)]) == 2
        # Once quiet, no gang is partly running.
        wait_for(
            lambda: running_by_group(cluster, namespace),
            no_partial_gang,
            describe="no low gang partly running once quiet",
            timeout=60,
        )


@pytest.mark.partial_gangs(
    reason="the eviction refused halfway leaves the victim gang short by design until its "
    "recreated member is placed back, at most hold_seconds later",
    seconds=60,
)
def test_a_refusal_halfway_through_a_victim_gang_gives_its_room_back_to_make_it_whole(
    cluster: Cluster,
    namespace: str,
    pool: str,
    podgroup_crd: str,
    add_nodes: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    # A gang of 3 x 4 cpu needs two low gangs' nodes. The fault proxy lets the first
    # eviction through and answers the second 429: the first victim gang has lost one
    # member and keeps the other. The urgent gang's room is released and that gang is
    # spared by it; the room its evicted member freed is held for its recreated member
    # (not taken by the urgent gang's next plan), which goes back, and the gang is whole.
    add_nodes(4, cpu="8")
    with through_fault_proxy(cluster, namespace, pool, tmp_path) as (proxy, never):
        before = fill(cluster, namespace, pool, never)
        refusal = Rule(
            "status", 1.0, ("create",), ("pods/eviction",), status=429, max_count=1, after=1
        )
        proxy.inject([refusal], seed=1)
        w.create_podgroup(cluster.api, namespace, "urgent", 3, priority=100)
        w.create_replicaset(
            cluster.api, namespace, "urgent", replicas=3, pool=pool, cpu="4", group="urgent"
        )
        urgent_whole(cluster, namespace, size=3, why=" after the refusal", timeout=60)
        assert proxy.stats()["faults"].get("status", 0) == 1
        (told,) = [
            e["message"]
            for e in events_with(cluster, namespace, "EvictionRefused")
            if "eviction refused" in e["message"]
        ]
        spared = told.removeprefix("not preempting ").split(":")[0].split("/")[-1]
        # The spared gang lost exactly one member to the urgent gang, and was told so.
        evicted = {
            e["involvedObject"]["uid"]
            for e in events_with(cluster, namespace, "Preempted")
            if e["involvedObject"]["kind"] == "Pod"
        }
        assert len(evicted & before[spared]) == 1
        told_group = [
            e["message"]
            for e in events_with(cluster, namespace, "Preempted")
            if e["involvedObject"]["name"] == spared and e["involvedObject"]["kind"] == "PodGroup"
        ]
        assert len(told_group) == 1, told_group
        assert told_group[0].startswith("1 pod (of the gang; the others' eviction was refused)")
        # Whole again: the member whose eviction was refused still runs, beside a
        # recreated one placed back; no gang partly running; the urgent gang's second plan
        # took other gangs whole.
        placed = wait_for(
            lambda: running_by_group(cluster, namespace),
            lambda found: len(found.get(spared, ())) == 2 and no_partial_gang(found),
            describe=f"{spared} whole again and no gang partly running",
            timeout=60,
        )
        assert len(placed[spared] & before[spared]) == 1
        assert len([name for name in LOW if not placed.get(name)]) == 2
        (held,) = [
            e["message"]
            for e in events_with(cluster, namespace, "RoomHeld")
            if e["involvedObject"]["name"] == spared
        ]
        assert "below its minMember" in held
