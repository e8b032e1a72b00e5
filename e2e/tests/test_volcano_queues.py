"""Volcano's Queues (``scheduling.volcano.sh/v1beta1``), read as they are.

coscheduler runs under Volcano's scheduler name; Volcano's Queue CRD (ours,
upstream's structure) is installed before it starts. Queues are
cluster-scoped: each test names its own after its namespace and deletes them
when it ends. A queue is closed as Volcano's controller closes it: by its
``status.state``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests import helpers as h
from e2e.tests.test_volcano import condition, create_group, create_member, wait_status
from e2e.waiting import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.version_sensitive,
    pytest.mark.usefixtures("volcano_queue_crd"),
]

API_VERSION = "scheduling.volcano.sh/v1beta1"
QUEUES = f"/apis/{API_VERSION}/queues"
MERGE = "application/merge-patch+json"

MakeQueue = Callable[..., str]


@pytest.fixture
def make_queue(cluster: Cluster, namespace: str) -> Iterator[MakeQueue]:
    """``make_queue("a", weight=3)``: a Volcano Queue named ``<namespace>-a``."""
    made: list[str] = []

    def make(suffix: str, **spec: Any) -> str:
        name = f"{namespace}-{suffix}"
        body = {"apiVersion": API_VERSION, "kind": "Queue", "metadata": {"name": name}}
        cluster.api.create(QUEUES, {**body, "spec": spec})
        made.append(name)
        return name

    yield make
    for name in made:
        cluster.api.delete(f"{QUEUES}/{name}")


@pytest.fixture
def start_as_volcano(start_scheduler: StartScheduler) -> Callable[[], object]:
    return lambda: start_scheduler("--scheduler-name", "volcano")


def set_state(cluster: Cluster, name: str, state: str) -> None:
    """As Volcano's controller does for ``vcctl queue operate``: the queue's status.state."""
    body = {"status": {"state": state}}
    cluster.api.request("PATCH", f"{QUEUES}/{name}/status", body, content_type=MERGE)


def queue_status(cluster: Cluster, name: str) -> Json:
    return dict(cluster.api.get(f"{QUEUES}/{name}").get("status") or {})


def reason(cluster: Cluster, namespace: str, group: str) -> str | None:
    """Why the Volcano PodGroup waits (its Unschedulable condition's reason), if it does."""
    found = cluster.api.get(f"/apis/{API_VERSION}/namespaces/{namespace}/podgroups/{group}")
    return condition(h.status_of(found), "Unschedulable").get("reason")


def gang(
    cluster: Cluster,
    namespace: str,
    pool: str,
    name: str,
    size: int,
    queue: str,
    *,
    cpu: str = "1",
    run_seconds: float | None = None,
) -> None:
    create_group(cluster, namespace, name, minMember=size, queue=queue)
    for index in range(size):
        create_member(
            cluster, namespace, f"{name}-{index}", name,
            pool=pool, cpu=cpu, task="worker", run_seconds=run_seconds,
        )  # fmt: skip


def test_a_closed_queue_holds_a_gang_with_the_reason_until_opened(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_volcano: Callable[[], object],
    make_queue: MakeQueue,
) -> None:
    add_nodes(1, cpu="8")
    queue = make_queue("closed")
    set_state(cluster, queue, "Closed")
    start_as_volcano()
    gang(cluster, namespace, pool, "held", 2, queue)

    status = wait_status(
        cluster,
        namespace,
        "held",
        lambda s: condition(s, "Unschedulable").get("reason") == "QueueClosed",
        "Unschedulable: QueueClosed",
    )
    assert status["phase"] == "Pending", "Volcano's word for a group its queue keeps out"
    assert queue in condition(status, "Unschedulable")["message"]
    written = wait_for(
        lambda: queue_status(cluster, queue),
        lambda s: s.get("pending") == 1,
        describe=f"Volcano Queue {queue}: one pending group counted",
    )
    assert written["state"] == "Closed"
    assert h.bound(cluster, namespace) == [], "nothing placed from a Closed queue"

    set_state(cluster, queue, "Open")
    h.wait_bound(cluster, namespace, 2, "the gang placed whole once its queue is Open")
    wait_for(
        lambda: queue_status(cluster, queue),
        lambda s: s.get("running") == 1 and s.get("state") == "Open",
        describe=f"Volcano Queue {queue}: Open, one running group",
    )


def test_weights_one_and_three_split_a_saturated_cluster_one_to_three(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_volcano: Callable[[], object],
    make_queue: MakeQueue,
) -> None:
    add_nodes(8, cpu="4")
    queues = {make_queue("light", weight=1): 10, make_queue("heavy", weight=3): 30}
    # Backlogs of gangs of two 1-cpu pods running 12 s, three times as many for the
    # heavy queue: both stay backlogged while the cluster is full (as test_queues.py).
    for queue, count in queues.items():
        for index in range(count):
            name = f"{queue.rsplit('-', 1)[1]}-{index}"
            gang(cluster, namespace, pool, name, 2, queue, run_seconds=12)
    start_as_volcano()
    median = h.light_share_median(cluster, namespace, "light", saturated=28)  # 32 cpu, gangs of 2
    assert abs(median - 0.25) <= 0.07, f"light queue's share median {median:.2f}"


def test_a_queue_s_capability_caps_it(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_volcano: Callable[[], object],
    make_queue: MakeQueue,
) -> None:
    add_nodes(2, cpu="4")
    queue = make_queue("capped", capability={"cpu": "4"})
    start_as_volcano()
    for name in ("a", "b", "c"):
        gang(cluster, namespace, pool, name, 2, queue)

    h.wait_bound(cluster, namespace, 4, "two gangs, the queue's 4 cpu")
    wait_for(
        lambda: [reason(cluster, namespace, name) for name in ("a", "b", "c")],
        lambda reasons: reasons.count("QueueMaxReached") == 1,
        describe="one gang waiting with QueueMaxReached",
    )
    assert len(h.bound(cluster, namespace)) == 4, "never more than the capability"
    written = wait_for(
        lambda: queue_status(cluster, queue),
        lambda s: s.get("running") == 2 and s.get("pending") == 1,
        describe=f"Volcano Queue {queue}: two running groups, one pending",
    )
    assert written["allocated"]["cpu"] == "4"
    assert written["state"] == "Open"


def test_a_queue_of_ours_of_the_same_name_wins_and_says_so(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_volcano: Callable[[], object],
    make_queue: MakeQueue,
) -> None:
    add_nodes(1, cpu="8")
    queue = make_queue("both", capability={"cpu": "8"})
    w.create_queue(cluster.api, queue, max={"cpu": "2"}, namespaces=[namespace])
    try:
        start_as_volcano()
        gang(cluster, namespace, pool, "capped", 2, queue, cpu="2")
        wait_status(
            cluster,
            namespace,
            "capped",
            lambda s: condition(s, "Unschedulable").get("reason") == "QueueMaxReached",
            "Unschedulable: QueueMaxReached (our queue's max of 2 cpu)",
        )
        event, *_ = wait_for(
            lambda: w.events_about(
                cluster.api, "default", queue, api_version=API_VERSION, reason="QueueShadowed"
            ),
            describe=f"a QueueShadowed event on Volcano's Queue {queue}",
        )
        assert "scheduling.sigs.k8s.io" in event["message"]
        assert h.bound(cluster, namespace) == []
    finally:
        cluster.api.delete(f"{w.QUEUES}/{queue}")


def test_a_deployment_annotated_with_group_min_member_is_bound_whole_or_not_at_all(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_volcano: Callable[[], object],
    make_queue: MakeQueue,
) -> None:
    """As Volcano's controller does, the Deployment's ReplicaSet (which carries its
    annotations) gets a Volcano PodGroup ``podgroup-<its uid>``; its pods are that gang."""
    add_nodes(2, cpu="4")  # room for two of the three 3-cpu pods
    queue = make_queue("web")
    start_as_volcano()
    template = {
        "metadata": {
            "labels": {"app": "web"},
            "annotations": {"scheduling.volcano.sh/queue-name": queue},
        },
        "spec": w.pod("web", pool=pool, cpu="3", scheduler="volcano")["spec"],
    }
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "annotations": {"scheduling.volcano.sh/group-min-member": "3"},
        },
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }
    cluster.api.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", body)
    replica_set = wait_for(
        lambda: cluster.api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets")["items"],
        lambda items: len(items) == 1,
        describe="the Deployment's ReplicaSet",
    )[0]
    group = f"podgroup-{replica_set['metadata']['uid']}"
    status = wait_status(
        cluster,
        namespace,
        group,
        lambda s: condition(s, "Unschedulable").get("reason") == "NotEnoughResources",
        "Unschedulable: NotEnoughResources (two of three fit)",
    )
    made = cluster.api.get(f"/apis/{API_VERSION}/namespaces/{namespace}/podgroups/{group}")
    assert made["spec"]["minMember"] == 3
    assert made["spec"]["queue"] == queue
    assert made["metadata"]["ownerReferences"][0]["uid"] == replica_set["metadata"]["uid"]
    assert status["phase"] == "Inqueue"
    assert h.bound(cluster, namespace) == [], "no pod placed while the three cannot all be"

    add_nodes(1, cpu="4")
    h.wait_bound(cluster, namespace, 3, "the three placed together once they fit")
