"""What the controller reads: a lister-like, read-only view of groups, queues and Jobs.

The scheduler-plugins PodGroup controller reads listers only; so does ours.
:class:`ReadModel` answers from the informers' stores and the core's public
views, and hands out nothing it could change. :class:`Changes` tells the
controller what to look at again: the informers and the loop mark, the
controller's writers take (kube-scheduler's informers and their work queues).

The one write is :meth:`ReadModel.record_status`: the status writer's
record of the status it derived and wrote, so its next round compares with
it even before the PodGroup's own watch event comes back (an assumption, as
kube-scheduler's cache assumes a pod bound before the Binding's event). A Kueue
gang's record marks it for the writer of its condition on Kueue's Workload
(:mod:`coscheduler.controller.kueue_conditions`), which reads what was recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable, Mapping
from typing import Generic, TypeVar

from coscheduler.api.adapters import GroupObject
from coscheduler.api.owners import GangOwner
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import PodGroupStatus
from coscheduler.api.queue import Queue
from coscheduler.core.group import KIND_KUEUE, GroupKey
from coscheduler.core.positions import Position
from coscheduler.core.quota import QueueUsage
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.status import Status
from coscheduler.runtime.informers.registry import Informers

__all__ = ["ChangedGroups", "Changes", "Marks", "ReadModel"]

_Item = TypeVar("_Item", bound=Hashable)


class Marks(Generic[_Item]):
    """Things that may have changed since their writer last looked; ``wake`` is set while any."""

    def __init__(self) -> None:
        self._items: set[_Item] = set()
        self.wake = asyncio.Event()

    def mark(self, item: _Item) -> None:
        self._items.add(item)
        self.wake.set()

    def take(self) -> set[_Item]:
        """The items marked so far; marks from now on wake the writer again."""
        items, self._items = self._items, set()
        self.wake.clear()
        return items


class ChangedGroups(Marks[GroupKey]):
    """PodGroups whose status may have changed; a lone pod has no PodGroup to write."""

    def mark(self, item: GroupKey) -> None:
        if not item.lone:
            super().mark(item)


class Changes:
    """The controller's inboxes, made before the informers that mark them."""

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


class ReadModel:
    """Read-only answers for the controller (see the module docstring)."""

    def __init__(
        self, scheduler: Scheduler, informers: Informers, *, kueue: Marks[GroupKey] | None = None
    ) -> None:
        self._scheduler = scheduler
        self._kueue = kueue
        self._groups = informers.groups
        self._composites = informers.composites.composites
        self._queues = informers.queues
        self._owners = informers.owners
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

    def node_labels(self, name: str) -> Mapping[str, str] | None:
        node = self._scheduler.snapshot.node(name)
        return None if node is None else node.labels

    def record_status(self, key: GroupKey, status: PodGroupStatus, stored: object) -> None:
        """The status writer's record of what it derived and wrote (module docstring)."""
        self._groups.set_status(key, status, stored)
        if self._kueue is not None and key.kind == KIND_KUEUE:
            self._kueue.mark(key)

    # -- queues and Jobs -------------------------------------------------------

    def queues(self) -> Mapping[str, Queue]:
        return dict(self._queues.objects)

    def queue_usage(self, name: str) -> QueueUsage:
        return self._scheduler.quotas.report(name)

    def owner(self, uid: str) -> GangOwner | None:
        """The Job of that uid as it is now; None once deleted."""
        return self._owners.owners.get(uid)
