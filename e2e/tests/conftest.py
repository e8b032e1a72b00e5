"""The harness's own tests use the same fixtures the project's tests import."""

from e2e.fixtures import cluster, kubeconfig, namespace, node_factory

__all__ = ["cluster", "kubeconfig", "namespace", "node_factory"]
