"""Every kind coscheduler reads, in one table.

:data:`KINDS` says, per kind: where it is read (a fixed collection path, or
API discovery at start: :mod:`coscheduler.runtime.discovery`), whether the
settings want it, its stage (a stage is applied whole before the next one),
what to do when the process may not read it or the API is not there yet,
which transport feeds it, and which informer of
:class:`~coscheduler.runtime.informers.registry.Informers` it feeds.
:mod:`coscheduler.runtime.ingest` runs the table. Adding a kind is one row
here and one small informer module (docs/design.md, "How to add a kind").

Light on purpose: the table is read before the core is imported, so the
first lists are on their way while it is (issue #28): the informers are
named, not imported, and each kind is known by its path and version alone
(the PodGroup APIs by :data:`~coscheduler.api.adapters.apis.PODGROUPS`), its
models and adapters imported with the deciding side.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coscheduler.api.adapters import apis
from coscheduler.api.adapters.apis import GroupApi
from coscheduler.core.preemption.mode import Mode as PreemptionMode
from coscheduler.runtime import discovery
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.settings import Settings

if TYPE_CHECKING:
    from coscheduler.runtime.informers.base import Informer
    from coscheduler.runtime.informers.registry import Informers

__all__ = ["KINDS", "Kind", "Transport"]


class Transport(enum.Enum):
    """What feeds a kind's informer."""

    #: Our list-then-watch (:mod:`coscheduler.runtime.watch`): the one engine (docs/design.md).
    WATCH = "watch"


def _always(_: Settings) -> bool:
    return True


def _preempting(settings: Settings) -> bool:
    return settings.preemption is not PreemptionMode.OFF


@dataclass(frozen=True, slots=True)
class Kind:
    """One row of the table."""

    #: Names the watch task and the log lines.
    name: str
    #: The informer this kind feeds.
    informer: Callable[[Informers], Informer]
    #: Its collection path, when always served; else ``served`` asks discovery.
    path: str | None = None
    served: Callable[[KubeClient], Awaitable[str | None]] | None = None
    #: Whether these settings read it at all.
    wanted: Callable[[Settings], bool] = _always
    #: Stages are listed in order, each whole before the next starts.
    stage: int = 1
    #: The process may not list it (an older ClusterRole): run without it, logging this.
    if_forbidden: str | None = None
    #: The list answers 404 (a CRD not installed yet): none of it, logging this; tried again.
    if_missing: str | None = None
    transport: Transport = Transport.WATCH

    async def where(self, client: KubeClient, settings: Settings) -> str | None:
        """The path to read with these settings, or None."""
        if not self.wanted(settings):
            return None
        return self.path if self.served is None else await self.served(client)


_RBAC = "apply manifests/rbac.yaml"


def _podgroups(api: GroupApi) -> Kind:
    # Ours must be readable; an upgrade that kept an older ClusterRole may miss another.
    forbidden = "PodGroup API served but not readable by this ServiceAccount: its groups wait"
    native = api in apis.NATIVE
    if native:
        missing = "Kubernetes' PodGroup API is no longer served: pods naming one wait"
    else:
        missing = (
            "the PodGroup CRD is not installed: pods that name a group will wait; "
            "install it with kubectl apply -f crds/podgroups.yaml"
        )
    return Kind(
        f"podgroups.{api.group}/{api.version}" if native else f"podgroups.{api.group}",
        lambda informers: informers.podgroups[api],
        served=discovery.podgroups(api),
        if_forbidden=None if api == apis.PODGROUPS[0] else f"{forbidden}; {_RBAC}",
        if_missing=missing,
    )


#: The DRA kinds (``resource.k8s.io/v1``, served by default since Kubernetes 1.34).
_DEVICE_KINDS: tuple[tuple[str, Callable[[Informers], Informer]], ...] = (
    ("resourceslices", lambda informers: informers.devices.slices),
    ("deviceclasses", lambda informers: informers.devices.classes),
    ("resourceclaims", lambda informers: informers.devices.claims),
    ("resourceclaimtemplates", lambda informers: informers.devices.templates),
)

#: Every kind read, the one table (see the module docstring).
KINDS: tuple[Kind, ...] = (
    # Jobs first of all: pods join their Job's gang from the first pod.
    Kind(
        "jobs",
        lambda informers: informers.jobs,
        path="/apis/batch/v1/jobs",
        stage=0,
        if_forbidden="Jobs not readable by this ServiceAccount: Jobs annotated "
        "scheduling.sigs.k8s.io/gang get no PodGroup and their pods are placed one by one; "
        + _RBAC,
    ),
    Kind("nodes", lambda informers: informers.nodes, path="/api/v1/nodes"),
    Kind("pods", lambda informers: informers.pods, path="/api/v1/pods"),
    Kind("namespaces", lambda informers: informers.namespaces, path="/api/v1/namespaces"),
    Kind(
        "persistentvolumeclaims",
        lambda informers: informers.volumes.claims,
        path="/api/v1/persistentvolumeclaims",
    ),
    Kind(
        "persistentvolumes",
        lambda informers: informers.volumes.volumes,
        path="/api/v1/persistentvolumes",
    ),
    Kind(
        "storageclasses",
        lambda informers: informers.volumes.storage_classes,
        path="/apis/storage.k8s.io/v1/storageclasses",
    ),
    Kind(
        "csinodes",
        lambda informers: informers.volumes.csinodes,
        path="/apis/storage.k8s.io/v1/csinodes",
    ),
    *(
        Kind(
            name,
            informer,
            path=f"/apis/resource.k8s.io/v1/{name}",
            if_forbidden=f"{name} not readable by this ServiceAccount: pods with "
            f"resourceClaims wait; {_RBAC}",
            if_missing=f"resource.k8s.io/v1 {name} not served: pods with resourceClaims wait",
        )
        for name, informer in _DEVICE_KINDS
    ),
    Kind(
        "priorityclasses",
        lambda informers: informers.priority_classes,
        path="/apis/scheduling.k8s.io/v1/priorityclasses",
    ),
    Kind(
        "poddisruptionbudgets",
        lambda informers: informers.budgets,
        path="/apis/policy/v1/poddisruptionbudgets",
        wanted=_preempting,
    ),
    Kind("queues", lambda informers: informers.queues, served=discovery.queues),
    *(_podgroups(api) for api in apis.PODGROUPS),
    Kind(
        "workloads",
        lambda informers: informers.workloads,
        served=discovery.workloads,
        if_forbidden="Workload API served but not readable by this ServiceAccount: pods "
        f"naming a Workload wait; {_RBAC}",
    ),
    Kind(
        "compositepodgroups",
        lambda informers: informers.composites,
        served=discovery.composites,
        if_forbidden="CompositePodGroup API served but not readable by this ServiceAccount: "
        f"pods of PodGroups naming one wait; {_RBAC}",
        if_missing="the CompositePodGroup API is no longer served: pods of PodGroups naming "
        "one wait",
    ),
    Kind(
        "workloads.scheduling.k8s.io/native",
        lambda informers: informers.native_workloads,
        served=discovery.native_workloads,
        if_forbidden="Workload API served but not readable by this ServiceAccount: a native "
        f"PodGroup does not take its Workload's queue label; {_RBAC}",
    ),
    Kind(
        "workloads.kueue.x-k8s.io",
        lambda informers: informers.kueue_workloads,
        served=discovery.kueue_workloads,
        if_forbidden="Kueue's Workloads not readable by this ServiceAccount: the pods of jobs "
        f"Kueue admits wait; {_RBAC}",
        if_missing="Kueue's Workload CRD is no longer served: the pods of jobs Kueue admits wait",
    ),
)
