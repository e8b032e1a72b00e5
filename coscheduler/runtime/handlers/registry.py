"""The informers of every kind read, over one scheduler, and the stores they keep.

The table of kinds, and which informer each feeds, is
:mod:`coscheduler.runtime.handlers.kinds`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from coscheduler.api.adapters.apis import GroupApi
from coscheduler.api.adapters.base import GroupAdapter
from coscheduler.api.adapters.table import ADAPTERS
from coscheduler.api.owners import GangOwner
from coscheduler.core.group import GroupKey
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.groups import Groups
from coscheduler.runtime.handlers.budgets import BudgetInformer
from coscheduler.runtime.handlers.composites import CompositeInformer, Composites
from coscheduler.runtime.handlers.devices import DeviceInformers
from coscheduler.runtime.handlers.jobs import JobInformer, JobOwners, VolcanoOwnerInformer
from coscheduler.runtime.handlers.kueue import KueueGangs, KueueWorkloadInformer
from coscheduler.runtime.handlers.namespaces import NamespaceInformer
from coscheduler.runtime.handlers.native_workloads import NativeWorkloadInformer
from coscheduler.runtime.handlers.nodes import NodeInformer
from coscheduler.runtime.handlers.podgroups import PodGroupInformer
from coscheduler.runtime.handlers.pods import PodInformer, UnreadablePods
from coscheduler.runtime.handlers.priority_classes import PriorityClassInformer
from coscheduler.runtime.handlers.queues import QueueInformer
from coscheduler.runtime.handlers.volcano_queues import VolcanoQueueInformer
from coscheduler.runtime.handlers.volumes import VolumeInformers
from coscheduler.runtime.handlers.workloads import WorkloadGangs, WorkloadInformer

__all__ = ["Informers"]


@dataclass(frozen=True, slots=True)
class Informers:
    """One informer per kind over one scheduler, and the stores they keep."""

    groups: Groups
    owners: JobOwners
    gangs: WorkloadGangs
    jobs: JobInformer
    #: Under Volcano's scheduler name: ReplicaSets and StatefulSets, owners of plain pods.
    replica_sets: VolcanoOwnerInformer
    stateful_sets: VolcanoOwnerInformer
    pods: PodInformer
    nodes: NodeInformer
    namespaces: NamespaceInformer
    volumes: VolumeInformers
    devices: DeviceInformers
    priority_classes: PriorityClassInformer
    queues: QueueInformer
    volcano_queues: VolcanoQueueInformer
    budgets: BudgetInformer
    workloads: WorkloadInformer
    composites: CompositeInformer
    native_workloads: NativeWorkloadInformer
    kueue_workloads: KueueWorkloadInformer
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
        kueue_queue: str = "",
    ) -> Informers:
        """In dependency order: resolvers and stores first, then the informers that ask them."""
        owners = JobOwners(scheduler, changed=owner_changed, namespaces=namespaces)
        composites = Composites()
        groups = Groups(
            scheduler,
            complaints=complaints,
            changed=composites.fan_out(group_changed),
            owners=owners,
            composites=composites,
            adapters=adapters,
        )
        gangs = WorkloadGangs(scheduler, groups)
        kueue = KueueGangs(scheduler, groups, queue=kueue_queue)
        pods = PodInformer(
            scheduler,
            groups,
            owners=owners,
            gangs=gangs,
            complaints=complaints,
            namespaces=namespaces,
            composites=composites,
            kueue=kueue,
        )
        queues = QueueInformer(scheduler, complaints, queue_changed)
        return cls(
            groups=groups,
            owners=owners,
            gangs=gangs,
            jobs=JobInformer(owners, pods, resized=groups.job_resized),
            replica_sets=VolcanoOwnerInformer(owners, pods, groups.job_resized, "ReplicaSet"),
            stateful_sets=VolcanoOwnerInformer(owners, pods, groups.job_resized, "StatefulSet"),
            pods=pods,
            nodes=NodeInformer(scheduler, complaints),
            namespaces=NamespaceInformer(scheduler),
            volumes=VolumeInformers(scheduler, complaints),
            devices=DeviceInformers(scheduler, complaints),
            priority_classes=PriorityClassInformer(groups),
            queues=queues,
            volcano_queues=VolcanoQueueInformer(scheduler, complaints, queues, queue_changed),
            budgets=BudgetInformer(scheduler, complaints),
            workloads=WorkloadInformer(gangs, pods, complaints, namespaces=namespaces),
            composites=CompositeInformer(
                composites, groups, pods.refeed, complaints, namespaces=namespaces
            ),
            native_workloads=NativeWorkloadInformer(groups, complaints, namespaces=namespaces),
            kueue_workloads=KueueWorkloadInformer(kueue, pods, complaints, namespaces=namespaces),
            podgroups={
                adapter.api: PodGroupInformer(
                    adapter, groups, complaints, refeed=pods.refeed, namespaces=namespaces
                )
                for adapter in adapters
            },
        )
