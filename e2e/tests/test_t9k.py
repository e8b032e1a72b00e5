"""T9k's PodGroups (``scheduler.tensorstack.dev/v1beta1``), scheduled unchanged.

coscheduler runs under T9k's scheduler name (``--scheduler-name t9k-scheduler``),
so pods labelled as T9k's Jobs label them (``scheduler.tensorstack.dev/group-name``
and ``/role``) are placed without a change. The CRD is ours, written from
T9k's API reference. Each test prints ``kubectl get`` (``pytest -s``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from e2e import workloads as w
from e2e.api import ApiError, Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests import helpers as h
from e2e.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("t9k_crd")]

API_VERSION = "scheduler.tensorstack.dev/v1beta1"
PODGROUPS = f"/apis/{API_VERSION}/namespaces/{{ns}}/podgroups"
KIND = "podgroups.scheduler.tensorstack.dev"
STATUS_FIELDS = {"conditions", "allocated", "pending", "running", "succeeded", "failed", "unknown"}


def group_body(name: str, **spec: object) -> Json:
    return {"apiVersion": API_VERSION, "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}


def create_group(cluster: Cluster, namespace: str, name: str, **spec: object) -> Json:
    return cluster.api.create(PODGROUPS.format(ns=namespace), group_body(name, **spec))


def create_member(
    cluster: Cluster, namespace: str, name: str, group: str, *, pool: str, cpu: str, role: str
) -> Json:
    """A pod as T9k's Jobs make it: the group and the role in labels."""
    body = w.pod(name, pool=pool, cpu=cpu, scheduler="t9k-scheduler")
    body["metadata"]["labels"].update(
        {"scheduler.tensorstack.dev/group-name": group, "scheduler.tensorstack.dev/role": role}
    )
    return cluster.api.create(f"/api/v1/namespaces/{namespace}/pods", body)


def condition(status: Json, kind: str) -> Json:
    return next((c for c in status.get("conditions") or [] if c["type"] == kind), {})


def wait_status(
    cluster: Cluster, namespace: str, name: str, check: Callable[[Json], bool], what: str
) -> Json:
    group = wait_for(
        lambda: cluster.api.get(f"{PODGROUPS.format(ns=namespace)}/{name}"),
        lambda g: check(h.status_of(g)),
        describe=f"T9k PodGroup {namespace}/{name}: {what}",
    )
    status: Json = group["status"]
    assert set(status) <= STATUS_FIELDS, "only T9k's fields"
    assert {c["type"] for c in status["conditions"]} == {"GroupScheduled", "SufficientGroupMember"}
    return status


def show(cluster: Cluster, namespace: str, describe: str | None = None) -> None:
    h.show(cluster, namespace, *(["describe", KIND, describe] if describe else ["get", KIND]))


@pytest.fixture
def start_as_t9k(start_scheduler: StartScheduler) -> Callable[[], object]:
    return lambda: start_scheduler("--scheduler-name", "t9k-scheduler")


def test_a_gang_with_roles_is_placed_whole_and_its_status_written_in_t9k_s_words(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_t9k: Callable[[], object],
) -> None:
    add_nodes(2, cpu="4")
    start_as_t9k()
    roles = [{"name": "master", "minMember": 1}, {"name": "worker", "minMember": 2}]
    create_group(cluster, namespace, "job", minMember=3, priority=50, roles=roles)
    # Two workers: enough for neither minMember nor the master's role.
    for name in ("job-worker-0", "job-worker-1"):
        create_member(cluster, namespace, name, "job", pool=pool, cpu="2", role="worker")
    status = wait_status(
        cluster,
        namespace,
        "job",
        lambda s: condition(s, "SufficientGroupMember").get("status") == "False",
        "SufficientGroupMember=False",
    )
    assert condition(status, "SufficientGroupMember")["reason"] == "NotEnoughMembers"
    assert "master" in condition(status, "SufficientGroupMember")["message"]
    assert condition(status, "GroupScheduled")["status"] == "False"
    assert h.bound(cluster, namespace) == []
    show(cluster, namespace, describe="job")

    create_member(cluster, namespace, "job-master-0", "job", pool=pool, cpu="2", role="master")
    status = wait_status(
        cluster,
        namespace,
        "job",
        lambda s: s.get("running") == 3 and condition(s, "GroupScheduled").get("status") == "True",
        "GroupScheduled, 3 running",
    )
    assert condition(status, "GroupScheduled")["reason"] == "PodGroupScheduled"
    assert condition(status, "SufficientGroupMember")["reason"] == "SufficientMemberPods"
    assert status["allocated"]["cpu"] == "6"
    assert len(h.bound(cluster, namespace)) == 3
    show(cluster, namespace)


