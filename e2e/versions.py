"""The one place where the versions of the local control plane are pinned.

Why these: Kubernetes 1.37.2 is the current release, and with it the native
gang API (``scheduling.k8s.io/v1beta1``) that the benchmarks compare against;
1.35.4 is the oldest supported minor whose staging modules are all served
(1.34.7 is not complete). etcd 3.6 is the line Kubernetes 1.35-1.37 is tested
with and has ``--unsafe-no-fsync``. KWOK v0.7.0 installs with a plain
``go install`` and still falls back to its built-in stages when given none.
Helm v3.22.0 is the newest Helm 3 release the proxy serves (``go list -m
-versions helm.sh/helm/v3``); its go.mod has no ``replace`` lines, so it
installs with a plain ``go install`` too. The Kubeflow training operator
v1.8.1 is the only release the proxy lists (``go list -m -versions
github.com/kubeflow/training-operator``); with ``--gang-scheduler-name`` it
creates scheduler-plugins' PodGroups. Its go.mod has no ``replace`` lines
either, and it is built only when a test asks for it.

Kubernetes is the one component with several supported versions: the three
minors upstream supports (1.35-1.37), the newest by default. One process runs
one version, chosen by ``COSCHEDULER_KUBERNETES`` (``v1.35.4`` or just
``1.35``); CI runs everything on the default and the version-sensitive tests
on the oldest. 1.36.3 and 1.37.2 lack a staging module or two at the proxy
(``k8s.io/sample-cli-plugin``, ``k8s.io/sample-controller``, which no binary
imports): the build takes the newest served patch of the same minor for those.
"""

from __future__ import annotations

import os
from typing import Final

SUPPORTED_KUBERNETES: Final = ("v1.35.4", "v1.36.3", "v1.37.2")
"""Releases of ``k8s.io/kubernetes`` the project builds, tests and supports, oldest first."""

DEFAULT_KUBERNETES: Final = SUPPORTED_KUBERNETES[-1]

KUBERNETES_ENV: Final = "COSCHEDULER_KUBERNETES"
"""Names the release to build and run instead of the default (``v1.35.4`` or ``1.35``)."""


def choose_kubernetes(requested: str | None) -> str:
    """The supported release ``requested`` names (in full or ``MAJOR.MINOR``), else the default."""
    if not requested:
        return DEFAULT_KUBERNETES
    wanted = requested.strip().removeprefix("v")
    for release in SUPPORTED_KUBERNETES:
        full = release.removeprefix("v")
        if wanted in (full, full.rsplit(".", 1)[0]):
            return release
    supported = ", ".join(SUPPORTED_KUBERNETES)
    raise ValueError(f"{KUBERNETES_ENV}={requested!r} is not a supported release ({supported})")


KUBERNETES: Final = choose_kubernetes(os.environ.get(KUBERNETES_ENV))
"""The release of ``k8s.io/kubernetes`` this process runs (staging modules v0.MINOR.PATCH)."""

ETCD: Final = "v3.6.5"
"""Release of ``go.etcd.io/etcd/server/v3``."""

KWOK: Final = "v0.7.0"
"""Release of ``sigs.k8s.io/kwok``."""

HELM: Final = "v3.22.0"
"""Release of ``helm.sh/helm/v3``: renders, lints and installs ``charts/coscheduler``."""


TRAINING_OPERATOR: Final = "v1.8.1"
"""Release of ``github.com/kubeflow/training-operator`` (PyTorchJob and friends)."""


KUEUE: Final = "v0.17.0"
"""Release of ``sigs.k8s.io/kueue`` (the Kueue bench peer): no ``replace`` lines in its
go.mod, its CRDs and webhook manifests in the module; built only when asked for."""


KUBERAY: Final = "v1.5.0"
"""Release of ``github.com/ray-project/kuberay/ray-operator``: with
``--batch-scheduler=scheduler-plugins`` it makes a ``scheduling.x-k8s.io`` PodGroup per
gang-scheduled RayCluster (head + workers); built only when its test asks for it."""


