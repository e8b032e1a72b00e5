"""KWOK honouring grace periods (``ClusterOptions.grace_periods``), on a control plane of its own.

The benchmark of preemption makes its victims take their grace period to go, as a
kubelet whose container ignores SIGTERM would; by default KWOK removes a pod being
deleted at once.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e import build
from e2e.api import Json
from e2e.controlplane import Cluster, ClusterOptions
from e2e.nodes import NodeSpec
from e2e.waiting import wait_for

pytestmark = pytest.mark.e2e

NS = "default"


@pytest.fixture(scope="module")
def graceful() -> Iterator[Cluster]:
    build.ensure_built()
    state_dir = Path(tempfile.mkdtemp(prefix="coscheduler-e2e-grace-"))
    try:
        cluster = Cluster.start(state_dir, ClusterOptions(grace_periods=True))
        try:
            cluster.add_nodes([NodeSpec(name="kwok-grace-0", cpu="8", memory="8Gi", pods=10)])
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def running_pod(cluster: Cluster, name: str, grace: int) -> None:
    cluster.api.create(
        f"/api/v1/namespaces/{NS}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "nodeName": "kwok-grace-0",
                "terminationGracePeriodSeconds": grace,
                "containers": [{"name": "main", "image": "registry.invalid/x:1"}],
            },
        },
    )
    wait_for(
        lambda: cluster.api.get(f"/api/v1/namespaces/{NS}/pods/{name}"),
        lambda pod: pod.get("status", {}).get("phase") == "Running",
        describe=f"{name} running",
    )


def pod_or_none(cluster: Cluster, name: str) -> Json | None:
    return cluster.api.get_or_none(f"/api/v1/namespaces/{NS}/pods/{name}")


def test_a_deleted_pod_goes_at_the_end_of_its_grace_period(graceful: Cluster) -> None:
    running_pod(graceful, "patient", 300)
    running_pod(graceful, "quick", 1)
    graceful.api.delete(f"/api/v1/namespaces/{NS}/pods/patient")
    graceful.api.delete(f"/api/v1/namespaces/{NS}/pods/quick")
    wait_for(lambda: pod_or_none(graceful, "quick") is None, describe="quick gone")
    # Deleted first, still there: terminating until its deletionTimestamp.
    patient = pod_or_none(graceful, "patient")
    assert patient is not None
    assert patient["metadata"]["deletionGracePeriodSeconds"] == 300
