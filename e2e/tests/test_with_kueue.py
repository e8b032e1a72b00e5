"""Kueue (v0.17.0) admits, coscheduler places whole: no PodGroup, no ``waitForPodsReady``.

Kueue runs as a process with its webhooks at loopback (``e2e.kueue``), configured as the
README's "With Kueue" says (``waitForPodsReady`` off); the Jobs' pods name
``schedulerName: coscheduler`` and carry nothing of ours. coscheduler reads Kueue's
Workloads: an admitted Job's pods are one gang, bound whole on the nodes of the flavor
Kueue assigned (its node labels and tolerations, which Kueue copies into the pods, against
its tainted nodes), and a gang Kueue admitted that does not fit waits whole, its Workload
carrying our ``GangScheduled`` condition and a ``FailedScheduling`` event saying why.

Runs only when asked (``COSCHEDULER_E2E_KUEUE=1``), as ``test_kueue.py``: Kueue is built
from its module on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from e2e import gangs
from e2e import kueue as k
from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.podwatch import PodWatch
from e2e.scheduler import StartScheduler
from e2e.tests import helpers as h
from e2e.tests import test_kueue
from e2e.tests.test_kueue import (
    JOB_NAME_LABEL,
    KUEUE_TIMEOUT_SECONDS,
    bound,
    create,
    jobs_path,
    kueue_job,
    started_kueue,
    workload_of,
)
from e2e.waiting import wait_for

pytestmark = test_kueue.pytestmark  # the same opt-in: COSCHEDULER_E2E_KUEUE=1

FLAVOR_LABEL = "e2e.coscheduler/flavor"
CONDITION = "GangScheduled"
POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_COUNT = "kueue.x-k8s.io/pod-group-total-count"


@pytest.fixture(scope="module")
def kueue(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[k.Kueue]:
    with started_kueue(cluster, request, k.KueueSettings(wait_for_pods_ready=False)) as running:
        yield running


@pytest.fixture
def team(cluster: Cluster, namespace: str, pool: str) -> Iterator[Callable[..., str]]:
    """``team(cpu=..., flavor=...)``: a ResourceFlavor, a ClusterQueue of that much cpu and a
    LocalQueue in the test's namespace; returns the LocalQueue's name. Deleted after."""
    made: list[str] = []

    def make(*, cpu: float, flavor: Json | None = None) -> str:
        flavor = flavor or k.resource_flavor(f"f-{pool}")
        name = flavor["metadata"]["name"]
        queue = f"cq-{pool}"
        for body in (
            flavor,
            k.cluster_queue(queue, cpu=cpu, memory=cpu * 4 * 2**30, flavor=name),
            k.local_queue("team", namespace, queue),
        ):
            create(cluster, body)
        made.extend([
            f"/apis/{k.API}/namespaces/{namespace}/localqueues/team",
            f"/apis/{k.API}/clusterqueues/{queue}",
            f"/apis/{k.API}/resourceflavors/{name}",
        ])  # fmt: skip
        return "team"

    yield make
    for path in made:
        cluster.api.delete(path)


def gang_condition(cluster: Cluster, namespace: str, job: str) -> Json:
    return our_condition(workload_of(cluster, namespace, job) or {})


def gang_condition_of(cluster: Cluster, namespace: str, workload: str) -> Json:
    """Our condition on the Workload of that name (a pod group's is named after it)."""
    path = f"/apis/{k.API}/namespaces/{namespace}/workloads/{workload}"
    return our_condition(cluster.api.get_or_none(path) or {})


def our_condition(item: Json) -> Json:
    """Our condition on a Workload or a Job (the same one on both), or {}."""
    for condition in (item.get("status") or {}).get("conditions") or []:
        if condition["type"] == CONDITION:
            found: Json = condition
            return found
    return {}


def workload_events(cluster: Cluster, namespace: str, job: str) -> list[Json]:
    workload = workload_of(cluster, namespace, job)
    if workload is None:
        return []
    name = workload["metadata"]["name"]
    path = f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name={name}"
    return [
        e for e in cluster.api.get(path)["items"] if e["involvedObject"].get("apiVersion") == k.API
    ]


def nodes_of(cluster: Cluster, namespace: str, job: str) -> set[str]:
    pods = w.list_pods(cluster.api, namespace, f"{JOB_NAME_LABEL}={job}")
    return {pod["spec"]["nodeName"] for pod in pods if pod["spec"].get("nodeName")}


def bound_whole(cluster: Cluster, namespace: str, describe: str) -> None:
    """Wait until Job ``train``'s 4 pods are bound and its Workload says so in our condition."""
    wait_for(
        lambda: bound(cluster, namespace, "train"),
        lambda count: count == 4,
        describe=describe,
        timeout=KUEUE_TIMEOUT_SECONDS,
    )
    wait_for(
        lambda: gang_condition(cluster, namespace, "train").get("status"),
        lambda status: status == "True",
        describe=f"the Workload's {CONDITION} condition True",
        timeout=KUEUE_TIMEOUT_SECONDS,
    )


def no_partial_gang(watch: PodWatch, namespace: str, jobs: dict[str, int]) -> None:
    watch.drain()
    partial = gangs.partial_gangs(
        watch.timeline(),
        {(namespace, job): size for job, size in jobs.items()},
        start=watch.started_at,
        group_labels=(JOB_NAME_LABEL,),
    )
    assert partial == [], "a gang Kueue admitted was partially bound"


def test_an_admitted_job_is_bound_whole_on_its_flavors_nodes_without_a_podgroup(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    kueue: k.Kueue,
    team: Callable[..., str],
) -> None:
    flavor_name = f"f-{pool}"
    taint = f"{FLAVOR_LABEL}={flavor_name}:NoSchedule"
    flavored = add_nodes(2, cpu="4", labels={FLAVOR_LABEL: flavor_name}, taints=(taint,))
    add_nodes(2, cpu="8")  # more room, but not the flavor's: never used
    start_scheduler()
    queue = team(
        cpu=8,
        flavor=k.resource_flavor(
            flavor_name,
            node_labels={FLAVOR_LABEL: flavor_name},
            node_taints=[{"key": FLAVOR_LABEL, "value": flavor_name, "effect": "NoSchedule"}],
            tolerations=[{
                "key": FLAVOR_LABEL, "operator": "Equal", "value": flavor_name,
                "effect": "NoSchedule",
            }],
        ),
    )  # fmt: skip
    watch = PodWatch(cluster.api).start()
    try:
        job = kueue_job("train", queue, scheduler="coscheduler", pool=pool, pods=4, cpu="2")
        created = cluster.api.create(jobs_path(namespace), job)
        assert created["spec"]["suspend"] is True  # Kueue's webhook holds it for admission
        bound_whole(cluster, namespace, "Kueue to admit the Job and coscheduler to bind its 4 pods")
        assert nodes_of(cluster, namespace, "train") <= set(flavored)
        podgroups = cluster.api.get(w.PODGROUPS.format(ns=namespace))["items"]
        assert podgroups == []  # none needed
        h.show(cluster, namespace, "get", "jobs,workloads.kueue.x-k8s.io,pods", "-o", "wide")
        no_partial_gang(watch, namespace, {"train": 4})
    finally:
        watch.stop()
        cluster.api.delete(f"{jobs_path(namespace)}/train?propagationPolicy=Background")


def test_an_admitted_gang_that_cannot_fit_waits_whole_and_its_workload_says_why(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    kueue: k.Kueue,
    team: Callable[..., str],
) -> None:
    add_nodes(2, cpu="4")  # room for two of the four 3-cpu pods
    start_scheduler()
    queue = team(cpu=16)  # Kueue's quota admits the Job: the nodes cannot hold it
    watch = PodWatch(cluster.api).start()
    try:
        job = kueue_job("train", queue, scheduler="coscheduler", pool=pool, pods=4, cpu="3")
        cluster.api.create(jobs_path(namespace), job)
        condition = wait_for(
            lambda: gang_condition(cluster, namespace, "train"),
            lambda found: found.get("status") == "False",
            describe=f"the Workload's {CONDITION} condition False, with the reason",
            timeout=KUEUE_TIMEOUT_SECONDS,
        )
        assert condition["reason"] == "NotEnoughResources"
        assert "4 pods" in condition["message"]
        # The same on the Job's status, beside the Job controller's conditions.
        on_job = wait_for(
            lambda: our_condition(cluster.api.get(f"{jobs_path(namespace)}/train")),
            lambda found: found.get("status") == "False",
            describe=f"the Job's {CONDITION} condition False",
            timeout=KUEUE_TIMEOUT_SECONDS,
        )
        assert on_job["message"] == condition["message"]
        events = wait_for(
            lambda: workload_events(cluster, namespace, "train"),
            lambda found: any(e["type"] == "Warning" for e in found),
            describe="a Warning event on the Workload",
            timeout=KUEUE_TIMEOUT_SECONDS,
        )
        print("\n".join(f"{e['type']} {e['reason']}: {e['message']}" for e in events))
        # Kueue's own conditions stand beside ours.
        workload = workload_of(cluster, namespace, "train") or {}
        held = {c["type"] for c in workload["status"]["conditions"]}
        assert {"QuotaReserved", "Admitted", CONDITION} <= held
        assert bound(cluster, namespace, "train") == 0
        h.show(cluster, namespace, "describe", "workloads.kueue.x-k8s.io")

        add_nodes(2, cpu="4")  # now it fits: bound whole
        bound_whole(cluster, namespace, "the 4 pods bound once two more nodes came")
        no_partial_gang(watch, namespace, {"train": 4})
    finally:
        watch.stop()
        cluster.api.delete(f"{jobs_path(namespace)}/train?propagationPolicy=Background")


def test_plain_pods_of_a_kueue_pod_group_are_bound_whole_once_admitted(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    kueue: k.Kueue,
    team: Callable[..., str],
) -> None:
    add_nodes(1, cpu="4")
    start_scheduler()
    queue = team(cpu=4)
    watch = PodWatch(cluster.api).start()
    for i in range(3):
        body = w.pod(f"member-{i}", pool=pool, cpu="1")
        body["metadata"]["labels"].update({k.KUEUE_QUEUE_LABEL: queue, POD_GROUP_LABEL: "trio"})
        body["metadata"]["annotations"] = {POD_GROUP_COUNT: "3", w.COMPLETE_AFTER: "1h"}
        created = cluster.api.create(f"/api/v1/namespaces/{namespace}/pods", body)
        # Kueue's webhook gates each pod until the group is admitted.
        assert created["spec"].get("schedulingGates")
    wait_for(
        lambda: w.list_pods(cluster.api, namespace, f"{POD_GROUP_LABEL}=trio"),
        lambda pods: len(pods) == 3 and all(p["spec"].get("nodeName") for p in pods),
        describe="Kueue to admit the pod group and coscheduler to bind its 3 pods",
        timeout=KUEUE_TIMEOUT_SECONDS,
    )
    wait_for(
        lambda: gang_condition_of(cluster, namespace, "trio").get("status"),
        lambda status: status == "True",
        describe=f"the Workload trio's {CONDITION} condition True",
        timeout=KUEUE_TIMEOUT_SECONDS,
    )
    watch.drain()
    partial = gangs.partial_gangs(
        watch.timeline(),
        {(namespace, "trio"): 3},
        start=watch.started_at,
        group_labels=(POD_GROUP_LABEL,),
    )
    watch.stop()
    assert partial == [], "a Kueue pod group was partially bound"