def test_a_gang_that_cannot_fit_waits_whole_and_says_why(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_t9k: Callable[[], object],
) -> None:
    add_nodes(2, cpu="4")
    start_as_t9k()
    create_group(cluster, namespace, "big", minMember=3)
    for index in range(3):
        create_member(cluster, namespace, f"big-{index}", "big", pool=pool, cpu="3", role="w")
    status = wait_status(
        cluster,
        namespace,
        "big",
        lambda s: condition(s, "GroupScheduled").get("reason") == "NotEnoughResources",
        "GroupScheduled=False: NotEnoughResources",
    )
    assert condition(status, "SufficientGroupMember")["status"] == "True"
    assert "Insufficient cpu" in condition(status, "GroupScheduled")["message"]
    wait_for(
        lambda: w.events_about(
            cluster.api,
            namespace,
            "big",
            api_version=API_VERSION,
            reason="FailedScheduling",
            containing="Insufficient cpu",
        ),
        describe="a FailedScheduling event on the T9k PodGroup",
    )
    assert h.bound(cluster, namespace) == []
    show(cluster, namespace)

    add_nodes(1, cpu="4")
    wait_status(
        cluster,
        namespace,
        "big",
        lambda s: s.get("running") == 3,
        "3 running once there is room",
    )


def test_the_queue_is_ours_of_the_same_name(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_t9k: Callable[[], object],
) -> None:
    add_nodes(1, cpu="8")
    start_as_t9k()
    queue = f"{namespace}-t"
    create_group(cluster, namespace, "queued", minMember=1, queue=queue)
    create_member(cluster, namespace, "q-0", "queued", pool=pool, cpu="1", role="w")
    status = wait_status(
        cluster,
        namespace,
        "queued",
        lambda s: condition(s, "GroupScheduled").get("reason") == "QueueNotFound",
        "waiting for its queue",
    )
    assert queue in condition(status, "GroupScheduled")["message"]
    assert h.bound(cluster, namespace) == []
    w.create_queue(cluster.api, queue, namespaces=[namespace])
    try:
        h.wait_bound(cluster, namespace, 1, "placed once its queue exists")
    finally:
        cluster.api.delete(f"{w.QUEUES}/{queue}")


def test_bad_input_says_why(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_t9k: Callable[[], object],
) -> None:
    add_nodes(1, cpu="8")
    start_as_t9k()
    # A priority past T9k's range: the API server refuses it, naming the field.
    with pytest.raises(ApiError) as refused:
        create_group(cluster, namespace, "loud", minMember=1, priority=101)
    assert "spec.priority" in str(refused.value)
    # A pod naming a group that does not exist.
    create_member(cluster, namespace, "lost-0", "nowhere", pool=pool, cpu="1", role="w")
    pod = h.wait_not_scheduled(cluster, namespace, "lost-0", "GroupNotFound")
    assert "nowhere" in h.pod_scheduled(pod)["message"]
    # A field whose meaning is not documented: refused, naming it.
    create_group(cluster, namespace, "topo", minMember=1, topologyPolicy="best-effort")
    create_member(cluster, namespace, "topo-0", "topo", pool=pool, cpu="1", role="w")
    pod = h.wait_not_scheduled(cluster, namespace, "topo-0", "GroupNotFound")
    assert "spec.topologyPolicy" in h.pod_scheduled(pod)["message"]
    assert h.bound(cluster, namespace) == []
