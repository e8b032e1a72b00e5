"""Pytest fixtures over the local control plane, for e2e/tests and the project's tests.

Use from any conftest.py::

    from e2e.fixtures import cluster, kubeconfig, namespace, node_factory  # noqa: F401

Why one cluster per session and a namespace per test: starting a control
plane costs seconds, a namespace milliseconds; tests stay independent as long
as each works in its own namespace and removes the nodes it adds (the
``node_factory`` fixture does). The cluster is built on first use (a cold
build takes minutes and reports its progress) and stopped at the end of the
session, also on failure or Ctrl-C. If any test failed, the components' logs
are copied to ``.e2e/test-logs/`` before the temporary directory is removed.

Environment:
- The API server serves the native gang API (``Workload``, ``spec.workloadRef``),
  which coscheduler reads; ``COSCHEDULER_E2E_GANG_API=0`` starts it without.
- ``COSCHEDULER_E2E_KEEP=1`` keeps the cluster's state directory (logs, certs).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from e2e import build, nodes
from e2e.cluster import default_state_dir
from e2e.controlplane import Cluster, ClusterOptions
from e2e.processes import interrupt_on_sigterm
from e2e.waiting import wait_for

NodeFactory = Callable[..., list[str]]


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A real control plane for the whole session (etcd, kube-apiserver, controllers, KWOK)."""
    # A cold build takes minutes: show its progress through pytest's output capture.
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        build.ensure_built()
    interrupt_on_sigterm()  # a CI runner's SIGTERM then unwinds through the finalisers below
    options = ClusterOptions(gang_api=os.environ.get("COSCHEDULER_E2E_GANG_API") != "0")
    state_dir = Path(tempfile.mkdtemp(prefix="coscheduler-e2e-"))
    failed = True
    try:
        running = Cluster.start(state_dir, options)
        try:
            yield running
        finally:
            running.stop()
        failed = bool(request.session.testsfailed)
    finally:
        if failed:
            _save_logs(state_dir / "logs")
        if os.environ.get("COSCHEDULER_E2E_KEEP") == "1":
            print(f"\n[e2e] cluster state kept in {state_dir}")
        else:
            shutil.rmtree(state_dir, ignore_errors=True)


def _save_logs(logs: Path) -> None:
    """Keep the components' logs of a failed session in .e2e/test-logs/ for diagnosis."""
    if not logs.is_dir():
        return
    saved = default_state_dir() / "test-logs"
    shutil.rmtree(saved, ignore_errors=True)
    shutil.copytree(logs, saved)
    print(f"\n[e2e] component logs of the failed session copied to {saved}")


@pytest.fixture(scope="session")
def kubeconfig(cluster: Cluster) -> Path:
    """Path of an admin kubeconfig for kubectl and kubernetes_asyncio."""
    return cluster.kubeconfig


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace named after the test, ready for pods; deleted afterwards."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].rstrip("-")
    name = f"t-{slug}-{secrets.token_hex(3)}"
    cluster.api.create(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    # ServiceAccount admission refuses pods until the controller has made `default`.
    wait_for(
        lambda: cluster.api.get_or_none(f"/api/v1/namespaces/{name}/serviceaccounts/default"),
        describe=f"the default ServiceAccount of namespace {name}",
    )
    try:
        yield name
    finally:
        cluster.api.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture
def node_factory(cluster: Cluster) -> Iterator[NodeFactory]:
    """``node_factory(count, cpu=..., memory=..., gpus=..., labels=..., taints=...)`` -> names.

    Nodes are named after the test, made Ready before returning, and deleted
    when the test ends. ``taints`` takes ``key=value:Effect`` strings.
    """
    created: list[str] = []
    prefix = f"n-{secrets.token_hex(3)}-"

    def make(
        count: int = 1,
        *,
        cpu: str = "8",
        memory: str = "32Gi",
        gpus: int = 0,
        pods: int = nodes.DEFAULT_PODS,
        labels: dict[str, str] | None = None,
        taints: tuple[str, ...] = (),
        wait_ready: bool = True,
    ) -> list[str]:
        start = len(created)
        specs = [
            nodes.NodeSpec(
                name=f"{prefix}{start + i}",
                cpu=cpu,
                memory=memory,
                gpus=gpus,
                pods=pods,
                labels=dict(labels or {}),
                taints=tuple(nodes.Taint.parse(t) for t in taints),
            )
            for i in range(count)
        ]
        created.extend(spec.name for spec in specs)
        return cluster.add_nodes(specs, wait_ready=wait_ready)

    try:
        yield make
    finally:
        if created:
            cluster.remove_nodes(created, wait_gone=False)
