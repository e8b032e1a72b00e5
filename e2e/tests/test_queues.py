"""Queues on the real control plane: shares, caps, borrowing, state, tenants, bad input.

Queues are cluster-scoped: each test names its own after its namespace and
deletes them when it ends, so tests never see each other's queues.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from e2e import workloads as w
from e2e.api import ApiError, Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests.helpers import bound, condition, light_share_median, podgroup
from e2e.waiting import wait_for

pytestmark = pytest.mark.e2e

QUEUES = w.QUEUES
MERGE = "application/merge-patch+json"

MakeQueue = Callable[..., str]


@pytest.fixture
def make_queue(cluster: Cluster, namespace: str) -> Iterator[MakeQueue]:
    """``make_queue("a", weight=3, nominal={"cpu": "8"})``: a Queue named ``<namespace>-a``."""
    made: list[str] = []

    def make(suffix: str, *, allow_namespace: bool = True, **spec: Any) -> str:
        name = f"{namespace}-{suffix}"
        if allow_namespace:
            spec.setdefault("namespaces", [namespace])
        w.create_queue(cluster.api, name, **spec)
        made.append(name)
        return name

    yield make
    for name in made:
        cluster.api.delete(f"{QUEUES}/{name}")


def patch_queue(cluster: Cluster, name: str, spec: Json) -> None:
    cluster.api.request("PATCH", f"{QUEUES}/{name}", {"spec": spec}, content_type=MERGE)


def group_condition(cluster: Cluster, namespace: str, name: str) -> Json:
    return condition(podgroup(cluster, namespace, name), "Unschedulable")


def wait_group_waits(cluster: Cluster, namespace: str, name: str, reason: str) -> str:
    """Wait for the PodGroup's Unschedulable=True condition with ``reason``; its message."""
    found = wait_for(
        lambda: group_condition(cluster, namespace, name),
        lambda c: c.get("status") == "True" and c.get("reason") == reason,
        describe=f"PodGroup {namespace}/{name} Unschedulable with reason {reason}",
    )
    return str(found["message"])


def bound_pods(cluster: Cluster, namespace: str, group: str) -> list[Json]:
    """The group's pods bound to a node and not finished."""
    return [
        p
        for p in bound(cluster, namespace, f"{w.GROUP_LABEL}={group}")
        if p["status"].get("phase") not in ("Succeeded", "Failed")
    ]


def wait_running(cluster: Cluster, namespace: str, group: str, count: int) -> None:
    """Wait until at least ``count`` pods of the group are bound and not finished."""
    wait_for(
        lambda: len(bound_pods(cluster, namespace, group)),
        lambda n: n >= count,
        describe=f"{count} pods of {namespace}/{group} bound",
    )


def gang(
    cluster: Cluster, namespace: str, pool: str, name: str, size: int, queue: str, cpu: str = "1"
) -> None:
    w.create_podgroup(cluster.api, namespace, name, size, queue=queue)
    for index in range(size):
        w.create_pod(cluster.api, namespace, f"{name}-{index}", pool=pool, cpu=cpu, group=name)


def queue_status(cluster: Cluster, name: str) -> Json:
    return dict(cluster.api.get(f"{QUEUES}/{name}").get("status") or {})


def test_weights_one_to_three_share_a_saturated_cluster_one_to_three(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    make_queue: MakeQueue,
) -> None:
    add_nodes(8, cpu="4")
    light = make_queue("light", weight=1)
    heavy = make_queue("heavy", weight=3)
    # Backlogs of Jobs, each a gang of two 1-cpu pods running 12 s, three times as many
    # for the heavy queue: both stay backlogged while the cluster is full, for about
    # 30 s (long enough for 10 samples on a loaded machine, where a list takes a second).
    jobs = {light: 10, heavy: 30}
    for queue, count in jobs.items():
        for index in range(count):
            name = f"{queue.rsplit('-', 1)[1]}-{index}"
            w.create_podgroup(cluster.api, namespace, name, 2, queue=queue)
            w.create_job(
                cluster.api,
                namespace,
                name,
                parallelism=2,
                pool=pool,
                cpu="1",
                group=name,
                run_seconds=12,
            )
    # The Job controller makes the 80 pods over seconds: sampled before they all exist,
    # a queue's backlog can look empty (ending the sampling) or short (biasing the share).
    pods = 2 * sum(jobs.values())
    wait_for(
        lambda: w.list_pods(cluster.api, namespace),
        lambda items: len(items) == pods,
        describe=f"the Jobs' {pods} pods",
    )
    start_scheduler()
    median = light_share_median(cluster, namespace, "light", saturated=28)  # 32 cpu, gangs of 2
    assert abs(median - 0.25) <= 0.07, f"light queue's share median {median:.2f}"


