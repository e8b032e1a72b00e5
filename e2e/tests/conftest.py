"""The harness's own tests use the same fixtures the project's tests import."""

from pathlib import Path

import pytest

from e2e.controlplane import Cluster
from e2e.fixtures import cluster, kubeconfig, namespace, node_factory
from e2e.waiting import wait_for

__all__ = ["cluster", "kubeconfig", "namespace", "node_factory", "podgroup_crd"]

REPO = Path(__file__).resolve().parents[2]
CRD = REPO / "crds" / "podgroups.yaml"
CRD_NAME = "podgroups.scheduling.sigs.k8s.io"


@pytest.fixture(scope="session")
def podgroup_crd(cluster: Cluster) -> str:
    """The project's CRD, applied as a user would and Established."""
    cluster.apply(CRD)
    wait_for(
        lambda: cluster.api.get(
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"
        ),
        lambda crd: any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (crd.get("status") or {}).get("conditions") or []
        ),
        describe=f"CRD {CRD_NAME} to be Established",
    )
    return CRD_NAME
