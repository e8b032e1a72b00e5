"""The informers of one scheduler, fed by hand, for tests without an API server.

One method per kind and verb (``upsert_pod``, ``replace_nodes``...), each the
informer of :class:`~coscheduler.runtime.informers.registry.Informers` the
watch would call; complaints are collected instead of reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from coscheduler.api.adapters import sigs
from coscheduler.api.adapters.base import GroupAdapter, GroupObject
from coscheduler.api.adapters.table import ADAPTERS
from coscheduler.api.owners import GangOwner
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import PodGroupStatus
from coscheduler.api.queue import Queue
from coscheduler.core.group import GroupKey
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.status import Status
from coscheduler.runtime.informers.base import InvalidObject
from coscheduler.runtime.informers.registry import Informers

Raw = Mapping[str, Any]


class Complaints:
    """What a reporter would be told: unreadable objects, and which unreadable pods wait."""

    def __init__(self, on_invalid: Callable[[InvalidObject], None] | None = None) -> None:
        self._on_invalid = on_invalid
        self.waiting_uids: set[str] = set()

    def invalid(self, obj: InvalidObject) -> None:
        if self._on_invalid is not None:
            self._on_invalid(obj)

    def waiting(self, uid: str, waits: bool) -> None:
        if waits:
            self.waiting_uids.add(uid)
        else:
            self.waiting_uids.discard(uid)


class Informed:
    """A scheduler and its informers (see the module docstring)."""

    def __init__(
        self,
        scheduler: Scheduler,
        *,
        on_group_changed: Callable[[GroupKey], None] = lambda _key: None,
        on_invalid: Callable[[InvalidObject], None] | None = None,
        on_owner_changed: Callable[[GangOwner], None] = lambda _owner: None,
        on_queue_changed: Callable[[str], None] = lambda _name: None,
        namespaces: frozenset[str] = frozenset(),
        adapters: tuple[GroupAdapter, ...] = ADAPTERS,
        kueue_queue: str = "",
    ) -> None:
        self.scheduler = scheduler
        self.namespaces = namespaces
        self.complaints = Complaints(on_invalid)
        self.informers = Informers.build(
            scheduler,
            complaints=self.complaints,
            group_changed=on_group_changed,
            queue_changed=on_queue_changed,
            owner_changed=on_owner_changed,
            namespaces=namespaces,
            adapters=adapters,
            kueue_queue=kueue_queue,
        )
        self.groups = self.informers.groups

    # -- what the stores hold -----------------------------------------------------

    @property
    def podgroups(self) -> dict[GroupKey, GroupObject]:
        return self.groups.podgroups

    @property
    def queues(self) -> dict[str, Queue]:
        return self.informers.queues.objects

    @property
    def owners_watched(self) -> bool:
        return self.informers.owners.watched

    @owners_watched.setter
    def owners_watched(self, watched: bool) -> None:
        """As the Jobs' list does (``watched``) or a process that may not list them."""
        self.informers.owners.watched = watched

    @property
    def owners(self) -> dict[str, GangOwner]:
        return self.informers.owners.owners

    def group_pods(self, key: GroupKey) -> list[PodInfo]:
        return self.groups.group_pods(key)

    def unreadable_group(self, key: GroupKey) -> str | None:
        return self.groups.unreadable_group(key)

    def unreadable_waiting(self, uid: str) -> bool:
        return uid in self.complaints.waiting_uids

    def owner_of_group(self, key: GroupKey) -> GangOwner | None:
        return self.informers.owners.owner_of_group(key)

    def owner_wait_message(self, key: GroupKey) -> str | None:
        return self.informers.owners.wait_message(key)

    def set_verdict(self, key: GroupKey, verdict: Status | None) -> None:
        self.groups.set_verdict(key, verdict)

    def set_status(self, key: GroupKey, status: PodGroupStatus, stored: object) -> None:
        self.groups.set_status(key, status, stored)

    # -- the informers, as the watches call them -------------------------------

    def replace_nodes(self, objects: Iterable[Raw]) -> None:
        self.informers.nodes.replace(objects)

    def upsert_node(self, raw: Raw) -> None:
        self.informers.nodes.upsert(raw)

    def replace_pods(self, objects: Iterable[Raw]) -> None:
        self.informers.pods.replace(objects)

    def upsert_pod(self, raw: Raw) -> PodInfo | None:
        uid = self.informers.pods.upsert(raw)
        return None if uid is None else self.scheduler.pod(uid)

    def remove_pod(self, raw: Raw) -> None:
        self.informers.pods.remove(raw)

    def replace_podgroups(
        self, objects: Iterable[Raw], adapter: GroupAdapter = sigs.ADAPTER
    ) -> None:
        self.informers.podgroups[adapter.api].replace(objects)

    def upsert_podgroup(self, raw: Raw, adapter: GroupAdapter = sigs.ADAPTER) -> GroupKey | None:
        return self.informers.podgroups[adapter.api].upsert(raw)

    def remove_podgroup(self, raw: Raw, adapter: GroupAdapter = sigs.ADAPTER) -> None:
        self.informers.podgroups[adapter.api].remove(raw)

    def replace_jobs(self, objects: Iterable[Raw]) -> None:
        self.informers.jobs.replace(objects)

    def upsert_job(self, raw: Raw) -> str | None:
        return self.informers.jobs.upsert(raw)

    def remove_job(self, raw: Raw) -> None:
        self.informers.jobs.remove(raw)

    def replace_workloads(self, objects: Iterable[Raw]) -> None:
        self.informers.workloads.replace(objects)

    def upsert_workload(self, raw: Raw) -> tuple[str, str] | None:
        return self.informers.workloads.upsert(raw)

    def remove_workload(self, raw: Raw) -> None:
        self.informers.workloads.remove(raw)

    def upsert_kueue_workload(self, raw: Raw) -> tuple[str, str] | None:
        return self.informers.kueue_workloads.upsert(raw)

    def remove_kueue_workload(self, raw: Raw) -> None:
        self.informers.kueue_workloads.remove(raw)

    def upsert_composite(self, raw: Raw) -> tuple[str, str] | None:
        return self.informers.composites.upsert(raw)

    def remove_composite(self, raw: Raw) -> None:
        self.informers.composites.remove(raw)

    def upsert_native_workload(self, raw: Raw) -> tuple[str, str] | None:
        return self.informers.native_workloads.upsert(raw)

    def remove_native_workload(self, raw: Raw) -> None:
        self.informers.native_workloads.remove(raw)

    def replace_queues(self, objects: Iterable[Raw]) -> None:
        self.informers.queues.replace(objects)

    def upsert_queue(self, raw: Raw) -> str | None:
        return self.informers.queues.upsert(raw)

    def replace_volcano_queues(self, objects: Iterable[Raw]) -> None:
        self.informers.volcano_queues.replace(objects)

    def replace_priority_classes(self, objects: Iterable[Raw]) -> None:
        self.informers.priority_classes.replace(objects)

    def set_priority_class(self, raw: Raw, *, deleted: bool = False) -> None:
        if deleted:
            self.informers.priority_classes.remove(raw)
        else:
            self.informers.priority_classes.upsert(raw)
