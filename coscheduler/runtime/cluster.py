"""What this process knows of the cluster, fed by the watches.

:class:`ClusterState` turns raw watch objects into the core's plain data and
feeds the core's :class:`~coscheduler.core.scheduler.Scheduler`; next to it,
it keeps what the status controller needs and the core does not: every pod
that names a group whatever its phase (succeeded and failed members count in
a PodGroup's status, not in scheduling), the PodGroup objects themselves, the
loop's latest verdict per group, and PriorityClass values.

PodGroups come from every API read, each through its adapter as one
:class:`~coscheduler.api.adapters.GroupObject`. A namespace/name held in two
APIs is one group: the object of the first API in ``adapters`` (ours). The
other is kept aside and takes over if the first is deleted.

Jobs are read too (when ``owners_watched``: the process may list them), as
:class:`~coscheduler.api.owners.GangOwner` records: a pod whose controlling
owner is a Job joins the group the core's owner rule gives it
(:func:`~coscheduler.core.owners.owner_group`), and when a Job's answer
changes, its pods are fed in again. ``on_owner_changed`` tells the controller
which Jobs' PodGroups to make.

A native ``Workload`` (``scheduling.k8s.io``) is read apart: it holds several
gangs, and which gang a pod joins, if any, depends on both. A pod's
``spec.workloadRef`` is resolved here when the pod or its Workload arrives:
a ``gang`` podGroup makes (once per replica key, for pods of ours) a group
keyed ``Workload``; a ``basic`` one makes the pod a lone pod (the core gets it
without its reference); an unknown Workload or podGroup leaves the reference,
and the pod waits for it (``GroupNotFound``). A Workload that comes, goes or is
recreated makes its pods' gangs again. A gang whose last pod is gone is forgotten.

It decides nothing. A malformed object is logged, reported to ``on_invalid``
(which turns it into an Event) and skipped: one bad pod must never stop the
scheduling of the others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import structlog
from pydantic import ValidationError

from coscheduler.api import validation
from coscheduler.api.adapters import (
    ADAPTERS,
    GroupAdapter,
    GroupApi,
    GroupObject,
    StatusAdapter,
    sigs,
)
from coscheduler.api.adapters import workload as workload_api
from coscheduler.api.labels import GROUP, MIN_RUN_SECONDS_ANNOTATION, VERSION
from coscheduler.api.node import NodeInfo, NodeParseError
from coscheduler.api.owners import GANG_ANNOTATION, GANG_OWNER_KINDS, GangOwner
from coscheduler.api.pod import PodInfo, PodParseError
from coscheduler.api.pod_topology import LabelRequirement, LabelSelector
from coscheduler.api.podgroup import PodGroupStatus
from coscheduler.api.quantity import QuantityError
from coscheduler.api.queue import Queue, WireSelector
from coscheduler.api.volumes import (
    AttachLimits,
    ClaimInfo,
    StorageClassInfo,
    VolumeInfo,
    VolumeParseError,
)
from coscheduler.api.workload_ref import WorkloadRef
from coscheduler.core.group import KIND_WORKLOAD, GroupKey, GroupPolicy
from coscheduler.core.owners import owner_group
from coscheduler.core.queue import ClusterEvent
from coscheduler.core.quota import QueuePolicy
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.status import Status

__all__ = ["ClusterState", "InvalidObject"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class InvalidObject:
    """An object that could not be read, with the reason in a person's words."""

    kind: str
    namespace: str
    name: str
    uid: str
    message: str
    #: The object's apiVersion, where its kind alone does not say it (a PodGroup).
    api_version: str = ""
    #: A pod of ours not bound yet: it waits, and its condition must say why.
    waiting: bool = False

    @classmethod
    def of(cls, kind: str, raw: Mapping[str, Any], error: Exception) -> InvalidObject:
        """The object as far as its metadata can be read, and what is wrong with it."""
        meta = _meta(raw)
        return cls(
            kind,
            str(meta.get("namespace", "")),
            str(meta.get("name", "")),
            str(meta.get("uid", "")),
            str(error),
            str(raw.get("apiVersion", "")),
        )


#: A Workload's namespace and name.
_WorkloadName = tuple[str, str]
_Key = TypeVar("_Key")
_Read = TypeVar("_Read")


def _replace_all(
    objects: Iterable[Mapping[str, Any]],
    upsert: Callable[[Mapping[str, Any]], _Key | None],
    known: list[_Key],
    remove: Callable[[_Key], None],
) -> None:
    """A fresh list of every object of a kind: feed each in, forget those it no longer has.

    ``known`` is read before the list is applied: what it held and the list lacks was
    deleted while nobody watched.
    """
    seen = {key for raw in objects if (key := upsert(raw)) is not None}
    for key in known:
        if key not in seen:
            remove(key)