def staging_version(kubernetes: str = KUBERNETES) -> str:
    """Return the version of the ``k8s.io/*`` staging modules of a release (v1.35.4 -> v0.35.4)."""
    major, minor, patch = kubernetes.removeprefix("v").split(".")
    if major != "1":
        raise ValueError(f"unexpected Kubernetes version {kubernetes!r}: expected v1.MINOR.PATCH")
    return f"v0.{minor}.{patch}"


def minor(kubernetes: str = KUBERNETES) -> int:
    """The minor version of a release (v1.37.2 -> 37)."""
    return int(kubernetes.removeprefix("v").split(".")[1])


def native_gang_feature_gates(kubernetes: str = KUBERNETES, *, job_workloads: bool = False) -> str:
    """The ``--feature-gates`` that turn on Kubernetes' own gang API in a release.

    1.35: the Workload API and its GangScheduling plugin (both alpha). 1.36
    splits the gang out of the Workload into PodGroups (``v1alpha2``) and adds
    topology-aware scheduling. 1.37: the API is beta (``GangScheduling``
    merged into ``GenericWorkload``, still off by default) and CompositePodGroup
    and per-group preemption policy arrive; ``DRAWorkloadResourceClaims`` (beta,
    off by default) lets a PodGroup name claims its members share
    (``spec.resourceClaims``, reserved for the group).

    ``job_workloads`` adds ``WorkloadWithJob`` (1.36 on): the Job controller
    then gives every Job without an owner a Workload and a PodGroup and its
    pods ``spec.schedulingGroup``, which makes every Job a native gang; so it
    is a choice of its own, not part of the gang API.
    """
    release = minor(kubernetes)
    if release <= 35:
        if job_workloads:
            raise ValueError(f"the Job controller of {kubernetes} makes no Workloads (1.36 on)")
        gates = ["GenericWorkload", "GangScheduling"]
    elif release == 36:
        gates = ["GenericWorkload", "GangScheduling", "TopologyAwareWorkloadScheduling"]
    else:
        gates = ["GenericWorkload", "TopologyAwareWorkloadScheduling", "CompositePodGroup",
                 "PodGroupPreemptionPolicy", "DRAWorkloadResourceClaims"]  # fmt: skip
    if job_workloads:
        gates.append("WorkloadWithJob")
    return ",".join(f"{gate}=true" for gate in gates)


def native_gang_api_versions(kubernetes: str = KUBERNETES) -> tuple[str, ...]:
    """The ``scheduling.k8s.io`` versions that serve the gang API of a release."""
    release = minor(kubernetes)
    if release <= 35:
        return ("v1alpha1",)
    if release == 36:
        return ("v1alpha2",)
    return ("v1beta1", "v1alpha3")


def native_gang_runtime_config(kubernetes: str = KUBERNETES) -> str:
    """kube-apiserver's ``--runtime-config`` serving those versions (none is on by default)."""
    return ",".join(f"scheduling.k8s.io/{v}=true" for v in native_gang_api_versions(kubernetes))


def release_mismatch(wanted: tuple[str, ...], kubernetes: str = KUBERNETES) -> str | None:
    """Why a test for the releases ``wanted`` (``"1.35"`` or ``"v1.35.4"``) cannot run, or None.

    The ``kubernetes`` marker of e2e's tests (e2e/tests/conftest.py) skips with this reason.
    """
    if not wanted:
        raise ValueError("name at least one release: @pytest.mark.kubernetes('1.35')")
    if kubernetes in {choose_kubernetes(release) for release in wanted}:
        return None
    names = " or ".join(choose_kubernetes(release) for release in wanted)
    return f"needs Kubernetes {names}; this session runs {kubernetes} ({KUBERNETES_ENV} chooses)"
