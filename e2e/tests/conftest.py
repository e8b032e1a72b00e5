"""The harness's own tests use the same fixtures the project's tests import."""

import secrets
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from coscheduler.runtime.kube import KubeClient
from e2e import versions
from e2e import workloads as w
from e2e.controlplane import Cluster
from e2e.fixtures import (
    GANG_CHECK,
    NodeFactory,
    cluster,
    kubeconfig,
    namespace,
    node_factory,
    whole_gangs,
)
from e2e.scheduler import SchedulerProcess, StartScheduler
from e2e.waiting import wait_for

__all__ = [
    "add_nodes",
    "client",
    "cluster",
    "kubeconfig",
    "namespace",
    "node_factory",
    "podgroup_crd",
    "pool",
    "start_scheduler",
    "t9k_crd",
    "volcano_crd",
    "volcano_queue_crd",
    "whole_gangs",
    "xk8s_crd",
]

REPO = Path(__file__).resolve().parents[2]
CRD = REPO / "crds" / "podgroups.yaml"
CRD_NAME = "podgroups.scheduling.sigs.k8s.io"
XK8S_CRD = REPO / "crds" / "xk8s-podgroups.yaml"
QUEUE_CRD = REPO / "crds" / "queues.yaml"
QUEUE_CRD_NAME = "queues.scheduling.sigs.k8s.io"
XK8S_CRD_NAME = "podgroups.scheduling.x-k8s.io"
VOLCANO_CRD = REPO / "crds" / "volcano-podgroups.yaml"
VOLCANO_QUEUE_CRD = REPO / "crds" / "volcano-queues.yaml"
T9K_CRD = REPO / "crds" / "t9k-podgroups.yaml"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Mark the end of a test's body for the gang invariant (``whole_gangs``)."""
    try:
        return (yield)
    finally:
        check = item.stash.get(GANG_CHECK, None)
        if check is not None:
            check.test_ended()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``@pytest.mark.kubernetes("1.35", reason=...)``: skipped on any other release, saying so."""
    for item in items:
        marker = item.get_closest_marker("kubernetes")
        if marker is None:
            continue
        mismatch = versions.release_mismatch(marker.args)
        if mismatch is not None:
            why = marker.kwargs.get("reason")
            item.add_marker(pytest.mark.skip(reason=f"{mismatch}: {why}" if why else mismatch))


def _install_crd(cluster: Cluster, path: Path, name: str, collection: str) -> str:
    """Apply a CRD as a user would; return once it is Established and its storage lists."""
    cluster.apply(path)
    wait_for(
        lambda: cluster.api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"),
        lambda crd: any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (crd.get("status") or {}).get("conditions") or []
        ),
        describe=f"CRD {name} to be Established",
    )
    # Established comes a moment before the storage serves a list.
    wait_for(
        lambda: cluster.api.get_or_none(collection) is not None,
        describe=f"{collection} to be listed",
    )
    return name


@pytest.fixture(scope="session")
def podgroup_crd(cluster: Cluster) -> str:
    """The project's CRDs (PodGroup and Queue), applied as a user would and Established.

    Every scheduler of the session starts with Queues served: a cluster without
    Queue objects must schedule exactly as one without the CRD.
    """
    _install_crd(cluster, QUEUE_CRD, QUEUE_CRD_NAME, "/apis/scheduling.sigs.k8s.io/v1alpha1/queues")
    return _install_crd(cluster, CRD, CRD_NAME, "/apis/scheduling.sigs.k8s.io/v1alpha1/podgroups")


@pytest.fixture(scope="session")
def xk8s_crd(cluster: Cluster, podgroup_crd: str) -> str:
    """scheduler-plugins' PodGroup API (our copy of its CRD), served from now on in the session.

    coscheduler asks discovery at start: a scheduler started after this reads it.
    """
    return _install_crd(
        cluster, XK8S_CRD, XK8S_CRD_NAME, "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"
    )


@pytest.fixture(scope="session")
def volcano_crd(cluster: Cluster, podgroup_crd: str) -> str:
    """Volcano's PodGroup API (our copy of its CRD); a scheduler started after this reads it."""
    return _install_crd(
        cluster,
        VOLCANO_CRD,
        "podgroups.scheduling.volcano.sh",
        "/apis/scheduling.volcano.sh/v1beta1/podgroups",
    )


@pytest.fixture(scope="session")
def volcano_queue_crd(cluster: Cluster, volcano_crd: str) -> str:
    """Volcano's Queue API (our copy of its CRD); a scheduler started after this reads it."""
    return _install_crd(
        cluster,
        VOLCANO_QUEUE_CRD,
        "queues.scheduling.volcano.sh",
        "/apis/scheduling.volcano.sh/v1beta1/queues",
    )


@pytest.fixture(scope="session")
def t9k_crd(cluster: Cluster, podgroup_crd: str) -> str:
    """T9k's PodGroup API (our CRD, from its API reference); read by a scheduler started after."""
    return _install_crd(
        cluster,
        T9K_CRD,
        "podgroups.scheduler.tensorstack.dev",
        "/apis/scheduler.tensorstack.dev/v1beta1/podgroups",
    )


@pytest.fixture
def pool() -> str:
    return f"p-{secrets.token_hex(4)}"


@pytest.fixture
def add_nodes(node_factory: NodeFactory, pool: str) -> Callable[..., list[str]]:
    """Nodes of this test's pool: ``add_nodes(2, cpu="8")``."""

    def add(count: int = 1, **kwargs: Any) -> list[str]:
        labels = {w.POOL_LABEL: pool, **kwargs.pop("labels", {})}
        return node_factory(count, labels=labels, **kwargs)

    return add


@pytest.fixture
def start_scheduler(
    cluster: Cluster,
    namespace: str,
    podgroup_crd: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> Iterator[StartScheduler]:
    """Start ``coscheduler run`` for this test's namespace; stopped (log shown on failure) after."""
    started: list[SchedulerProcess] = []

    def start(*args: str, wait_ready: bool = True, leader_elect: bool = False) -> SchedulerProcess:
        flags = ["--namespace", namespace, "--backoff-max-seconds", "2"]
        if not leader_elect:
            flags.append("--no-leader-elect")
        process = SchedulerProcess(
            kubeconfig=cluster.kubeconfig,
            log_path=tmp_path / f"coscheduler-{len(started)}.log",
            args=[*flags, "--metrics-port", "0", *args],
        )
        started.append(process)
        return process.start(wait_ready=wait_ready)

    failed_before = request.session.testsfailed
    try:
        yield start
    finally:
        for process in started:
            process.stop()
        if request.session.testsfailed > failed_before:
            for process in started:
                print(f"\n--- {process.log_path} ---\n{process.log()[-6000:]}")


@pytest.fixture
async def client(kubeconfig: Path) -> AsyncIterator[KubeClient]:
    """The runtime's own API client, logged in as the cluster's admin."""
    kube = await KubeClient.connect(
        kubeconfig=str(kubeconfig), qps=100, burst=100, timeout_seconds=10
    )
    try:
        yield kube
    finally:
        await kube.close()