def _meta(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = raw.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _group_key(raw: Mapping[str, Any]) -> GroupKey:
    meta = _meta(raw)
    return GroupKey(str(meta.get("namespace", "")), str(meta.get("name", "")))


def _created(group: GroupObject) -> float:
    created = group.creation_timestamp
    return created.timestamp() if created is not None else 0.0


@dataclass
class ClusterState:
    """The scheduler's inputs, plus what status reconciliation needs."""

    scheduler: Scheduler
    #: Namespaces whose pods we schedule; empty means all. Pods elsewhere still
    #: count on their nodes: they use capacity whoever placed them.
    namespaces: frozenset[str] = frozenset()
    #: Called with a group's key whenever its members, object or verdict change.
    on_group_changed: Callable[[GroupKey], None] = lambda _key: None
    #: Called for an object that could not be read.
    on_invalid: Callable[[InvalidObject], None] = lambda _obj: None
    #: Each key's group: when two APIs have one of that name, the first of ``adapters``'.
    podgroups: dict[GroupKey, GroupObject] = field(default_factory=dict)
    #: The PodGroup APIs read, in order of precedence.
    adapters: tuple[GroupAdapter, ...] = ADAPTERS
    #: The core's status of each group's latest failed attempt (its verdict).
    verdicts: dict[GroupKey, Status] = field(default_factory=dict)
    priority_classes: dict[str, int] = field(default_factory=dict)
    #: Jobs by uid, read as gang owners; only while ``owners_watched`` do pods join
    #: groups by owner (a process that cannot list Jobs schedules their pods alone).
    owners: dict[str, GangOwner] = field(default_factory=dict)
    owners_watched: bool = False
    #: Called with a Job that asks for a gang whenever it, or the PodGroup named after it, changes.
    on_owner_changed: Callable[[GangOwner], None] = lambda _owner: None
    #: Owner uid -> the uids of its pods (of gang owner kinds only).
    _owned_pods: dict[str, set[str]] = field(default_factory=dict)
    #: The group named after a Job that asks for a gang -> the Job's uid.
    _owner_of_group: dict[GroupKey, str] = field(default_factory=dict)
    #: Queue objects as last read, by name (their status is written from here).
    queues: dict[str, Queue] = field(default_factory=dict)
    #: Called with a queue's name when its object changes.
    on_queue_changed: Callable[[str], None] = lambda _name: None
    _group_pods: dict[GroupKey, dict[str, PodInfo]] = field(default_factory=dict)
    _pod_group: dict[str, GroupKey] = field(default_factory=dict)
    _invalid_pods: set[str] = field(default_factory=set)
    #: The unreadable pods of ours that wait (see ``InvalidObject.waiting``).
    _invalid_waiting: set[str] = field(default_factory=set)
    _pod_uids: set[str] = field(default_factory=set)
    #: Every readable PodGroup, by API, shadowed ones included.
    _objects: dict[GroupApi, dict[GroupKey, GroupObject]] = field(default_factory=dict)
    #: Why each PodGroup that exists but cannot be read was refused, by API.
    _unreadable: dict[GroupApi, dict[GroupKey, str]] = field(default_factory=dict)
    #: Readable Workloads; the pods naming each (as read, unresolved); each one's gangs.
    _workloads: dict[_WorkloadName, workload_api.Workload] = field(default_factory=dict)
    _workload_pods: dict[_WorkloadName, dict[str, PodInfo]] = field(default_factory=dict)
    _pod_workload: dict[str, _WorkloadName] = field(default_factory=dict)
    _gangs: dict[_WorkloadName, set[GroupKey]] = field(default_factory=dict)

    # -- queues --------------------------------------------------------------

    def replace_queues(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """A fresh list of every Queue: forget those it no longer has."""
        _replace_all(objects, self.upsert_queue, list(self.queues), self._remove_queue_name)

    def upsert_queue(self, raw: Mapping[str, Any]) -> str | None:
        try:
            queue = Queue.model_validate(raw)
            policy = queue_policy(queue)
        except (ValidationError, QuantityError) as error:
            # The CRD's schema should have refused it; the previous spec, if any, stays.
            message = (
                "; ".join(validation.problems(error, with_input=False))
                if isinstance(error, ValidationError)
                else str(error)
            )
            log.warning("Queue skipped", queue=str(_meta(raw).get("name")), error=message)
            invalid = InvalidObject.of("Queue", raw, ValueError(message))
            self.on_invalid(dataclasses.replace(invalid, api_version=f"{GROUP}/{VERSION}"))
            return None
        self.queues[queue.name] = queue
        self.scheduler.upsert_queue(policy)
        self.on_queue_changed(queue.name)
        return queue.name

    def remove_queue(self, raw: Mapping[str, Any]) -> None:
        name = _meta(raw).get("name")
        if isinstance(name, str):
            self._remove_queue_name(name)

    def _remove_queue_name(self, name: str) -> None:
        self.queues.pop(name, None)
        self.scheduler.remove_queue(name)
        self.on_queue_changed(name)

    # -- nodes ---------------------------------------------------------------

    def replace_nodes(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """A fresh list of every node: forget the nodes it no longer has."""
        known = [node.name for node in self.scheduler.snapshot.nodes()]
        _replace_all(objects, self.upsert_node, known, self.scheduler.remove_node)

    def upsert_node(self, raw: Mapping[str, Any]) -> str | None:
        try:
            node = NodeInfo.from_object(raw)
        except (NodeParseError, QuantityError) as error:
            invalid = InvalidObject.of("Node", raw, error)
            log.warning("node skipped", node=invalid.name, error=invalid.message)
            self.on_invalid(invalid)
            if invalid.name:
                self.scheduler.remove_node(invalid.name)
            return None
        self.scheduler.upsert_node(node)
        return node.name

    def remove_node(self, raw: Mapping[str, Any]) -> None:
        name = _meta(raw).get("name")
        if isinstance(name, str):
            self.scheduler.remove_node(name)

    # -- pods ----------------------------------------------------------------

    def replace_pods(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """A fresh list of every pod: forget the pods it no longer has."""

        def upsert(raw: Mapping[str, Any]) -> str | None:
            pod = self.upsert_pod(raw)
            return None if pod is None else pod.uid

        _replace_all(objects, upsert, list(self._pod_uids), self._remove_pod_uid)

    def upsert_pod(self, raw: Mapping[str, Any]) -> PodInfo | None:
        """Read a pod and feed it in; None (and an :class:`InvalidObject`) if unreadable."""
        try:
            pod = PodInfo.from_object(raw)
        except (PodParseError, QuantityError) as error:
            invalid = InvalidObject.of("Pod", raw, error)
            invalid = dataclasses.replace(invalid, waiting=self._waits_for_us(raw, invalid))
            uid = invalid.uid
            if uid not in self._invalid_pods:
                self._invalid_pods.add(uid)
                log.warning(
                    "pod skipped", pod=f"{invalid.namespace}/{invalid.name}", error=invalid.message
                )
                self.on_invalid(invalid)
            if uid:
                # Forget any readable version we had, but remember it was
                # reported, so each of its events does not report it again.
                self._remove_pod_uid(uid)
                self._invalid_pods.add(uid)
                if invalid.waiting:
                    self._invalid_waiting.add(uid)
            return None
        if self.namespaces and pod.namespace not in self.namespaces:
            pod = dataclasses.replace(pod, scheduler_name="")  # not ours to place
        self._invalid_pods.discard(pod.uid)
        self._invalid_waiting.discard(pod.uid)
        self._pod_uids.add(pod.uid)
        self._index_owned(pod)
        self._track_workload(pod)
        return self._feed_pod(pod)

    def _feed_pod(self, pod: PodInfo) -> PodInfo:
        pod = self._resolve_workload(pod)
        if pod.workload is None and self._by_owner(pod):
            group = owner_group(pod, self.owners)
            if group != pod.owner_group:
                pod = dataclasses.replace(pod, owner_group=group)
        self.scheduler.upsert_pod(pod)
        self._index_member(pod)
        return pod

    def _waits_for_us(self, raw: Mapping[str, Any], invalid: InvalidObject) -> bool:
        """Whether an unreadable pod, as far as it can be read, is ours and not bound."""
        spec = raw.get("spec")
        if not isinstance(spec, Mapping) or spec.get("nodeName"):
            return False
        if self.namespaces and invalid.namespace not in self.namespaces:
            return False
        return bool(spec.get("schedulerName") == self.scheduler.settings.scheduler_name)

    def unreadable_waiting(self, uid: str) -> bool:
        """True for a pod of ours that cannot be read and is not bound."""
        return uid in self._invalid_waiting

    def remove_pod(self, raw: Mapping[str, Any]) -> None:
        uid = _meta(raw).get("uid")
        if isinstance(uid, str):
            self._remove_pod_uid(uid)

    def _remove_pod_uid(self, uid: str) -> None:
        known = self.scheduler.pod(uid)
        if known is not None and known.owner_uid:
            self._unindex_owned(known.owner_uid, uid)
        self._invalid_pods.discard(uid)
        self._invalid_waiting.discard(uid)
        self._pod_uids.discard(uid)
        self.scheduler.remove_pod(uid)
        self._untrack_workload(uid)
        key = self._pod_group.pop(uid, None)
        if key is not None:
            self._remove_pod_uid_from(key, uid)

    def _by_owner(self, pod: PodInfo) -> bool:
        """Whether the pod may join a group by owner: a Job's, ours to place, Jobs read."""
        return (
            self.owners_watched
            and pod.owner_kind in GANG_OWNER_KINDS
            and pod.scheduler_name == self.scheduler.settings.scheduler_name
        )

    def _index_owned(self, pod: PodInfo) -> None:
        before = self.scheduler.pod(pod.uid)
        if before is not None and before.owner_uid and before.owner_uid != pod.owner_uid:
            self._unindex_owned(before.owner_uid, pod.uid)
        if pod.owner_uid and self._by_owner(pod):
            self._owned_pods.setdefault(pod.owner_uid, set()).add(pod.uid)

    def _unindex_owned(self, owner_uid: str, uid: str) -> None:
        pods = self._owned_pods.get(owner_uid)
        if pods is not None:
            pods.discard(uid)
            if not pods:
                del self._owned_pods[owner_uid]

    def _index_member(self, pod: PodInfo) -> None:
        of_pod = GroupKey.of_pod(pod)
        key = None if of_pod.lone else of_pod
        previous = self._pod_group.get(pod.uid)
        if previous is not None and previous != key:
            self._remove_pod_uid_from(previous, pod.uid)
        if key is None:
            self._pod_group.pop(pod.uid, None)
            return
        self._group_pods.setdefault(key, {})[pod.uid] = pod
        self._pod_group[pod.uid] = key
        self.on_group_changed(key)

    def _remove_pod_uid_from(self, key: GroupKey, uid: str) -> None:
        members = self._group_pods.get(key)
        if members is not None:
            members.pop(uid, None)
            if not members:
                del self._group_pods[key]
                if key.kind == KIND_WORKLOAD:
                    self._drop_gang(key)
        self.on_group_changed(key)

    def group_pods(self, key: GroupKey) -> list[PodInfo]:
        """Every pod that names the group, whatever its phase or scheduler."""
        return list(self._group_pods.get(key, {}).values())

    # -- Jobs: groups by owner -------------------------------------------------

    def replace_jobs(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """A fresh list of every Job: forget the ones it no longer has."""
        _replace_all(objects, self.upsert_job, list(self.owners), self._remove_owner)

    def upsert_job(self, raw: Mapping[str, Any]) -> str | None:
        owner = GangOwner.from_job(raw)
        if owner is None or (self.namespaces and owner.namespace not in self.namespaces):
            return None
        before = self.owners.get(owner.uid)
        if before == owner:
            return owner.uid
        self.owners[owner.uid] = owner
        self._set_owner_of_group(before, owner)
        if before is None or before.wants_gang != owner.wants_gang:
            self._refeed_owned(owner.uid)
        if owner.wants_gang:
            self.on_owner_changed(owner)
        return owner.uid

    def remove_job(self, raw: Mapping[str, Any]) -> None:
        uid = _meta(raw).get("uid")
        if isinstance(uid, str):
            self._remove_owner(uid)

    def _remove_owner(self, uid: str) -> None:
        owner = self.owners.pop(uid, None)
        if owner is not None:
            self._set_owner_of_group(owner, None)
            # Its pods, if any are left, wait as members of the unknown Job's group.
            self._refeed_owned(uid)

    def _set_owner_of_group(self, before: GangOwner | None, after: GangOwner | None) -> None:
        if before is not None and before.wants_gang:
            self._owner_of_group.pop(GroupKey(before.namespace, before.group_name), None)
        if after is not None and after.wants_gang:
            self._owner_of_group[GroupKey(after.namespace, after.group_name)] = after.uid

    def _refeed_owned(self, owner_uid: str) -> None:
        """The owner's answer changed: its pods' groups follow."""
        for uid in list(self._owned_pods.get(owner_uid, ())):
            pod = self.scheduler.pod(uid)
            if pod is not None:
                self._feed_pod(pod)

    def owner_of_group(self, key: GroupKey) -> GangOwner | None:
        """The Job that asks for the group named ``key``, if one does."""
        uid = self._owner_of_group.get(key)
        return None if uid is None else self.owners.get(uid)

    def owner_wait_message(self, key: GroupKey) -> str | None:
        """Why the members of a group by owner wait for a PodGroup; None if it is not one."""
        owner = self.owner_of_group(key)
        if owner is not None:
            if owner.problem is not None:
                return (
                    f"Job {owner.key} asks for a gang but {owner.problem}; its pods wait "
                    f"(see kubectl describe job {owner.name} -n {owner.namespace})"
                )
            return (
                f"waiting for PodGroup {key}, which coscheduler makes for Job {owner.key} "
                f"(annotation {GANG_ANNOTATION})"
            )
        pending, _ = self.scheduler.members(key)
        if any(pod.group is None and pod.owner_group == key.name for pod in pending):
            return (
                f"waiting to see Job {key}, the owner of this pod: its pods are placed only once "
                f"it is known whether it asks for a gang (annotation {GANG_ANNOTATION})"
            )
        return None

    # -- PodGroups -----------------------------------------------------------

    def replace_podgroups(
        self, objects: Iterable[Mapping[str, Any]], adapter: GroupAdapter = sigs.ADAPTER
    ) -> None:
        """A fresh list of every PodGroup of one API: forget the ones it no longer has."""
        known = {*self._objects.get(adapter.api, {}), *self._unreadable.get(adapter.api, {})}
        seen: set[GroupKey] = set()
        for raw in objects:
            self.upsert_podgroup(raw, adapter)
            seen.add(_group_key(raw))
        for key in known - seen:
            self._remove_object(adapter, key)

    def upsert_podgroup(
        self, raw: Mapping[str, Any], adapter: GroupAdapter = sigs.ADAPTER
    ) -> GroupKey | None:
        meta = _meta(raw)
        key = _group_key(raw)
        if self.namespaces and key.namespace not in self.namespaces:
            # Another instance may own it: never write its status or events.
            return None
        objects = self._objects.setdefault(adapter.api, {})
        known = objects.get(key)
        if known is not None and _same_generation(known.metadata, meta):
            # Only the status changed, most often by our own write coming back: the
            # queue has nothing new to learn. A status someone else wrote is put right.
            wire = raw.get("status") or {}
            stored = adapter.stored_form(wire)
            if stored is not None:
                if stored != known.stored:
                    status = _read(adapter, wire, known)
                    self._store(adapter, key, known.with_status(status, stored))
                return key
        try:
            group = adapter.parse(raw)
        except ValueError as error:
            # The CRD's schema should have refused this object; it may predate it.
            if isinstance(error, ValidationError):
                message = "; ".join(validation.problems(error, with_input=False))
            else:
                message = str(error)
            log.warning("PodGroup skipped", group=str(key), api=str(adapter.api), error=message)
            self.on_invalid(
                InvalidObject(
                    adapter.api.kind,
                    key.namespace,
                    key.name,
                    str(meta.get("uid", "")),
                    message,
                    adapter.api.api_version,
                )
            )
            self._remove_object(adapter, key)
            self._unreadable.setdefault(adapter.api, {})[key] = message
            # Its pods were told the group does not exist: look again, so they say why.
            self.scheduler.queue.on_event(ClusterEvent.GROUP_CHANGED, key)
            return None
        self._store(adapter, key, group, spec_changed=True)
        return key

    def unreadable_group(self, key: GroupKey) -> str | None:
        """Why the key's PodGroup cannot be read, when one exists and none of its APIs' can."""
        if key in self.podgroups:
            return None
        for adapter in self.adapters:
            why = self._unreadable.get(adapter.api, {}).get(key)
            if why is not None:
                return why
        return None

    def remove_podgroup(self, raw: Mapping[str, Any], adapter: GroupAdapter = sigs.ADAPTER) -> None:
        self._remove_object(adapter, _group_key(raw))

    def set_status(self, key: GroupKey, status: PodGroupStatus, stored: object) -> None:
        """The status writer's record of what it derived, and what the server now holds."""
        group = self.podgroups.get(key)
        if group is not None and key.kind == KIND_WORKLOAD:
            self.podgroups[key] = group.with_status(status, stored)
        elif group is not None:
            # Not a change to report: the writer itself concluded it.
            self._store(group.adapter, key, group.with_status(status, stored), notify=False)

    def _store(
        self,
        adapter: StatusAdapter,
        key: GroupKey,
        group: GroupObject,
        *,
        spec_changed: bool = False,
        notify: bool = True,
    ) -> None:
        self._objects.setdefault(adapter.api, {})[key] = group
        winner = self._winner(key)
        if winner is not group:
            if winner is not None and spec_changed:
                log.warning(
                    "PodGroup shadowed: a group of the same name in another API wins",
                    group=str(key),
                    ignored=str(adapter.api),
                    used=str(winner.api),
                )
            return
        previous = self.podgroups.get(key)
        if previous is not None and previous.api != group.api:
            log.warning(
                "PodGroup shadowed: a group of the same name in another API wins",
                group=str(key),
                ignored=str(previous.api),
                used=str(group.api),
            )
        self.podgroups[key] = group
        if spec_changed or previous is None or previous.api != group.api:
            self.scheduler.upsert_group(self._policy(group, key))
        if previous is None:
            self._owner_group_moved(key)
        if notify:
            self.on_group_changed(key)

    def _remove_object(self, adapter: GroupAdapter, key: GroupKey) -> None:
        self._unreadable.get(adapter.api, {}).pop(key, None)
        objects = self._objects.get(adapter.api, {})
        if objects.pop(key, None) is None:
            return
        winner = self._winner(key)
        if winner is None:
            self._remove_podgroup_key(key)
        elif self.podgroups.get(key) is not winner:
            # The winner is gone and the other API's group of that name takes over.
            self.podgroups[key] = winner
            self.scheduler.upsert_group(self._policy(winner, key))
            self.on_group_changed(key)

    def _winner(self, key: GroupKey) -> GroupObject | None:
        """The key's group: the object of the first API, in order of precedence, that has one."""
        for adapter in self.adapters:
            group = self._objects.get(adapter.api, {}).get(key)
            if group is not None:
                return group
        return None

    def _remove_podgroup_key(self, key: GroupKey) -> None:
        self.podgroups.pop(key, None)
        self.verdicts.pop(key, None)
        self.scheduler.remove_group(key.namespace, key.name)
        self._owner_group_moved(key)

    def _owner_group_moved(self, key: GroupKey) -> None:
        """A PodGroup appeared or went: the Job named like it may need one (again)."""
        owner = self.owner_of_group(key)
        if owner is not None:
            self.on_owner_changed(owner)

    def _policy(self, group: GroupObject, key: GroupKey) -> GroupPolicy:
        spec = group.spec
        priority = spec.priority
        if priority is None and spec.priority_class_name is not None:
            priority = self.priority_classes.get(spec.priority_class_name)
        return GroupPolicy(
            namespace=key.namespace,
            name=key.name,
            kind=key.kind,
            min_member=spec.min_member,
            role_minimums=spec.role_minimums(),
            min_resources=spec.min_resource_amounts(),
            priority=priority,
            schedule_timeout_seconds=spec.schedule_timeout_seconds,
            created=_created(group),
            queue=spec.queue,
            topology_levels=spec.topology.levels() if spec.topology else (),
            role_topology=spec.role_topology(),
            min_run_seconds=self._min_run_seconds(group),
        )

    def _min_run_seconds(self, group: GroupObject) -> float | None:
        """The group's ``min-run-seconds`` annotation; a bad value is reported and ignored."""
        annotations = group.metadata.get("annotations")
        text = (
            annotations.get(MIN_RUN_SECONDS_ANNOTATION)
            if isinstance(annotations, Mapping)
            else None
        )
        if text is None:
            return None
        try:
            seconds = float(text)
        except (TypeError, ValueError):
            seconds = -1.0
        if seconds >= 0 and seconds != float("inf"):
            return seconds
        why = (
            f"annotation {MIN_RUN_SECONDS_ANNOTATION} = {text!r} is not a number of seconds "
            "(such as 600): the group may be preempted at any time"
        )
        self.on_invalid(
            InvalidObject(
                "PodGroup", group.namespace, group.name, group.uid or "", why, group.api.api_version
            )
        )
        return None

    # -- Workloads (scheduling.k8s.io/v1alpha1, Kubernetes' own gangs) --------

    def replace_workloads(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """A fresh list of every Workload: forget the ones it no longer has."""
        _replace_all(objects, self.upsert_workload, list(self._workloads), self._forget_workload)

    def upsert_workload(self, raw: Mapping[str, Any]) -> _WorkloadName | None:
        meta = _meta(raw)
        where = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        if self.namespaces and where[0] not in self.namespaces:
            return None
        try:
            workload = workload_api.read_workload(raw)
        except ValueError as error:
            # The API server validates Workloads: this one reads in a way we do not.
            log.warning("Workload skipped", workload="/".join(where), error=str(error))
            invalid = InvalidObject.of("Workload", raw, error)
            self.on_invalid(dataclasses.replace(invalid, api_version=workload_api.API.api_version))
            self._forget_workload(where)
            return None
        known = self._workloads.get(where)
        self._workloads[where] = workload
        if known is None or known.uid != workload.uid or known.pod_groups != workload.pod_groups:
            self._regroup(where)  # podGroups are immutable: new ones mean a new Workload
        return where

    def remove_workload(self, raw: Mapping[str, Any]) -> None:
        meta = _meta(raw)
        self._forget_workload((str(meta.get("namespace", "")), str(meta.get("name", ""))))

    def _forget_workload(self, where: _WorkloadName) -> None:
        if self._workloads.pop(where, None) is not None:
            self._regroup(where)

    def _regroup(self, where: _WorkloadName) -> None:
        """The Workload came, changed or went: its pods' gangs are made again."""
        for key in list(self._gangs.get(where, ())):
            self._drop_gang(key)
        for pod in list(self._workload_pods.get(where, {}).values()):
            resolved = self._resolve_workload(pod)
            fed = self.scheduler.pod(pod.uid)
            if fed is not None and fed.workload == resolved.workload:
                continue  # the same key: its group's policy came or went, the pod stays
            self.scheduler.upsert_pod(resolved)
            self._index_member(resolved)

    def _drop_gang(self, key: GroupKey) -> None:
        where = (key.namespace, WorkloadRef.from_gang_name(key.name).workload)
        gangs = self._gangs.get(where)
        if gangs is not None:
            gangs.discard(key)
            if not gangs:
                del self._gangs[where]
        if self.podgroups.pop(key, None) is not None:
            self.verdicts.pop(key, None)
            self.scheduler.remove_group(key.namespace, key.name, key.kind)

    def _track_workload(self, pod: PodInfo) -> None:
        """Remember the pods that name each Workload, to resolve them again when it changes."""
        self._untrack_workload(pod.uid)
        if pod.workload is not None and pod.group is None:
            where = (pod.namespace, pod.workload.workload)
            self._workload_pods.setdefault(where, {})[pod.uid] = pod
            self._pod_workload[pod.uid] = where

    def _untrack_workload(self, uid: str) -> None:
        where = self._pod_workload.pop(uid, None)
        pods = self._workload_pods.get(where) if where is not None else None
        if where is not None and pods is not None:
            pods.pop(uid, None)
            if not pods:
                del self._workload_pods[where]

    def _resolve_workload(self, pod: PodInfo) -> PodInfo:
        """The pod as the core gets it: in its Workload's gang, lone (basic), or waiting."""
        ref = pod.workload
        if ref is None or pod.group is not None:
            return pod
        where = (pod.namespace, ref.workload)
        workload = self._workloads.get(where)
        if workload is None or ref.pod_group not in workload.pod_groups:
            return pod  # no policy for its key: it waits, the message naming the Workload
        gang = workload_api.gang_object(workload, ref)
        if gang is None:
            return dataclasses.replace(pod, workload=None)  # basic: each pod on its own
        key = GroupKey.of_pod(pod)
        ours = pod.scheduler_name == self.scheduler.settings.scheduler_name
        if ours and key not in self.podgroups:
            self.podgroups[key] = gang
            self._gangs.setdefault(where, set()).add(key)
            self.scheduler.upsert_group(self._policy(gang, key))
        return pod

    # -- namespaces (their labels, for pod affinity's namespaceSelector) ------

    def replace_namespaces(self, objects: Iterable[Mapping[str, Any]]) -> None:
        known = list(self.scheduler.snapshot.topology.namespace_labels)
        _replace_all(objects, self.upsert_namespace, known, self.scheduler.remove_namespace)

    def upsert_namespace(self, raw: Mapping[str, Any]) -> str | None:
        meta = _meta(raw)
        name, labels = meta.get("name"), meta.get("labels") or {}
        if not isinstance(name, str) or not isinstance(labels, Mapping):
            return None
        self.scheduler.upsert_namespace(name, {str(k): str(v) for k, v in labels.items()})
        return name

    def remove_namespace(self, raw: Mapping[str, Any]) -> None:
        name = _meta(raw).get("name")
        if isinstance(name, str):
            self.scheduler.remove_namespace(name)

    # -- claims, volumes, storage classes --------------------------------------

    def replace_claims(self, objects: Iterable[Mapping[str, Any]]) -> None:
        volumes = self.scheduler.volumes
        _replace_all(objects, self.upsert_claim, list(volumes.claims), volumes.remove_claim)
        self.scheduler.volumes_changed()

    def upsert_claim(self, raw: Mapping[str, Any]) -> str | None:
        claim = self._read_volume_object("PersistentVolumeClaim", ClaimInfo.from_object, raw)
        if claim is not None:
            self.scheduler.volumes.upsert_claim(claim)
            self.scheduler.volumes_changed()
        return None if claim is None else claim.key

    def remove_claim(self, raw: Mapping[str, Any]) -> None:
        meta = _meta(raw)
        self.scheduler.volumes.remove_claim(f"{meta.get('namespace')}/{meta.get('name')}")
        self.scheduler.volumes_changed()

    def replace_volumes(self, objects: Iterable[Mapping[str, Any]]) -> None:
        volumes = self.scheduler.volumes
        _replace_all(objects, self.upsert_volume, list(volumes.volumes), volumes.remove_volume)
        self.scheduler.volumes_changed()

    def upsert_volume(self, raw: Mapping[str, Any]) -> str | None:
        volume = self._read_volume_object("PersistentVolume", VolumeInfo.from_object, raw)
        if volume is not None:
            self.scheduler.volumes.upsert_volume(volume)
            self.scheduler.volumes_changed()
        return None if volume is None else volume.name

    def remove_volume(self, raw: Mapping[str, Any]) -> None:
        self.scheduler.volumes.remove_volume(str(_meta(raw).get("name")))
        self.scheduler.volumes_changed()

    def replace_storage_classes(self, objects: Iterable[Mapping[str, Any]]) -> None:
        volumes = self.scheduler.volumes
        _replace_all(
            objects, self.upsert_storage_class, list(volumes.classes), volumes.remove_class
        )
        self.scheduler.volumes_changed()

    def upsert_storage_class(self, raw: Mapping[str, Any]) -> str | None:
        read = StorageClassInfo.from_object
        storage_class = self._read_volume_object("StorageClass", read, raw)
        if storage_class is not None:
            self.scheduler.volumes.upsert_class(storage_class)
            self.scheduler.volumes_changed()
        return None if storage_class is None else storage_class.name

    def remove_storage_class(self, raw: Mapping[str, Any]) -> None:
        self.scheduler.volumes.remove_class(str(_meta(raw).get("name")))
        self.scheduler.volumes_changed()

    def replace_csinodes(self, objects: Iterable[Mapping[str, Any]]) -> None:
        known = list(self.scheduler.snapshot.attach_limits)
        remove = partial(self.scheduler.set_attach_limits, limits=None)
        _replace_all(objects, self.upsert_csinode, known, remove)

    def upsert_csinode(self, raw: Mapping[str, Any]) -> str | None:
        limits = self._read_volume_object("CSINode", AttachLimits.from_object, raw)
        if limits is not None:
            self.scheduler.set_attach_limits(limits.node, limits.limits)
        return None if limits is None else limits.node

    def remove_csinode(self, raw: Mapping[str, Any]) -> None:
        self.scheduler.set_attach_limits(str(_meta(raw).get("name")), None)

    def _read_volume_object(
        self, kind: str, read: Callable[[Mapping[str, Any]], _Read], raw: Mapping[str, Any]
    ) -> _Read | None:
        try:
            return read(raw)
        except VolumeParseError as error:
            invalid = InvalidObject.of(kind, raw, error)
            log.warning("object skipped", kind=kind, name=invalid.name, error=invalid.message)
            self.on_invalid(invalid)
            return None

    # -- PriorityClasses -----------------------------------------------------

    def replace_priority_classes(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """A fresh list of every PriorityClass."""
        self.priority_classes.clear()
        for raw in objects:
            self.set_priority_class(raw)

    def set_priority_class(self, raw: Mapping[str, Any], *, deleted: bool = False) -> None:
        name = _meta(raw).get("name")
        value = raw.get("value")
        if not isinstance(name, str):
            return
        if deleted or not isinstance(value, int):
            self.priority_classes.pop(name, None)
        else:
            self.priority_classes[name] = value
        for key, group in list(self.podgroups.items()):
            if group.spec.priority_class_name == name and group.spec.priority is None:
                self.scheduler.upsert_group(self._policy(group, key))

    # -- verdicts ------------------------------------------------------------

    def set_verdict(self, key: GroupKey, verdict: Status | None) -> None:
        before = self.verdicts.get(key)
        if verdict is None:
            if before is not None:
                del self.verdicts[key]
                self.on_group_changed(key)
            return
        if before is None or (before.reason, before.message) != (verdict.reason, verdict.message):
            self.verdicts[key] = verdict
            self.on_group_changed(key)


def _read(adapter: GroupAdapter, wire: Mapping[str, Any], known: GroupObject) -> PodGroupStatus:
    """A status someone else wrote, as ours; what its shape cannot hold is kept from before."""
    try:
        status = adapter.read_status(wire)
    except ValueError:
        return known.status
    if not status.conditions and known.status.conditions:
        status = status.model_copy(update={"conditions": known.status.conditions})
    return status


def _same_generation(known: Mapping[str, Any], meta: Mapping[str, Any]) -> bool:
    """The same object with the same spec: a status write does not bump ``generation``."""
    generation = meta.get("generation")
    return (
        generation is not None
        and known.get("generation") == generation
        and known.get("uid") == meta.get("uid")
        and known.get("deletionTimestamp") == meta.get("deletionTimestamp")
    )


def queue_policy(queue: Queue) -> QueuePolicy:
    """A Queue object as the core's plain policy."""
    spec = queue.spec
    return QueuePolicy(
        name=queue.name,
        nominal=dict(spec.nominal_amounts()),
        max=dict(spec.max_amounts()),
        weight=spec.weight,
        open=spec.state == "Open",
        parent=spec.parent,
        namespaces=frozenset(spec.namespaces or ()),
        selector=None if spec.namespace_selector is None else _selector(spec.namespace_selector),
    )


def _selector(wire: WireSelector) -> LabelSelector:
    requirements = [
        LabelRequirement(key, "In", frozenset([value]))
        for key, value in sorted((wire.match_labels or {}).items())
    ]
    requirements += [
        LabelRequirement(item.key, item.operator, frozenset(item.values or ()))
        for item in wire.match_expressions or ()
    ]
    return LabelSelector(tuple(requirements))
