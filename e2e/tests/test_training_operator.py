"""The real Kubeflow training operator (v1.8.1) makes the gang; coscheduler places it.

The operator runs as a process on the local control plane with
``--gang-scheduler-name=coscheduler`` (``e2e.training_operator``): for a
PyTorchJob it creates the ``scheduling.x-k8s.io`` PodGroup and the pods
itself, and nothing in these tests writes either. coscheduler places the 4
pods whole, writes the group's status in upstream's schema, and the operator
follows the pods as KWOK runs them: the job's conditions go Created, Running,
Succeeded. The operator is built from its Go module on first use (about 3
minutes cold; cached after). Each test prints ``kubectl get`` of the group and
the pods (``pytest -s``); the README quotes it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest

from e2e import build
from e2e import workloads as w
from e2e.api import ApiError, Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests import helpers as h
from e2e.training_operator import PYTORCHJOBS, TrainingOperator, install_pytorchjob_crd
from e2e.waiting import wait_for

# The first test's setup may build the operator from cold (3 min 20 s measured on a
# busy 2-core machine): more than the suite's 300 s per test allows.
pytestmark = [pytest.mark.e2e, pytest.mark.version_sensitive, pytest.mark.timeout(900)]

SCHEDULER_NAME = "coscheduler"
OPERATOR_TIMEOUT_SECONDS = 60.0
"""The operator reconciles in its own time (work queue, rate limits): a wider deadline."""


@pytest.fixture(scope="module")
def training_operator(
    cluster: Cluster, xk8s_crd: str, request: pytest.FixtureRequest
) -> Iterator[TrainingOperator]:
    """The operator, for every namespace; scheduler-plugins' CRD is in place before it starts."""
    del xk8s_crd
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        files = build.ensure_training_operator()  # a cold build shows its progress
    install_pytorchjob_crd(cluster.api, files.pytorchjob_crd)
    operator = TrainingOperator.start(cluster, files, scheduler_name=SCHEDULER_NAME)
    failed_before = request.session.testsfailed
    try:
        yield operator
    finally:
        operator.stop()
        if request.session.testsfailed > failed_before:
            print(f"\n--- training-operator log ---\n{operator.log()[-6000:]}")


def pytorchjob(name: str, *, workers: int, pool: str, cpu: str) -> Json:
    """One master and ``workers`` workers, as a user writes it: no scheduler name, no group."""

    def replicas(count: int) -> Json:
        return {
            "replicas": count,
            "restartPolicy": "OnFailure",
            "template": {
                "spec": {
                    "nodeSelector": {w.POOL_LABEL: pool},
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "pytorch",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
                        }
                    ],
                }
            },
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": {"Master": replicas(1), "Worker": replicas(workers)}},
    }


def job_conditions(cluster: Cluster, namespace: str, name: str) -> dict[str, str]:
    job = cluster.api.get(f"{PYTORCHJOBS.format(ns=namespace)}/{name}")
    conditions = (job.get("status") or {}).get("conditions") or []
    return {c["type"]: c["status"] for c in conditions}


def wait_job_condition(cluster: Cluster, namespace: str, name: str, condition: str) -> None:
    wait_for(
        lambda: job_conditions(cluster, namespace, name),
        lambda conditions: conditions.get(condition) == "True",
        describe=f"PyTorchJob {namespace}/{name} condition {condition}=True",
        timeout=OPERATOR_TIMEOUT_SECONDS,
    )


def wait_operator_group(
    cluster: Cluster, namespace: str, name: str, check: Callable[[Json], bool], what: str
) -> Json:
    """The operator's PodGroup, once its status (upstream's schema) passes ``check``."""
    return h.wait_their_group(
        cluster, namespace, name, check, what, timeout=OPERATOR_TIMEOUT_SECONDS
    )


def job_pods(cluster: Cluster, namespace: str, name: str) -> list[Json]:
    return w.list_pods(cluster.api, namespace, f"training.kubeflow.org/job-name={name}")


def show_job(cluster: Cluster, namespace: str, *commands: str) -> None:
    """What a person sees (``kubectl get ...`` in ``namespace``); the README quotes it."""
    for command in commands or ("podgroups.scheduling.x-k8s.io", "pods -o wide", "pytorchjobs"):
        h.show(cluster, namespace, "get", *command.split())


