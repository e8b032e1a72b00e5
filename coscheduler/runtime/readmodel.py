"""What the controller reads: a lister-like, read-only view of groups, queues and Jobs.

The scheduler-plugins PodGroup controller reads listers only; so does ours.
:class:`ReadModel` answers from the handlers' stores and the scheduler's reads
(:class:`~coscheduler.core.scheduler_reads.SchedulerReads`), and hands out nothing
it could change. :class:`Changes` tells the controller what to look at again: the
handlers and the loop mark, the controller's writers take (kube-scheduler's informers
and their work queues).
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable, Mapping
from typing import Generic, TypeVar

from coscheduler.api.adapters.base import GroupObject
from coscheduler.api.adapters.volcano_queue import VolcanoQueue
from coscheduler.api.node import NodeInfo
from coscheduler.api.owners import GangOwner
from coscheduler.api.pod import PodInfo
from coscheduler.api.queue import Queue
from coscheduler.core.group import GroupKey
from coscheduler.core.positions import Position
from coscheduler.core.quota import QueuePolicy, QueueUsage
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.status import Status
from coscheduler.runtime.handlers.queues import queue_policy
from coscheduler.runtime.handlers.registry import Handlers

__all__ = ["ChangedGroups", "Changes", "Marks", "ReadModel"]

_Item = TypeVar("_Item", bound=Hashable)


class Marks(Generic[_Item]):
    """Things that may have changed since their writer last looked; ``wake`` is set while any.

    A handler that follows one item (the controller's Kopf handler of a Queue)
    is woken by its own event as well (:meth:`follow`).
    """

    def __init__(self) -> None:
        self._items: set[_Item] = set()
        self._followers: dict[_Item, set[asyncio.Event]] = {}
        self.wake = asyncio.Event()

    def mark(self, item: _Item) -> None:
        self._items.add(item)
        self.wake.set()
        for woken in self._followers.get(item, ()):
            woken.set()

    def follow(self, item: _Item, woken: asyncio.Event) -> None:
        """Set ``woken`` whenever ``item`` is marked, until :meth:`unfollow`."""
        self._followers.setdefault(item, set()).add(woken)

    def unfollow(self, item: _Item, woken: asyncio.Event) -> None:
        followers = self._followers.get(item)
        if followers is not None:
            followers.discard(woken)
            if not followers:
                del self._followers[item]

    def take(self) -> set[_Item]:
        """The items marked so far; marks from now on wake the writer again."""
        items, self._items = self._items, set()
        self.wake.clear()
        return items


class ChangedGroups(Marks[GroupKey]):
    """PodGroups whose status may have changed; a lone pod has no PodGroup to write.

    A handler that follows one namespace's groups (the controller's Kopf handler
    of a Namespace) has an inbox of its own, given the marks of that namespace's
    groups and woken when the namespace changes (:meth:`follow_namespace`).
    """

    def __init__(self) -> None:
        super().__init__()
        self._namespaces: dict[str, set[Marks[GroupKey]]] = {}

    def mark(self, item: GroupKey) -> None:
        if not item.lone:
            super().mark(item)
            for inbox in self._namespaces.get(item.namespace, ()):
                inbox.mark(item)

    def follow_namespace(self, namespace: str, inbox: Marks[GroupKey]) -> None:
        """Mark ``inbox`` too with the groups of ``namespace``, until :meth:`unfollow_namespace`."""
        self._namespaces.setdefault(namespace, set()).add(inbox)

    def unfollow_namespace(self, namespace: str, inbox: Marks[GroupKey]) -> None:
        inboxes = self._namespaces.get(namespace)
        if inboxes is not None:
            inboxes.discard(inbox)
            if not inboxes:
                del self._namespaces[namespace]

    def namespace_changed(self, namespace: str) -> None:
        """Wake the namespace's inboxes: it may be gone, or have come."""
        for inbox in self._namespaces.get(namespace, ()):
            inbox.wake.set()


class Changes:
    """The controller's inboxes, made before the handlers that mark them."""

    def __init__(self) -> None:
        self.groups = ChangedGroups()
        #: Queues (by name) whose status may have changed; any group's change counts.
        self.queues = Marks[str]()
        #: Jobs (by uid) whose PodGroup may need making or following.
        self.owners = Marks[str]()
        #: Kueue gangs whose status was recorded: their Workload's condition may change.
        self.kueue = Marks[GroupKey]()

    def group(self, key: GroupKey) -> None:
        self.groups.mark(key)
        self.queues.mark("")

    def queue(self, name: str) -> None:
        self.queues.mark(name)

    def owner(self, owner: GangOwner) -> None:
        self.owners.mark(owner.uid)

    def namespace(self, name: str) -> None:
        self.groups.namespace_changed(name)


