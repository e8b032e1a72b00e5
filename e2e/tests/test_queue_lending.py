"""Queues a platform team runs (issue #31) on the real control plane: a lending limit holds
a borrower back, and recent usage (decayed) orders two tenants."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from e2e import workloads as w
from e2e.api import ApiError, Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests.helpers import podgroup
from e2e.tests.test_queues import (
    MakeQueue,
    bound_pods,
    gang,
    make_queue,
    queue_status,
    wait_group_waits,
    wait_running,
)
from e2e.waiting import wait_for

pytestmark = pytest.mark.e2e

__all__ = ["make_queue"]  # the fixture, used here by name


def test_a_lending_limit_holds_a_borrower_back_and_keeps_the_rest_for_the_lender(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    make_queue: MakeQueue,
) -> None:
    add_nodes(1, cpu="8")
    # The lender is entitled to the whole node and lends 2 cpu of it; the borrower has none.
    lender = make_queue("lender", nominal={"cpu": "8"}, lendingLimit={"cpu": "2"})
    borrower = make_queue("borrower")
    start_scheduler()
    gang(cluster, namespace, pool, "wide", 4, borrower)
    message = wait_group_waits(cluster, namespace, "wide", "QueueCannotBorrow")
    assert message == (
        f"queue {borrower} needs cpu 4 beyond its nominal quota; of cpu 8 idle, cpu 6 is held "
        "for queues under their nominal with groups waiting, or kept by their lendingLimit: "
        f"{lender} (cpu 6)"
    )
    gang(cluster, namespace, pool, "narrow", 2, borrower)
    wait_running(cluster, namespace, "narrow", 2)
    # What the lender keeps is free for its own gang, though nothing of it ran before.
    gang(cluster, namespace, pool, "own", 6, lender)
    wait_running(cluster, namespace, "own", 6)
    assert bound_pods(cluster, namespace, "wide") == []
    wait_for(
        lambda: queue_status(cluster, lender),
        lambda s: (
            s.get("lendingLimit") == {"cpu": "2"} and s.get("allocated", {}).get("cpu") == "6"
        ),
        describe=f"queue {lender}'s status: lendingLimit cpu 2, cpu 6 allocated",
    )


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ({"nominal": {"cpu": "8"}, "lendingLimit": {"cpu": "9"}}, "spec.lendingLimit is above"),
        ({"nominal": {"cpu": "8"}, "lendingLimit": {"nvidia.com/gpu": 1}}, "nothing to lend"),
        ({"lendingLimit": {"cpu": "-1"}}, "must be a non-negative Kubernetes quantity"),
    ],
)
def test_a_lending_limit_above_the_nominal_is_refused_with_a_message_that_says_why(
    cluster: Cluster, podgroup_crd: str, spec: Json, complaint: str
) -> None:
    with pytest.raises(ApiError) as refused:
        cluster.api.create(w.QUEUES, w.queue("lends-too-much", **spec))
    assert refused.value.status == 422
    assert complaint in str(refused.value)


def test_with_a_usage_half_life_the_tenant_that_ran_lately_goes_second(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    make_queue: MakeQueue,
) -> None:
    add_nodes(1, cpu="4")
    # Named so that a tie goes to the busy tenant: only its recent usage can put it second.
    busy = make_queue("a-busy")
    idle = make_queue("b-idle")
    start_scheduler("--usage-half-life-seconds=600")
    gang(cluster, namespace, pool, "earlier", 4, busy)
    wait_running(cluster, namespace, "earlier", 4)
    # Both wait for the whole node; the busy tenant's gang is the older one.
    gang(cluster, namespace, pool, "busy-next", 4, busy)
    wait_group_waits(cluster, namespace, "busy-next", "NotEnoughResources")
    gang(cluster, namespace, pool, "idle-next", 4, idle)
    wait_group_waits(cluster, namespace, "idle-next", "NotEnoughResources")
    status = wait_for(
        lambda: queue_status(cluster, busy),
        lambda s: bool(s.get("recentUsage", {}).get("cpu")),
        describe=f"queue {busy}'s status: some recent cpu usage",
    )
    assert "recentUsage" not in queue_status(cluster, idle)
    assert status["allocated"]["cpu"] == "4"
    for index in range(4):
        cluster.api.delete(f"/api/v1/namespaces/{namespace}/pods/earlier-{index}")
    wait_running(cluster, namespace, "idle-next", 4)
    assert bound_pods(cluster, namespace, "busy-next") == []
    assert podgroup(cluster, namespace, "busy-next")["status"].get("phase") != "Running"


def test_lent_quota_comes_back_by_reclaim_and_kept_room_is_never_taken(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    make_queue: MakeQueue,
) -> None:
    add_nodes(1, cpu="8")
    keeper = make_queue("keeper", nominal={"cpu": "4"}, lendingLimit={"cpu": "0"})
    lender = make_queue("lender", nominal={"cpu": "4"}, lendingLimit={"cpu": "4"})
    borrower = make_queue("borrower")
    start_scheduler()
    # The borrower, of higher priority, runs on what the lender lends: 4 of the 8 cpu.
    w.create_podgroup(cluster.api, namespace, "borrowed", 4, priority=50, queue=borrower)
    w.create_replicaset(
        cluster.api, namespace, "borrowed", replicas=4, pool=pool, cpu="1", group="borrowed"
    )
    wait_running(cluster, namespace, "borrowed", 4)
    before = {p["metadata"]["name"] for p in bound_pods(cluster, namespace, "borrowed")}
    # The lender wants its nominal back: the borrower's gang is evicted whole (a reclaim,
    # whatever the priority), never the keeper's idle 4 cpu taken instead.
    w.create_podgroup(cluster.api, namespace, "own", 4, priority=0, queue=lender)
    w.create_replicaset(cluster.api, namespace, "own", replicas=4, pool=pool, cpu="1", group="own")
    wait_running(cluster, namespace, "own", 4)
    now = {p["metadata"]["name"] for p in bound_pods(cluster, namespace, "borrowed")}
    assert not now & before, "the borrower's gang was not evicted whole"
    # Its recreated pods wait: the 4 cpu left are the keeper's.
    message = wait_group_waits(cluster, namespace, "borrowed", "QueueCannotBorrow")
    assert f"kept by their lendingLimit: {keeper} (cpu 4)" in message
    gang(cluster, namespace, pool, "keeps", 4, keeper)
    wait_running(cluster, namespace, "keeps", 4)