def test_the_operators_webhook_is_live_and_refuses_an_invalid_job(
    cluster: Cluster, namespace: str, pool: str, training_operator: TrainingOperator
) -> None:
    # Registered as upstream's manifests do: a job without a "pytorch" container is refused.
    job = pytorchjob("bad", workers=1, pool=pool, cpu="1")
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "x"
    with pytest.raises(ApiError) as refused:
        cluster.api.create(PYTORCHJOBS.format(ns=namespace), job)
    message = str(refused.value)
    assert refused.value.status == 403
    assert 'admission webhook "validator.pytorchjob.training-operator.kubeflow.org"' in message
    assert "must have at least one container with name pytorch" in message


def test_the_operators_gang_is_placed_whole_and_the_job_runs_to_success(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    training_operator: TrainingOperator,
) -> None:
    add_nodes(2, cpu="4")
    start_scheduler()
    cluster.api.create(
        PYTORCHJOBS.format(ns=namespace), pytorchjob("mnist", workers=3, pool=pool, cpu="2")
    )

    group = wait_operator_group(
        cluster,
        namespace,
        "mnist",
        lambda s: s.get("phase") == "Running" and s.get("running") == 4,
        "Running, 4 running",
    )
    # The operator made the group: owned by the job, minMember = all replicas.
    assert group["spec"]["minMember"] == 4
    assert [o["kind"] for o in group["metadata"]["ownerReferences"]] == ["PyTorchJob"]
    pods = job_pods(cluster, namespace, "mnist")
    assert len(pods) == 4
    for pod in pods:
        assert pod["spec"]["schedulerName"] == SCHEDULER_NAME, "set by the operator"
        assert pod["metadata"]["labels"][w.XK8S_GROUP_LABEL] == "mnist", "set by the operator"
        assert pod["spec"].get("nodeName"), "all 4 bound"
    wait_job_condition(cluster, namespace, "mnist", "Running")
    show_job(cluster, namespace)
    show_job(cluster, namespace, "podgroups.scheduling.x-k8s.io mnist -o jsonpath={.spec}")

    # The master finishing is the job succeeding (KWOK plays the container's exit).
    (master,) = [p for p in pods if p["metadata"]["name"] == "mnist-master-0"]
    cluster.api.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/{master['metadata']['name']}",
        {"metadata": {"annotations": {w.COMPLETE_AFTER: "0s"}}},
        content_type="application/merge-patch+json",
    )
    wait_job_condition(cluster, namespace, "mnist", "Succeeded")
    show_job(cluster, namespace, "pytorchjobs")


def test_the_operators_gang_waits_whole_until_it_fits(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    training_operator: TrainingOperator,
) -> None:
    # 4 members of 3 cpu, one per 4-cpu node: 3 nodes hold only 3 of them. Their
    # 12 cpu cover the group's minResources (the operator sums the requests), so
    # the refusal is about placement, whatever other nodes the cluster has.
    add_nodes(3, cpu="4")
    start_scheduler()
    cluster.api.create(
        PYTORCHJOBS.format(ns=namespace), pytorchjob("big", workers=3, pool=pool, cpu="3")
    )

    wait_operator_group(
        cluster,
        namespace,
        "big",
        lambda s: s.get("phase") == "Pending" and bool(s.get("scheduleStartTime")),
        "Pending since its first attempt",
    )
    # The job is named "big" too: only the group's events count.
    warning, *_ = wait_for(
        lambda: w.events_about(
            cluster.api,
            namespace,
            "big",
            api_version=w.XK8S_API_VERSION,
            reason="FailedScheduling",
            containing="for 4 pods of group",
        ),
        describe="a FailedScheduling event on the operator's PodGroup about room",
    )
    assert "Insufficient cpu" in warning["message"]
    pods = job_pods(cluster, namespace, "big")
    assert len(pods) == 4, "the operator made every pod"
    assert not [p for p in pods if p["spec"].get("nodeName")], "none placed while 4 cannot fit"
    assert "Running" not in job_conditions(cluster, namespace, "big")
    show_job(cluster, namespace)
    print(f"\n(event on the PodGroup) {warning['type']} {warning['reason']}: {warning['message']}")

    add_nodes(1, cpu="4")
    wait_operator_group(
        cluster,
        namespace,
        "big",
        lambda s: s.get("phase") == "Running" and s.get("running") == 4,
        "Running once there is room",
    )
    wait_job_condition(cluster, namespace, "big", "Running")
    show_job(cluster, namespace)