class ReadModel:
    """Read-only answers for the controller (see the module docstring)."""

    def __init__(self, scheduler: Scheduler, handlers: Handlers) -> None:
        self._scheduler = scheduler
        self._groups = handlers.groups
        self._composites = handlers.composites.index
        self._queues = handlers.queues
        self._namespaces = handlers.namespaces
        self._volcano_queues = handlers.volcano_queues
        self._owners = handlers.owners
        self.scheduler_name = scheduler.settings.scheduler_name

    # -- groups ---------------------------------------------------------------

    def group_keys(self) -> list[GroupKey]:
        return list(self._groups.podgroups)

    def groups(self) -> Iterable[GroupObject]:
        return list(self._groups.podgroups.values())

    def group(self, key: GroupKey) -> GroupObject | None:
        return self._groups.podgroups.get(key)

    def members(self, key: GroupKey) -> list[PodInfo]:
        """Every pod that names the group, whatever its phase or scheduler (a child
        of a composite's gang: its own pods among the composite's)."""
        whole = self._composites.whole_of(key)
        if whole is None:
            return self._groups.group_pods(key)
        return [pod for pod in self._groups.group_pods(whole) if pod.role == key.name]

    def verdict(self, key: GroupKey) -> Status | None:
        """The core's status of the group's latest failed attempt, if it is failing (a
        child of a composite's gang: the composite's)."""
        whole = self._composites.whole_of(key)
        return self._groups.verdicts.get(key if whole is None else whole)

    def queue_positions(self) -> dict[GroupKey, Position]:
        """Each pending group's place in its queue and in the cluster (the core's)."""
        return self._scheduler.queue_positions()

    def said_position(self, key: GroupKey) -> tuple[int, int] | None:
        """The place in line the group's status holds (queue, cluster), if it holds one."""
        group = self._groups.podgroups.get(key)
        if group is None:
            return None
        status = group.status
        if status.queue_position is None or status.cluster_position is None:
            return None
        return status.queue_position, status.cluster_position

    def namespace_version(self, name: str) -> str | None:
        """The namespace's resourceVersion as last read; None when it is not (or no longer) read."""
        return self._namespaces.version(name)

    def node_labels(self, name: str) -> Mapping[str, str] | None:
        node = self._scheduler.snapshot.node(name)
        return None if node is None else node.labels

    # -- queues and Jobs -------------------------------------------------------

    def queues(self) -> Mapping[str, Queue]:
        return dict(self._queues.objects)

    def volcano_queues(self) -> Mapping[str, VolcanoQueue]:
        """Volcano's Queues as last read, by name (a name ours holds among them)."""
        return {name: queue for name, (queue, _) in self._volcano_queues.objects.items()}

    def queue_allows(self, name: str, namespace: str) -> bool:
        """Whether the Queue of that name lets groups of ``namespace`` draw from it (its
        ``namespaces`` and ``namespaceSelector``, against the namespace's labels)."""
        queue = self._queues.objects.get(name)
        if queue is None:
            return True
        labels = self._scheduler.snapshot.topology.namespace_labels.get(namespace, {})
        return queue_policy(queue).allows(namespace, labels)

    def queue_usage(self, name: str) -> QueueUsage:
        return self._scheduler.quotas.report(name)

    def queue_policy(self, name: str) -> QueuePolicy | None:
        """The queue as the core holds it (amounts in the scheduler's integers)."""
        return self._scheduler.quotas.policy(name)

    def capacity(self) -> dict[str, int]:
        """Allocatable capacity summed over schedulable nodes (what queues share)."""
        return self._scheduler.snapshot.capacity()

    def owner(self, uid: str) -> GangOwner | None:
        """The Job of that uid as it is now; None once deleted."""
        return self._owners.owners.get(uid)

    # -- nodes and plans (the dashboard's room) ----------------------------------

    def nodes(self) -> list[NodeInfo]:
        """Every node known, in name order."""
        return list(self._scheduler.snapshot.nodes())

    def allocated(self, node: str) -> dict[str, int]:
        """What bound and assumed pods take on the node (non-zero amounts)."""
        return self._scheduler.snapshot.allocated(node)

    def pods_on(self, node: str) -> list[PodInfo]:
        """The pods bound (or assumed) on the node."""
        return self._scheduler.snapshot.pods_on(node)

    def devices_by_class(self) -> dict[str | None, dict[str, tuple[int, int]]]:
        """Per node (None: devices reached through a node selector or from every node), per
        DeviceClass: its devices and how many are free (:meth:`DeviceIndex.by_class`)."""
        return self._scheduler.snapshot.devices.by_class()

    def preemption_plan(self, key: GroupKey) -> str | None:
        """The plan whose victims are going for the group, said for people, if any."""
        hold = self._scheduler.hold(key)
        return None if hold is None else hold.plan.summary
