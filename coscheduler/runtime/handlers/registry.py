"""The handlers of every kind read, over one scheduler, and the stores they keep.

The table of kinds, and which handler each feeds, is
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
from coscheduler.runtime.handlers.budgets import BudgetHandler
from coscheduler.runtime.handlers.composites import CompositeHandler, CompositeIndex
from coscheduler.runtime.handlers.devices import DeviceHandlers
from coscheduler.runtime.handlers.jobs import JobHandler, JobOwners, VolcanoOwnerHandler
from coscheduler.runtime.handlers.kueue import KueueGangs, KueueWorkloadHandler
from coscheduler.runtime.handlers.namespaces import NamespaceHandler
from coscheduler.runtime.handlers.native_workloads import NativeWorkloadHandler
from coscheduler.runtime.handlers.nodes import NodeHandler
from coscheduler.runtime.handlers.podgroups import PodGroupHandler
from coscheduler.runtime.handlers.pods import PodHandler, UnreadablePods
from coscheduler.runtime.handlers.priority_classes import PriorityClassHandler
from coscheduler.runtime.handlers.queues import QueueHandler
from coscheduler.runtime.handlers.volcano_queues import VolcanoQueueHandler
from coscheduler.runtime.handlers.volumes import VolumeHandlers
from coscheduler.runtime.handlers.workloads import WorkloadGangs, WorkloadHandler

__all__ = ["Handlers"]


@dataclass(frozen=True, slots=True)
class Handlers:
    """One handler per kind over one scheduler, and the stores they keep."""

    groups: Groups
    owners: JobOwners
    gangs: WorkloadGangs
    jobs: JobHandler
    #: Under Volcano's scheduler name: ReplicaSets and StatefulSets, owners of plain pods.
    replica_sets: VolcanoOwnerHandler
    stateful_sets: VolcanoOwnerHandler
    pods: PodHandler
    nodes: NodeHandler
    namespaces: NamespaceHandler
    volumes: VolumeHandlers
    devices: DeviceHandlers
    priority_classes: PriorityClassHandler
    queues: QueueHandler
    volcano_queues: VolcanoQueueHandler
    budgets: BudgetHandler
    workloads: WorkloadHandler
    composites: CompositeHandler
    native_workloads: NativeWorkloadHandler
    kueue_workloads: KueueWorkloadHandler
    podgroups: dict[GroupApi, PodGroupHandler] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        scheduler: Scheduler,
        *,
        complaints: UnreadablePods,
        group_changed: Callable[[GroupKey], None] = lambda _key: None,
        queue_changed: Callable[[str], None] = lambda _name: None,
        owner_changed: Callable[[GangOwner], None] = lambda _owner: None,
        namespace_changed: Callable[[str], None] = lambda _name: None,
        namespaces: frozenset[str] = frozenset(),
        adapters: tuple[GroupAdapter, ...] = ADAPTERS,
        kueue_queue: str = "",
    ) -> Handlers:
        """In dependency order: resolvers and stores first, then the handlers that ask them."""
        owners = JobOwners(scheduler, changed=owner_changed, namespaces=namespaces)
        composites = CompositeIndex()
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
        pods = PodHandler(
            scheduler,
            groups,
            owners=owners,
            gangs=gangs,
            complaints=complaints,
            namespaces=namespaces,
            composites=composites,
            kueue=kueue,
        )
        queues = QueueHandler(scheduler, complaints, queue_changed)
        return cls(
            groups=groups,
            owners=owners,
            gangs=gangs,
            jobs=JobHandler(owners, pods, resized=groups.job_resized),
            replica_sets=VolcanoOwnerHandler(owners, pods, groups.job_resized, "ReplicaSet"),
            stateful_sets=VolcanoOwnerHandler(owners, pods, groups.job_resized, "StatefulSet"),
            pods=pods,
            nodes=NodeHandler(scheduler, complaints),
            namespaces=NamespaceHandler(scheduler, namespace_changed),
            volumes=VolumeHandlers(scheduler, complaints),
            devices=DeviceHandlers(scheduler, complaints),
            priority_classes=PriorityClassHandler(groups),
            queues=queues,
            volcano_queues=VolcanoQueueHandler(scheduler, complaints, queues, queue_changed),
            budgets=BudgetHandler(scheduler, complaints),
            workloads=WorkloadHandler(gangs, pods, complaints, namespaces=namespaces),
            composites=CompositeHandler(
                composites, groups, pods.refeed, complaints, namespaces=namespaces
            ),
            native_workloads=NativeWorkloadHandler(groups, complaints, namespaces=namespaces),
            kueue_workloads=KueueWorkloadHandler(kueue, pods, complaints, namespaces=namespaces),
            podgroups={
                adapter.api: PodGroupHandler(
                    adapter, groups, complaints, refeed=pods.refeed, namespaces=namespaces
                )
                for adapter in adapters
            },
        )
