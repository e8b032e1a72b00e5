"""The one place where the versions of the local control plane are pinned.

Why these: Kubernetes 1.35.4 is the newest release whose every staging module
is served by the Go module proxy reachable here (1.34.7 is not complete), and
1.35 carries the native gang API (``scheduling.k8s.io/v1alpha1``) that the
benchmarks compare against. etcd 3.6 is the line Kubernetes 1.35 is tested
with and has ``--unsafe-no-fsync``. KWOK v0.7.0 installs with a plain
``go install`` and still falls back to its built-in stages when given none.
Helm v3.22.0 is the newest Helm 3 release the proxy serves (``go list -m
-versions helm.sh/helm/v3``); its go.mod has no ``replace`` lines, so it
installs with a plain ``go install`` too. The Kubeflow training operator
v1.8.1 is the only release the proxy lists (``go list -m -versions
github.com/kubeflow/training-operator``); with ``--gang-scheduler-name`` it
creates scheduler-plugins' PodGroups. Its go.mod has no ``replace`` lines
either, and it is built only when a test asks for it.
"""

from __future__ import annotations

from typing import Final

KUBERNETES: Final = "v1.35.4"
"""Release of ``k8s.io/kubernetes``; its staging modules are ``v0.<minor>.<patch>``."""

ETCD: Final = "v3.6.5"
"""Release of ``go.etcd.io/etcd/server/v3``."""

KWOK: Final = "v0.7.0"
"""Release of ``sigs.k8s.io/kwok``."""

HELM: Final = "v3.22.0"
"""Release of ``helm.sh/helm/v3``: renders, lints and installs ``charts/coscheduler``."""


TRAINING_OPERATOR: Final = "v1.8.1"
"""Release of ``github.com/kubeflow/training-operator`` (PyTorchJob and friends)."""


def staging_version(kubernetes: str = KUBERNETES) -> str:
    """Return the version of the ``k8s.io/*`` staging modules of a release (v1.35.4 -> v0.35.4)."""
    major, minor, patch = kubernetes.removeprefix("v").split(".")
    if major != "1":
        raise ValueError(f"unexpected Kubernetes version {kubernetes!r}: expected v1.MINOR.PATCH")
    return f"v0.{minor}.{patch}"