def test_a_queue_at_max_waits_while_another_borrows_idle_capacity(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    make_queue: MakeQueue,
) -> None:
    add_nodes(1, cpu="8")
    capped = make_queue("capped", max={"cpu": "2"})
    free = make_queue("free")
    start_scheduler()
    gang(cluster, namespace, pool, "first", 2, capped)
    wait_running(cluster, namespace, "first", 2)
    gang(cluster, namespace, pool, "second", 2, capped)
    message = wait_group_waits(cluster, namespace, "second", "QueueMaxReached")
    assert message == f"queue {capped}: cpu 2 of max 2 in use, this group needs 2 more"
    # The pods say it too, and not Unschedulable: more nodes would not help.
    pod = cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/second-0")
    scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["reason"] == "QueueMaxReached"
    gang(cluster, namespace, pool, "borrower", 4, free)
    wait_running(cluster, namespace, "borrower", 4)
    status = wait_for(
        lambda: queue_status(cluster, capped),
        lambda s: s.get("allocated", {}).get("cpu") == "2" and s.get("pendingGroups") == 1,
        describe=f"queue {capped}'s status: cpu 2 allocated, one group pending",
    )
    assert status["max"] == {"cpu": "2"}
    assert status["dominantShare"] == "25%"  # 2 of the pool's 8 cpu (no nominal)
    active = status["conditions"][0]
    assert (active["type"], active["status"], active["reason"]) == ("Active", "True", "Open")
    wait_for(
        lambda: queue_status(cluster, free),
        lambda s: s.get("allocated", {}).get("cpu") == "4" and s.get("borrowed", {}).get("cpu"),
        describe=f"queue {free}'s status: cpu 4 allocated, all of it borrowed",
    )
    # Its own group finishing lets the waiting one in.
    for index in range(2):
        cluster.api.delete(f"/api/v1/namespaces/{namespace}/pods/first-{index}")
    wait_running(cluster, namespace, "second", 2)


def test_a_closed_queue_admits_nothing_new_until_opened(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    make_queue: MakeQueue,
) -> None:
    add_nodes(1, cpu="8")
    queue = make_queue("team-b")
    start_scheduler()
    gang(cluster, namespace, pool, "running", 2, queue)
    wait_running(cluster, namespace, "running", 2)
    patch_queue(cluster, queue, {"state": "Closed"})
    # The Queue and the pods come through different watches: a gang made before
    # coscheduler has seen the Queue closed is, to it, a gang of an open queue.
    # Its status saying Closed shows it has.
    wait_for(
        lambda: queue_status(cluster, queue).get("conditions", [{}])[0],
        lambda c: c.get("status") == "False" and c.get("reason") == "QueueClosed",
        describe=f"queue {queue} Active=False, QueueClosed",
    )
    gang(cluster, namespace, pool, "late", 2, queue)
    message = wait_group_waits(cluster, namespace, "late", "QueueClosed")
    assert message == f"queue {queue} is Closed: it admits no new group"
    assert len(bound_pods(cluster, namespace, "running")) == 2  # running ones keep running
    events = f"/api/v1/namespaces/default/events?fieldSelector=involvedObject.name={queue}"
    wait_for(
        lambda: cluster.api.get(events).get("items", []),
        lambda items: any(e["reason"] == "QueueClosed" for e in items),
        describe=f"a QueueClosed event on queue {queue}",
    )
    patch_queue(cluster, queue, {"state": "Open"})
    wait_running(cluster, namespace, "late", 2)


