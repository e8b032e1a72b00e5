"""Volcano's PodGroups (``scheduling.volcano.sh/v1beta1``), scheduled unchanged.

coscheduler runs under Volcano's scheduler name (``--scheduler-name volcano``),
so pods made for Volcano, annotated ``scheduling.k8s.io/group-name`` with
their task in ``volcano.sh/task-spec``, are placed without a change. The CRD
(ours, upstream's structure) is installed before coscheduler starts. Each
test prints ``kubectl get`` of its groups (``pytest -s``): the README quotes it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests import helpers as h
from e2e.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("volcano_crd")]

API_VERSION = "scheduling.volcano.sh/v1beta1"
PODGROUPS = f"/apis/{API_VERSION}/namespaces/{{ns}}/podgroups"
KIND = "podgroups.scheduling.volcano.sh"
PHASES = {"Pending", "Inqueue", "Running", "Unknown", "Completed"}
STATUS_FIELDS = {"phase", "conditions", "running", "succeeded", "failed"}


def create_group(cluster: Cluster, namespace: str, name: str, **spec: object) -> Json:
    body = {"apiVersion": API_VERSION, "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}
    return cluster.api.create(PODGROUPS.format(ns=namespace), body)


def create_member(
    cluster: Cluster,
    namespace: str,
    name: str,
    group: str,
    *,
    pool: str,
    cpu: str,
    task: str,
    run_seconds: float | None = None,
) -> Json:
    """A pod as Volcano's operators make it: the group and the task in annotations; with
    ``run_seconds``, KWOK completes it that long after it starts."""
    body = w.pod(name, pool=pool, cpu=cpu, scheduler="volcano")
    body["metadata"]["annotations"] = {
        "scheduling.k8s.io/group-name": group,
        "volcano.sh/task-spec": task,
    }
    if run_seconds is not None:
        body["metadata"]["annotations"][w.COMPLETE_AFTER] = f"{run_seconds}s"
        body["spec"]["restartPolicy"] = "Never"
    return cluster.api.create(f"/api/v1/namespaces/{namespace}/pods", body)


def wait_status(
    cluster: Cluster, namespace: str, name: str, check: Callable[[Json], bool], what: str
) -> Json:
    group = wait_for(
        lambda: cluster.api.get(f"{PODGROUPS.format(ns=namespace)}/{name}"),
        lambda g: check(h.status_of(g)),
        describe=f"Volcano PodGroup {namespace}/{name}: {what}",
    )
    status: Json = group["status"]
    assert set(status) <= STATUS_FIELDS, "only Volcano's fields"
    assert status["phase"] in PHASES
    return status


def condition(status: Json, kind: str) -> Json:
    return next((c for c in status.get("conditions") or [] if c["type"] == kind), {})


def show(cluster: Cluster, namespace: str, describe: str | None = None) -> None:
    h.show(cluster, namespace, *(["describe", KIND, describe] if describe else ["get", KIND]))


@pytest.fixture
def start_as_volcano(start_scheduler: StartScheduler) -> Callable[[], object]:
    return lambda: start_scheduler("--scheduler-name", "volcano")


def test_a_gang_is_inqueue_before_its_pods_then_placed_whole(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_volcano: Callable[[], object],
) -> None:
    add_nodes(2, cpu="4")
    start_as_volcano()
    create_group(cluster, namespace, "train", minMember=3, minTaskMember={"ps": 1, "worker": 2})
    # Operators in Volcano mode make the pods only once the group is Inqueue.
    wait_status(cluster, namespace, "train", lambda s: s.get("phase") == "Inqueue", "Inqueue")
    show(cluster, namespace)
    for name, task in (
        ("train-ps-0", "ps"),
        ("train-worker-0", "worker"),
        ("train-worker-1", "worker"),
    ):
        create_member(cluster, namespace, name, "train", pool=pool, cpu="2", task=task)

    status = wait_status(
        cluster,
        namespace,
        "train",
        lambda s: s.get("phase") == "Running" and s.get("running") == 3,
        "Running, 3 running",
    )
    assert len(h.bound(cluster, namespace)) == 3
    assert condition(status, "Scheduled").get("status") == "True"
    show(cluster, namespace)


def test_a_gang_that_cannot_fit_waits_whole_and_says_why(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_volcano: Callable[[], object],
) -> None:
    add_nodes(2, cpu="4")  # room for two 3-cpu members, one per node
    start_as_volcano()
    create_group(cluster, namespace, "big", minMember=3)
    for index in range(3):
        create_member(cluster, namespace, f"big-{index}", "big", pool=pool, cpu="3", task="worker")

    status = wait_status(
        cluster,
        namespace,
        "big",
        lambda s: condition(s, "Unschedulable").get("reason") == "NotEnoughResources",
        "Unschedulable: NotEnoughResources",
    )
    assert status["phase"] == "Inqueue", "admitted; waiting for room, not for its queue"
    assert "Insufficient cpu" in condition(status, "Unschedulable")["message"]
    warning, *_ = wait_for(
        lambda: w.events_about(
            cluster.api,
            namespace,
            "big",
            api_version=API_VERSION,
            reason="FailedScheduling",
            containing="for 3 pods of group",
        ),
        describe="a FailedScheduling event on the Volcano PodGroup",
    )
    assert "Insufficient cpu" in warning["message"]
    assert h.bound(cluster, namespace) == [], "no member placed while the gang cannot fit"
    show(cluster, namespace)
    show(cluster, namespace, describe="big")

    add_nodes(1, cpu="4")
    wait_status(
        cluster,
        namespace,
        "big",
        lambda s: s.get("phase") == "Running" and s.get("running") == 3,
        "Running once there is room",
    )


def test_each_task_s_minimum_is_honoured(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_volcano: Callable[[], object],
) -> None:
    add_nodes(1, cpu="8")
    start_as_volcano()
    create_group(cluster, namespace, "roles", minMember=2, minTaskMember={"ps": 1, "worker": 1})
    # Two members, enough for minMember, but no ps; one task no minimum names.
    create_member(cluster, namespace, "w-0", "roles", pool=pool, cpu="1", task="worker")
    create_member(cluster, namespace, "chief-0", "roles", pool=pool, cpu="1", task="chief")

    status = wait_status(
        cluster,
        namespace,
        "roles",
        lambda s: condition(s, "Unschedulable").get("reason") == "NotEnoughTasks",
        "Unschedulable: NotEnoughTasks",
    )
    assert "ps" in condition(status, "Unschedulable")["message"]
    assert status["phase"] == "Inqueue", "its pods may still be made"
    assert h.bound(cluster, namespace) == []
    show(cluster, namespace, describe="roles")

    create_member(cluster, namespace, "ps-0", "roles", pool=pool, cpu="1", task="ps")
    h.wait_bound(cluster, namespace, 3, "ps, worker and chief bound once ps comes")


def test_the_queue_is_ours_of_the_same_name(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_volcano: Callable[[], object],
) -> None:
    add_nodes(1, cpu="8")
    queue = f"{namespace}-v"
    w.create_queue(cluster.api, queue, max={"cpu": "2"}, namespaces=[namespace])
    try:
        start_as_volcano()
        create_group(cluster, namespace, "capped", minMember=2, queue=queue)
        for index in range(2):
            create_member(cluster, namespace, f"c-{index}", "capped", pool=pool, cpu="2", task="w")
        status = wait_status(
            cluster,
            namespace,
            "capped",
            lambda s: condition(s, "Unschedulable").get("reason") == "QueueMaxReached",
            "Unschedulable: QueueMaxReached",
        )
        assert status["phase"] == "Pending", "Volcano's word for a group its queue keeps out"
        assert h.bound(cluster, namespace) == []
        show(cluster, namespace)
    finally:
        cluster.api.delete(f"{w.QUEUES}/{queue}")


def test_bad_input_says_why(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_as_volcano: Callable[[], object],
) -> None:
    add_nodes(1, cpu="8")
    start_as_volcano()
    # A pod naming a group that does not exist.
    create_member(cluster, namespace, "lost-0", "nowhere", pool=pool, cpu="1", task="w")
    pod = h.wait_not_scheduled(cluster, namespace, "lost-0", "GroupNotFound")
    assert "nowhere" in h.pod_scheduled(pod)["message"]
    # A group asking what has no counterpart: refused, naming the field.
    create_group(
        cluster,
        namespace,
        "tiers",
        minMember=1,
        networkTopology={"mode": "hard", "highestTierAllowed": 1},
    )
    create_member(cluster, namespace, "tiers-0", "tiers", pool=pool, cpu="1", task="w")
    pod = h.wait_not_scheduled(cluster, namespace, "tiers-0", "GroupNotFound")
    assert "spec.networkTopology" in h.pod_scheduled(pod)["message"]
    wait_for(
        lambda: w.events_about(
            cluster.api,
            namespace,
            "tiers",
            api_version=API_VERSION,
            reason="InvalidObject",
            containing="spec.networkTopology",
        ),
        describe="an InvalidObject event on the refused PodGroup",
    )
    assert h.bound(cluster, namespace) == []
