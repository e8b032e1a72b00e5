"""coscheduler on a real control plane: gangs placed whole or not at all.

Each test gets its own namespace, its own pool of KWOK nodes (a label its
pods select) and its own ``coscheduler run`` process watching that namespace,
so tests never compete for capacity or for the scheduler's attention.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests.helpers import condition, on_nodes, pods, wait_bound, wait_group
from e2e.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.version_sensitive]

# -- reading the cluster ------------------------------------------------------------------------


def phases(items: list[Json]) -> list[str]:
    return sorted(str(p.get("status", {}).get("phase")) for p in items)


def events(cluster: Cluster, namespace: str, name: str) -> list[Json]:
    path = f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name={name}"
    items: list[Json] = cluster.api.get(path).get("items", [])
    return items


def hold(
    cluster: Cluster, namespace: str, seconds: float, check: Callable[[list[Json]], bool], what: str
) -> None:
    """Assert that ``check`` holds for every look during ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        items = pods(cluster, namespace)
        seen = [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in items]
        assert check(items), f"{what}; pods and nodes: {seen}"
        time.sleep(0.5)


def node_usage_ok(cluster: Cluster, pool: str, cpu_per_node: int) -> bool:
    """No node of the pool holds more cpu than it has."""
    used: dict[str, int] = {}
    for pod in cluster.api.get("/api/v1/pods").get("items", []):
        node = pod["spec"].get("nodeName")
        if not node or pod["status"].get("phase") in ("Succeeded", "Failed"):
            continue
        if pod["spec"].get("nodeSelector", {}).get(w.POOL_LABEL) != pool:
            continue
        cpu = pod["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        used[node] = used.get(node, 0) + int(cpu)
    return all(total <= cpu_per_node for total in used.values())


# -- the scenarios ------------------------------------------------------------------------------


def test_seed_gang_runs_when_four_fit(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="8")  # room for 2 pods of 3 cpu per node: 4 in all
    start_scheduler()
    w.create_podgroup(cluster.api, namespace, "seed", 4)
    w.create_replicaset(
        cluster.api, namespace, "seed", replicas=6, pool=pool, cpu="3", group="seed"
    )

    wait_for(
        lambda: pods(cluster, namespace),
        lambda items: phases(items).count("Running") == 4 and len(items) == 6,
        describe="4 of the 6 seed pods Running",
    )
    hold(
        cluster, namespace, 3, lambda items: len(on_nodes(items)) == 4, "exactly 4 pods stay bound"
    )
    group = wait_group(
        cluster,
        namespace,
        "seed",
        lambda g: (
            g.get("status", {}).get("phase") == "Running"
            and g["status"].get("pending") == 2
            and g["status"].get("running") == 4
        ),
        "Running with 4 running and 2 pending",
    )
    assert group["status"]["scheduled"] == 4
    assert condition(group, "Scheduled")["status"] == "True"
    assert group["status"]["allocated"]["cpu"] == "12"
    # Events go out through their own queue, after the status write (and the Bindings)
    # they tell of: the first look at the Running status may come before them.
    wait_for(
        lambda: {e["reason"] for e in events(cluster, namespace, "seed")},
        lambda reasons: "Running" in reasons,
        describe="a Running event on PodGroup seed",
    )
    scheduled = wait_for(
        lambda: [
            e
            for p in on_nodes(pods(cluster, namespace))
            for e in events(cluster, namespace, p["metadata"]["name"])
            if e["reason"] == "Scheduled"
        ],
        lambda found: len(found) == 4,
        describe="a Scheduled event on each of the 4 bound pods",
    )
    assert all(e["message"].startswith(f"Successfully assigned {namespace}/") for e in scheduled)


def test_seed_gang_waits_whole_when_only_three_fit(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="8")  # 2 pods of 3 cpu
    add_nodes(1, cpu="4")  # 1 pod of 3 cpu: room for 3 in all
    start_scheduler()
    w.create_podgroup(cluster.api, namespace, "seed", 4)
    w.create_replicaset(
        cluster.api, namespace, "seed", replicas=6, pool=pool, cpu="3", group="seed"
    )

    group = wait_group(
        cluster,
        namespace,
        "seed",
        lambda g: condition(g, "Unschedulable").get("reason") == "NotEnoughResources",
        "Unschedulable because of resources",
    )
    message = condition(group, "Unschedulable")["message"]
    assert f"pods of group {namespace}/seed" in message
    assert "Insufficient cpu" in message
    hold(cluster, namespace, 4, lambda items: not on_nodes(items), "no pod is bound")
    # The condition can first appear while the ReplicaSet is still creating pods, so the
    # group read then may count 5: the status is read again for all 6.
    group = wait_group(
        cluster,
        namespace,
        "seed",
        lambda g: (g.get("status") or {}).get("pending") == 6,
        "all 6 members counted pending",
    )
    assert group["status"]["phase"] == "Pending"

    pod_name = pods(cluster, namespace)[0]["metadata"]["name"]
    # A pod's first PodScheduled=False can be the passing NotEnoughMembers, written while
    # the ReplicaSet was still creating the gang's members: wait for the cause under test.
    pod = wait_for(
        lambda: cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/{pod_name}"),
        lambda p: any(
            c["type"] == "PodScheduled"
            and c["status"] == "False"
            and c.get("reason") == "Unschedulable"
            for c in p["status"].get("conditions", [])
        ),
        describe="PodScheduled=False, Unschedulable, on a waiting pod",
    )
    (scheduled,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert "Insufficient cpu" in scheduled["message"]
    wait_for(
        lambda: events(cluster, namespace, pod_name),
        lambda items: any(e["reason"] == "FailedScheduling" for e in items),
        describe="a FailedScheduling event on a waiting pod",
    )


def test_two_gangs_of_sixty_percent_never_both_partial(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(5, cpu="4")  # 20 cpu; each gang needs 3 x 4 = 12 (60 %)
    for name in ("first", "second"):
        w.create_podgroup(cluster.api, namespace, name, 3)
        w.create_job(
            cluster.api,
            namespace,
            name,
            parallelism=3,
            pool=pool,
            cpu="4",
            group=name,
            run_seconds=6,
        )
    start_scheduler()

    def one_whole_other_waiting(items: list[Json]) -> bool:
        by_group: dict[str, int] = {}
        for p in on_nodes(items):
            if p["status"].get("phase") in ("Succeeded", "Failed"):
                continue
            group = p["metadata"]["labels"][w.GROUP_LABEL]
            by_group[group] = by_group.get(group, 0) + 1
        return all(count == 3 for count in by_group.values())

    wait_bound(cluster, namespace, 3, "one gang bound", at_least=True)
    hold(cluster, namespace, 3, one_whole_other_waiting, "every gang is whole or not started")
    for name in ("first", "second"):
        wait_group(
            cluster,
            namespace,
            name,
            lambda g: g.get("status", {}).get("phase") == "Finished",
            "Finished (both gangs run in turn)",
            timeout=90,
        )
    assert node_usage_ok(cluster, pool, 4)


def test_gang_waits_for_a_node_then_runs(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="4")
    start_scheduler()
    w.create_podgroup(cluster.api, namespace, "grow", 3)
    w.create_replicaset(
        cluster.api, namespace, "grow", replicas=3, pool=pool, cpu="4", group="grow"
    )
    wait_group(
        cluster,
        namespace,
        "grow",
        lambda g: condition(g, "Unschedulable").get("status") == "True",
        "Unschedulable",
    )
    hold(cluster, namespace, 2, lambda items: not on_nodes(items), "nothing bound before the node")
    add_nodes(1, cpu="4")
    wait_group(
        cluster,
        namespace,
        "grow",
        lambda g: g.get("status", {}).get("phase") == "Running",
        "Running",
    )


def test_higher_priority_group_goes_first(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="8")  # room for one gang of 2 x 4 cpu
    w.create_podgroup(cluster.api, namespace, "low", 2, priority=1)
    w.create_replicaset(cluster.api, namespace, "low", replicas=2, pool=pool, cpu="4", group="low")
    time.sleep(1)  # the low group is older: only priority can put the high one first
    w.create_podgroup(cluster.api, namespace, "high", 2, priority=100)
    w.create_replicaset(
        cluster.api, namespace, "high", replicas=2, pool=pool, cpu="4", group="high"
    )
    wait_for(lambda: pods(cluster, namespace), lambda items: len(items) == 4, describe="4 pods")
    start_scheduler()
    wait_group(
        cluster,
        namespace,
        "high",
        lambda g: g.get("status", {}).get("phase") == "Running",
        "high Running",
    )
    low = wait_group(
        cluster,
        namespace,
        "low",
        lambda g: condition(g, "Unschedulable").get("status") == "True",
        "low Unschedulable",
    )
    assert low["status"]["scheduled"] == 0


def test_roles_must_all_reach_their_minimum(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="8")
    start_scheduler()
    w.create_podgroup(
        cluster.api,
        namespace,
        "mpi",
        3,
        roles=[{"name": "launcher", "minMember": 1}, {"name": "worker", "minMember": 2}],
    )
    w.create_replicaset(
        cluster.api,
        namespace,
        "workers",
        replicas=3,
        pool=pool,
        cpu="1",
        group="mpi",
        role="worker",
    )
    group = wait_group(
        cluster,
        namespace,
        "mpi",
        lambda g: condition(g, "Unschedulable").get("reason") == "NotEnoughMembers",
        "waiting for its launcher",
    )
    assert "launcher" in condition(group, "Unschedulable")["message"]
    hold(
        cluster,
        namespace,
        2,
        lambda items: not on_nodes(items),
        "no worker bound without a launcher",
    )
    w.create_pod(
        cluster.api, namespace, "launcher", pool=pool, cpu="1", group="mpi", role="launcher"
    )
    wait_bound(cluster, namespace, 4, "launcher and 3 workers bound")


def test_min_resources_above_free_capacity_is_refused(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="8")
    start_scheduler()
    w.create_podgroup(cluster.api, namespace, "big", 1, minResources={"cpu": "100000"})
    w.create_pod(cluster.api, namespace, "big-0", pool=pool, cpu="1", group="big")
    group = wait_group(
        cluster,
        namespace,
        "big",
        lambda g: condition(g, "Unschedulable").get("reason") == "MinResourcesUnavailable",
        "refused for minResources",
    )
    assert "minResources cpu=100000" in condition(group, "Unschedulable")["message"]
    hold(cluster, namespace, 2, lambda items: not on_nodes(items), "nothing bound")


def test_timeout_marks_the_group_and_it_still_runs_later(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="4")
    start_scheduler()
    w.create_podgroup(cluster.api, namespace, "slow", 2, scheduleTimeoutSeconds=3)
    w.create_replicaset(
        cluster.api, namespace, "slow", replicas=2, pool=pool, cpu="4", group="slow"
    )
    group = wait_group(
        cluster,
        namespace,
        "slow",
        lambda g: condition(g, "Unschedulable").get("reason") == "Timeout",
        "timed out",
    )
    assert "3" in condition(group, "Unschedulable")["message"]
    add_nodes(1, cpu="4")
    wait_group(
        cluster,
        namespace,
        "slow",
        lambda g: g.get("status", {}).get("phase") == "Running",
        "Running after the node",
    )


def test_lone_pods_and_pods_of_other_schedulers(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    (node,) = add_nodes(1, cpu="4")
    # A pod of another scheduler, bound by hand: coscheduler must leave it and count it.
    w.create_pod(cluster.api, namespace, "foreign", pool=pool, cpu="3", scheduler="someone-else")
    cluster.api.create(
        f"/api/v1/namespaces/{namespace}/pods/foreign/binding",
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "foreign"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        },
    )
    w.create_pod(
        cluster.api, namespace, "unscheduled-foreign", pool=pool, cpu="1", scheduler="someone-else"
    )
    start_scheduler()
    w.create_pod(cluster.api, namespace, "lone-small", pool=pool, cpu="1")
    w.create_pod(cluster.api, namespace, "lone-big", pool=pool, cpu="2")
    wait_for(
        lambda: cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/lone-small"),
        lambda p: p["spec"].get("nodeName") == node,
        describe="the lone small pod bound",
    )
    hold(
        cluster,
        namespace,
        3,
        lambda items: all(
            not p["spec"].get("nodeName")
            for p in items
            if p["metadata"]["name"] in ("lone-big", "unscheduled-foreign")
        ),
        "the big pod does not fit beside the foreign one; the foreign pending pod is left",
    )


@pytest.mark.partial_gangs(
    reason="killed between two of a gang's Bindings (one a second), the next start "
    "completes it: partial by design in between",
    seconds=60,
)
def test_crash_between_bindings_is_completed_by_the_next_start(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(4, cpu="8")
    w.create_podgroup(cluster.api, namespace, "crash", 8)
    w.create_replicaset(
        cluster.api, namespace, "crash", replicas=8, pool=pool, cpu="2", group="crash"
    )
    wait_for(lambda: pods(cluster, namespace), lambda items: len(items) == 8, describe="8 pods")
    # One request a second: the gang's bindings trickle out, so a kill lands between two.
    slow = start_scheduler("--qps", "1", "--burst", "1")
    wait_for(
        lambda: pods(cluster, namespace),
        lambda items: len(on_nodes(items)) >= 2,
        describe="some members bound",
        timeout=30,
    )
    slow.kill()
    partial = len(on_nodes(pods(cluster, namespace)))
    assert 0 < partial < 8, f"the kill should land mid-gang, {partial} bound"
    start_scheduler()
    wait_bound(cluster, namespace, 8, "the whole gang bound after the restart")
    assert node_usage_ok(cluster, pool, 8)
    assert len({p["metadata"]["uid"] for p in pods(cluster, namespace)}) == 8


def _short_lease(namespace: str) -> list[str]:
    """Leader-election flags for a Lease in the test's namespace that expires in 4 s."""
    return [
        "--lease-namespace",
        namespace,
        "--lease-duration-seconds",
        "4",
        "--renew-deadline-seconds",
        "3",
        "--retry-period-seconds",
        "1",
    ]


def test_standby_replica_takes_over_when_the_leader_dies(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="8")
    lease = _short_lease(namespace)
    first = start_scheduler(*lease, "--identity", "first", leader_elect=True)
    second = start_scheduler(*lease, "--identity", "second", leader_elect=True, wait_ready=False)
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/coscheduler"
    held = cluster.api.get(lease_path)["spec"]
    assert held["holderIdentity"] == "first"
    w.create_podgroup(cluster.api, namespace, "before", 2)
    w.create_replicaset(
        cluster.api, namespace, "before", replicas=2, pool=pool, cpu="1", group="before"
    )
    wait_bound(cluster, namespace, 2, "the leader binds")
    assert '"event": "scheduling"' not in second.log()

    first.kill()
    # Liveness, not speed: the 4 s Lease expires unrenewed and the standby takes it
    # (the takeover's time is the start-up bench's `after_leading`, never asserted).
    second.wait_ready(timeout=30)
    taken = cluster.api.get(lease_path)["spec"]
    assert taken["holderIdentity"] == "second"
    assert taken.get("leaseTransitions", 0) == held.get("leaseTransitions", 0) + 1
    w.create_podgroup(cluster.api, namespace, "after", 2)
    w.create_replicaset(
        cluster.api, namespace, "after", replicas=2, pool=pool, cpu="1", group="after"
    )
    wait_bound(cluster, namespace, 4, "the new leader binds")


def _log_events(process_log: str) -> list[Json]:
    """The JSON lines of a scheduler's log, in order."""
    return [json.loads(line) for line in process_log.splitlines() if line.startswith("{")]


def test_a_warm_standby_binds_a_waiting_gang_whole_after_the_leader_is_killed(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    """The standby has listed and watches before it leads, so it decides at once."""
    add_nodes(2, cpu="8")
    lease = _short_lease(namespace)
    leader = start_scheduler(*lease, "--identity", "leader", leader_elect=True)
    standby = start_scheduler(*lease, "--identity", "standby", leader_elect=True, wait_ready=False)
    wait_for(
        lambda: '"event": "cluster listed"' in standby.log(),
        describe="the standby lists the cluster while it waits for the Lease",
    )
    assert '"event": "scheduling"' not in standby.log()

    leader.kill()  # SIGKILL to the process this test started: the Lease is not released
    w.create_podgroup(cluster.api, namespace, "waiting", 4)
    w.create_replicaset(
        cluster.api, namespace, "waiting", replicas=4, pool=pool, cpu="2", group="waiting"
    )
    wait_bound(cluster, namespace, 4, "the standby binds the whole gang")
    standby.wait_ready(timeout=30)

    events = [entry["event"] for entry in _log_events(standby.log())]
    # Warm: listed once, before leading, and never listed again after taking over.
    assert events.count("cluster listed") == 1
    assert events.index("cluster listed") < events.index("leadership changed")
    [started] = [e for e in _log_events(standby.log()) if e["event"] == "started"]
    assert started["listed"] <= started["leading"] <= started["first_binding"]
    print(f"takeover to first Binding: {started['after_leading']:.3f} s")  # the figure, no assert


def test_describe_podgroup_tells_the_story(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="4")
    process = start_scheduler()
    w.create_podgroup(cluster.api, namespace, "story", 2)
    w.create_replicaset(
        cluster.api, namespace, "story", replicas=2, pool=pool, cpu="4", group="story"
    )
    wait_group(
        cluster,
        namespace,
        "story",
        lambda g: condition(g, "Unschedulable").get("reason") == "NotEnoughResources",
        "waiting",
    )
    add_nodes(1, cpu="4")
    wait_group(
        cluster,
        namespace,
        "story",
        lambda g: g.get("status", {}).get("phase") == "Running",
        "Running",
    )
    text = wait_for(
        lambda: cluster.kubectl("describe", "pg", "story", "-n", namespace).stdout,
        # The newest reason replaces an older one on the event within 2 s.
        lambda out: "FailedScheduling" in out and "Running" in out and "Insufficient cpu" in out,
        describe="describe shows the events",
    )
    for expected in (
        "Phase:",
        "Running",
        "Min Member:",
        "Scheduled:",
        "Conditions:",
        "Unschedulable",
        "MinMemberScheduled",
        "Insufficient cpu",
    ):
        assert expected in text, f"{expected!r} missing from:\n{text}"
    metrics = process.metrics()
    assert "coscheduler_pods_bound_total 2.0" in metrics
    assert 'coscheduler_scheduling_attempts_total{result="unschedulable"}' in metrics


def test_sigterm_stops_cleanly_and_releases_the_lease(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    process = start_scheduler(
        "--lease-namespace", namespace, "--identity", "leaving", leader_elect=True
    )
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/coscheduler"
    assert cluster.api.get(lease_path)["spec"]["holderIdentity"] == "leaving"
    # A clean exit within 10 s (stop() kills and answers None otherwise).
    assert process.stop(timeout=10) == 0, process.log()[-3000:]
    # Released, so that a standby takes over at once instead of after the lease duration.
    assert cluster.api.get(lease_path)["spec"].get("holderIdentity", "") == ""