def test_a_namespace_the_queue_does_not_allow_cannot_spend_its_quota(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    make_queue: MakeQueue,
) -> None:
    add_nodes(1, cpu="8")
    queue = make_queue("team-a", allow_namespace=False, namespaces=["team-a-only"])
    start_scheduler()
    gang(cluster, namespace, pool, "sneaky", 2, queue)
    message = wait_group_waits(cluster, namespace, "sneaky", "QueueNotAllowed")
    assert message.startswith(f"namespace {namespace} may not use queue {queue}")
    time.sleep(2)
    assert bound_pods(cluster, namespace, "sneaky") == []
    assert "allocated" not in queue_status(cluster, queue)
    # Allowed by a label selector on the namespace instead.
    cluster.api.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}",
        {"metadata": {"labels": {"team": "a"}}},
        content_type=MERGE,
    )
    patch_queue(cluster, queue, {"namespaceSelector": {"matchLabels": {"team": "a"}}})
    wait_running(cluster, namespace, "sneaky", 2)


def test_without_queue_objects_the_default_queue_just_works(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="8")
    start_scheduler()
    w.create_queue(cluster.api, "default", weight=2)
    gang(cluster, namespace, pool, "before", 2, "default")
    wait_running(cluster, namespace, "before", 2)
    cluster.api.delete(f"{QUEUES}/default")
    wait_for(
        lambda: cluster.api.get_or_none(f"{QUEUES}/default"),
        lambda queue: queue is None,
        describe="the default Queue object gone",
    )
    gang(cluster, namespace, pool, "after", 2, "default")
    wait_running(cluster, namespace, "after", 2)
    # A group that names no queue at all is in default too.
    w.create_podgroup(cluster.api, namespace, "plain", 1)
    w.create_pod(cluster.api, namespace, "plain-0", pool=pool, cpu="1", group="plain")
    wait_running(cluster, namespace, "plain", 1)


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ({"nominal": {"cpu": "1.5.5"}}, "must be a non-negative Kubernetes quantity"),
        ({"max": {"memory": "-1Gi"}}, "must be a non-negative Kubernetes quantity"),
        (
            {"nominal": {"cpu": "8"}, "max": {"cpu": "4"}},
            "spec.max is below spec.nominal for a resource",
        ),
        ({"weight": 0}, "spec.weight"),
        ({"state": "Paused"}, 'Unsupported value: "Paused"'),
        ({"parent": "self-parent"}, "a queue cannot be its own parent"),
    ],
)
def test_invalid_queues_are_refused_with_a_message_that_says_why(
    cluster: Cluster, podgroup_crd: str, spec: Json, complaint: str
) -> None:
    body = w.queue("self-parent", **spec)
    with pytest.raises(ApiError) as refused:
        cluster.api.create(QUEUES, body)
    assert refused.value.status == 422
    assert complaint in str(refused.value)


def test_a_cycle_of_parents_is_reported_and_never_stops_the_loop(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    make_queue: MakeQueue,
) -> None:
    add_nodes(1, cpu="8")
    first = make_queue("x", parent=f"{namespace}-y")
    make_queue("y", parent=first)
    healthy = make_queue("ok")
    start_scheduler()
    gang(cluster, namespace, pool, "stuck", 1, first)
    message = wait_group_waits(cluster, namespace, "stuck", "QueueInvalid")
    assert (
        message == f"queue {first}: its parents form a cycle ({first} -> {namespace}-y -> {first})"
    )
    wait_for(
        lambda: queue_status(cluster, first).get("conditions", [{}])[0],
        lambda c: c.get("status") == "False" and c.get("reason") == "QueueInvalid",
        describe=f"queue {first} Active=False, QueueInvalid",
    )
    gang(cluster, namespace, pool, "fine", 2, healthy)
    wait_running(cluster, namespace, "fine", 2)
