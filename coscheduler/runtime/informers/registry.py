"""Every kind coscheduler reads, in one table, and the informers they feed.

:data:`KINDS` says, per kind: where it is read (a fixed collection path, or
API discovery at start: :mod:`coscheduler.runtime.discovery`), whether the
settings want it, its stage (a stage is listed whole before the next one
starts), what to do when the process may not read it or the API is not
there yet, which transport feeds it, and which informer of
:class:`Informers` it feeds. :mod:`coscheduler.runtime.ingest` runs the
table. Adding a kind is one row here and one small informer module
(docs/design.md, "How to add a kind").
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from coscheduler.api.adapters import ADAPTERS, GroupAdapter, GroupApi, native
from coscheduler.api.owners import GangOwner
from coscheduler.core.group import GroupKey
from coscheduler.core.preemption import Mode as PreemptionMode
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime import discovery
from coscheduler.runtime.groups import Groups
from coscheduler.runtime.informers.base import Informer
from coscheduler.runtime.informers.budgets import BudgetInformer
from coscheduler.runtime.informers.composites import CompositeInformer, Composites
from coscheduler.runtime.informers.devices import DeviceInformers
from coscheduler.runtime.informers.jobs import JobInformer, JobOwners
from coscheduler.runtime.informers.namespaces import NamespaceInformer
from coscheduler.runtime.informers.native_workloads import NativeWorkloadInformer
from coscheduler.runtime.informers.nodes import NodeInformer
from coscheduler.runtime.informers.podgroups import PodGroupInformer
from coscheduler.runtime.informers.pods import PodInformer, UnreadablePods
from coscheduler.runtime.informers.priority_classes import PriorityClassInformer
from coscheduler.runtime.informers.queues import QueueInformer
from coscheduler.runtime.informers.volumes import VolumeInformers
from coscheduler.runtime.informers.workloads import WorkloadGangs, WorkloadInformer
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.settings import Settings

__all__ = ["KINDS", "Informers", "Kind", "Transport"]


@dataclass(frozen=True, slots=True)
class Informers:
    """One informer per kind over one scheduler, and the stores they keep."""

    groups: Groups
    owners: JobOwners
    gangs: WorkloadGangs
    jobs: JobInformer
    pods: PodInformer
    nodes: NodeInformer
    namespaces: NamespaceInformer
    volumes: VolumeInformers
    devices: DeviceInformers
    priority_classes: PriorityClassInformer
    queues: QueueInformer
    budgets: BudgetInformer
    workloads: WorkloadInformer
    composites: CompositeInformer
    native_workloads: NativeWorkloadInformer
    podgroups: dict[GroupApi, PodGroupInformer] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        scheduler: Scheduler,
        *,
        complaints: UnreadablePods,
        group_changed: Callable[[GroupKey], None] = lambda _key: None,
        queue_changed: Callable[[str], None] = lambda _name: None,
        owner_changed: Callable[[GangOwner], None] = lambda _owner: None,
        namespaces: frozenset[str] = frozenset(),
        adapters: tuple[GroupAdapter, ...] = ADAPTERS,
    ) -> Informers:
        """In dependency order: resolvers and stores first, then the informers that ask them."""
        owners = JobOwners(scheduler, changed=owner_changed, namespaces=namespaces)
        composites = Composites()
        groups = Groups(
            scheduler,
            complaints=complaints,
            changed=composites.fan_out(group_changed),
            owners=owners,
            adapters=adapters,
        )
        owners.resized = groups.job_resized
        gangs = WorkloadGangs(scheduler, groups)
        pods = PodInformer(
            scheduler,
            groups,
            owners=owners,
            gangs=gangs,
            complaints=complaints,
            namespaces=namespaces,
            composites=composites,
        )
        composites.attach(groups, pods.refeed)
        return cls(
            groups=groups,
            owners=owners,
            gangs=gangs,
            jobs=JobInformer(owners, pods),
            pods=pods,
            nodes=NodeInformer(scheduler, complaints),
            namespaces=NamespaceInformer(scheduler),
            volumes=VolumeInformers(scheduler, complaints),
            devices=DeviceInformers(scheduler, complaints),
            priority_classes=PriorityClassInformer(groups),
            queues=QueueInformer(scheduler, complaints, queue_changed),
            budgets=BudgetInformer(scheduler, complaints),
            workloads=WorkloadInformer(gangs, pods, complaints, namespaces=namespaces),
            composites=CompositeInformer(composites, complaints, namespaces=namespaces),
            native_workloads=NativeWorkloadInformer(groups, complaints, namespaces=namespaces),
            podgroups={
                adapter.api: PodGroupInformer(adapter, groups, complaints, namespaces=namespaces)
                for adapter in adapters
            },
        )


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


def _podgroups(adapter: GroupAdapter) -> Kind:
    # Ours must be readable; an upgrade that kept an older ClusterRole may miss another.
    forbidden = "PodGroup API served but not readable by this ServiceAccount: its groups wait"
    if isinstance(adapter, native.NativeAdapter):
        missing = "Kubernetes' PodGroup API is no longer served: pods naming one wait"
    else:
        missing = (
            "the PodGroup CRD is not installed: pods that name a group will wait; "
            "install it with kubectl apply -f crds/podgroups.yaml"
        )
    return Kind(
        f"podgroups.{adapter.api.group}/{adapter.api.version}"
        if isinstance(adapter, native.NativeAdapter)
        else f"podgroups.{adapter.api.group}",
        lambda informers: informers.podgroups[adapter.api],
        served=discovery.podgroups(adapter),
        if_forbidden=None if adapter is ADAPTERS[0] else f"{forbidden}; {_RBAC}",
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
    *(_podgroups(adapter) for adapter in ADAPTERS),
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
)
