"""The groups as the runtime knows them: each key's PodGroup, its members, its verdict.

One store, written by the handlers and the scheduling loop, read by the
controller through :class:`~coscheduler.runtime.readmodel.ReadModel`:

* every readable PodGroup of every API read, and per key the one that wins
  (``podgroups``): a namespace/name held in two APIs is one group, the object
  of the first API in ``adapters`` (ours); the other is kept aside and takes
  over if the first is deleted. Why each unreadable one was refused.
* every pod that names a group whatever its phase (succeeded and failed
  members count in a PodGroup's status, not in scheduling);
* the loop's latest verdict per group (the core's status of its latest
  failed attempt);
* PriorityClass values, which a group's policy reads.

Each group's :class:`~coscheduler.core.group.GroupPolicy` is made here and
given to the core. Whenever a group's members, object or verdict change,
``changed`` is called with its key (the status writer's marks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Protocol

import structlog

from coscheduler.api.adapters import kueue
from coscheduler.api.adapters.apis import GroupApi
from coscheduler.api.adapters.base import GroupAdapter, GroupObject, StatusAdapter
from coscheduler.api.adapters.native import disruption_condition
from coscheduler.api.adapters.table import ADAPTERS
from coscheduler.api.composite import ChildGroup
from coscheduler.api.labels import MIN_RUN_SECONDS_ANNOTATION
from coscheduler.api.native_workload import NativeWorkload
from coscheduler.api.owners import GangOwner
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import DEFAULT_QUEUE, PodGroupStatus
from coscheduler.api.reasons import Reason
from coscheduler.api.timestamps import utc_now
from coscheduler.core.group import (
    KIND_COMPOSITE,
    KIND_KUEUE,
    KIND_NATIVE_POD_GROUP,
    KIND_WORKLOAD,
    GroupKey,
    GroupPolicy,
)
from coscheduler.core.queue import ClusterEvent
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.status import Status
from coscheduler.runtime.handlers.base import Complaints, InvalidObject
from coscheduler.runtime.handlers.composites import CompositeChange, CompositeIndex

__all__ = ["Groups"]

log = structlog.get_logger(__name__)


class _OwnerHook(Protocol):
    def group_moved(self, key: GroupKey) -> None:
        """A PodGroup of this name appeared or went (the Job named like it may need one)."""

    def job(self, uid: str) -> GangOwner | None:
        """The Job of that uid, if known."""

    def job_named(self, namespace: str, name: str) -> GangOwner | None:
        """The Job of that name, if known."""


class Groups:
    """The store (see the module docstring)."""

    def __init__(
        self,
        scheduler: Scheduler,
        *,
        complaints: Complaints,
        changed: Callable[[GroupKey], None],
        owners: _OwnerHook,
        composites: CompositeIndex,
        adapters: tuple[GroupAdapter, ...] = ADAPTERS,
    ) -> None:
        self._scheduler = scheduler
        self._complaints = complaints
        self._changed = changed
        self._owners = owners
        #: The PodGroup APIs read, in order of precedence.
        self.adapters = adapters
        #: Each key's group: when two APIs have one of that name, the first of ``adapters``'.
        self.podgroups: dict[GroupKey, GroupObject] = {}
        #: The core's status of each group's latest failed attempt (its verdict).
        self.verdicts: dict[GroupKey, Status] = {}
        self.priority_classes: dict[str, int] = {}
        self._members: dict[GroupKey, dict[str, PodInfo]] = {}
        self._member_of: dict[str, GroupKey] = {}
        #: Every readable PodGroup, by API, shadowed ones included.
        self._objects: dict[GroupApi, dict[GroupKey, GroupObject]] = {}
        #: Why each PodGroup that exists but cannot be read was refused, by API.
        self._unreadable: dict[GroupApi, dict[GroupKey, str]] = {}
        #: Told of each native PodGroup's parent (:mod:`~.handlers.composites`).
        self._composites = composites
        #: Native groups whose members name two schedulers or more, and which.
        self._mixed: dict[GroupKey, tuple[str, ...]] = {}
        #: Kubernetes' own Workloads (1.36 and later) by namespace and name: their
        #: queue label and controller, for the native PodGroups that name them.
        self._workloads: dict[tuple[str, str], NativeWorkload] = {}
        #: Each native gang's creator as its policy last had it.
        self._creators: dict[GroupKey, tuple[str, int] | None] = {}

    # -- reading ---------------------------------------------------------------

    def group_pods(self, key: GroupKey) -> list[PodInfo]:
        """Every pod that names the group, whatever its phase or scheduler."""
        return list(self._members.get(key, {}).values())

    def of_api(self, api: GroupApi, key: GroupKey) -> GroupObject | None:
        """The API's readable PodGroup of that key, shadowed or not."""
        return self._objects.get(api, {}).get(key)

    def known(self, api: GroupApi) -> set[GroupKey]:
        """The keys of the API's PodGroups, readable or not."""
        return {*self._objects.get(api, {}), *self._unreadable.get(api, {})}

    def unreadable_group(self, key: GroupKey) -> str | None:
        """Why the key's PodGroup cannot be read, when one exists and none of its APIs' can."""
        if key in self.podgroups:
            return None
        for adapter in self.adapters:
            why = self._unreadable.get(adapter.api, {}).get(key)
            if why is not None:
                return why
        return None

    # -- members ----------------------------------------------------------------

    def index_member(self, pod: PodInfo) -> None:
        """The pod as the core has it now: a member of the group it names, or of none."""
        of_pod = GroupKey.of_pod(pod)
        key = None if of_pod.lone else of_pod
        previous = self._member_of.get(pod.uid)
        if previous is not None and previous != key:
            self._leave(previous, pod.uid)
        if key is None:
            self._member_of.pop(pod.uid, None)
            return
        self._members.setdefault(key, {})[pod.uid] = pod
        self._member_of[pod.uid] = key
        self._check_schedulers(key)
        self._check_creator(key)
        self._changed(key)

    def remove_member(self, uid: str) -> GroupKey | None:
        """The pod is gone; the Workload gang (native or Kueue's) it leaves empty, if it does."""
        key = self._member_of.pop(uid, None)
        return None if key is None else self._leave(key, uid)

    def _leave(self, key: GroupKey, uid: str) -> GroupKey | None:
        members = self._members.get(key)
        emptied = None
        if members is not None:
            members.pop(uid, None)
            if not members:
                del self._members[key]
                emptied = key if key.kind in (KIND_WORKLOAD, KIND_KUEUE) else None
        self._check_schedulers(key)
        self._changed(key)
        return emptied

    def _check_schedulers(self, key: GroupKey) -> None:
        """A native group's members under two schedulers: neither may place it whole.

        kube-scheduler places its own members of such a group and refuses the
        group (it checks that every member names one scheduler); ours wait,
        saying so, until the members agree.
        """
        if key.kind != KIND_NATIVE_POD_GROUP:
            return
        names = tuple(
            sorted(
                {p.scheduler_name for p in self._members.get(key, {}).values() if not p.terminal}
            )
        )
        mixed = names if len(names) > 1 else ()
        if mixed == self._mixed.get(key, ()):
            return
        if mixed:
            self._mixed[key] = mixed
        else:
            self._mixed.pop(key, None)
        group = self.podgroups.get(key)
        if group is not None:
            self._scheduler.upsert_group(self.policy(group, key))

    # -- PodGroup objects -----------------------------------------------------

    def store(
        self,
        adapter: StatusAdapter,
        key: GroupKey,
        group: GroupObject,
        *,
        spec_changed: bool = False,
        notify: bool = True,
    ) -> tuple[str, ...]:
        """A readable PodGroup of one API, as read; the key's group if its API wins.

        Returns the pods to feed in again (their native PodGroup changed composite)."""
        group = self._with_workload_queue(group)
        self._unreadable.get(adapter.api, {}).pop(key, None)
        self._objects.setdefault(adapter.api, {})[key] = group
        winner = self._winner(key)
        if winner is not group:
            if winner is not None and spec_changed:
                _shadowed(key, ignored=adapter.api, used=winner.api)
            return ()
        previous = self.podgroups.get(key)
        if previous is not None and previous.api != group.api:
            _shadowed(key, ignored=previous.api, used=group.api)
        self.podgroups[key] = group
        if spec_changed or previous is None or previous.api != group.api:
            self._scheduler.upsert_group(self.policy(group, key))
        native = group.native
        moved: tuple[str, ...] = ()
        if native is not None:
            child = ChildGroup(
                key.name, native.min_count, native.topology_key, bool(native.resource_claims)
            )
            moved = self.apply(
                self._composites.child(key.namespace, key.name, native.parent, child)
            )
        if previous is None:
            self._owners.group_moved(key)
        if notify:
            self._changed(key)
        return moved

    def refuse(self, adapter: GroupAdapter, key: GroupKey, why: str) -> tuple[str, ...]:
        """The API's PodGroup of that key exists but cannot be read: it counts as missing.
        Returns the pods to feed in again, as :meth:`remove` does."""
        moved = self.remove(adapter, key)
        self._unreadable.setdefault(adapter.api, {})[key] = why
        # Its pods were told the group does not exist: look again, so they say why.
        self._scheduler.queue.on_event(ClusterEvent.GROUP_CHANGED, key)
        return moved

    def remove(self, adapter: GroupAdapter, key: GroupKey) -> tuple[str, ...]:
        """The API's PodGroup of that key is gone; another API's of the name may take over.
        Returns the pods to feed in again (their native PodGroup left its composite)."""
        self._unreadable.get(adapter.api, {}).pop(key, None)
        if self._objects.get(adapter.api, {}).pop(key, None) is None:
            return ()
        moved: tuple[str, ...] = ()
        winner = self._winner(key)
        if winner is None:
            self.podgroups.pop(key, None)
            self.verdicts.pop(key, None)
            self._creators.pop(key, None)
            self._scheduler.remove_group(key.namespace, key.name, key.kind)
            self._owners.group_moved(key)
            if key.kind == KIND_NATIVE_POD_GROUP:
                moved = self.apply(self._composites.child(key.namespace, key.name, None, None))
            self._changed(key)  # its follower (controller/handlers.py) ends
        elif self.podgroups.get(key) is not winner:
            # The winner is gone and the other API's group of that name takes over.
            self.podgroups[key] = winner
            self._scheduler.upsert_group(self.policy(winner, key))
            self._changed(key)
        return moved

    def apply(self, change: CompositeChange) -> tuple[str, ...]:
        """Make again the composites' gangs a change touched; the pods to feed in again."""
        for name in change.remade:
            key = GroupKey(change.namespace, name, KIND_COMPOSITE)
            gang = self._composites.gang(change.namespace, name, self.podgroups.get(key))
            if gang is None:
                self.drop_gang(key)
            else:
                self.add_gang(key, gang)
        return change.moved

    def _winner(self, key: GroupKey) -> GroupObject | None:
        """The key's group: the object of the first API, in order of precedence, that has one."""
        for adapter in self.adapters:
            group = self._objects.get(adapter.api, {}).get(key)
            if group is not None:
                return group
        return None

    # -- Kubernetes' own Workloads and the Jobs that make native groups' members -------

    def set_workload(self, namespace: str, name: str, workload: NativeWorkload | None) -> None:
        """A native Workload as read (None: gone); the PodGroups naming it follow."""
        where = (namespace, name)
        if workload is None:
            if self._workloads.pop(where, None) is None:
                return
        elif self._workloads.get(where) == workload:
            return
        else:
            self._workloads[where] = workload
        for adapter, key, group in self._native_objects():
            ref = group.native.workload_ref if group.native is not None else None
            if key.namespace == namespace and ref is not None and ref.workload == name:
                self.store(adapter, key, group, spec_changed=True)

    def job_resized(self, job: GangOwner) -> None:
        """A Job came, went or runs another number of pods at once: the native
        groups it makes members for follow (their policy's ``creator``)."""
        for key, group in list(self.podgroups.items()):
            if key.kind != KIND_NATIVE_POD_GROUP or key.namespace != job.namespace:
                continue
            if group.native is not None and group.native.min_count is not None:
                self._scheduler.upsert_group(self.policy(group, key))

    def _check_creator(self, key: GroupKey) -> None:
        """A member came: the Job that makes a native gang's members may now be known."""
        group = self.podgroups.get(key) if key.kind == KIND_NATIVE_POD_GROUP else None
        if group is None:
            return
        before = self._creators.get(key)
        if self._creator(group, key) != before:
            self._scheduler.upsert_group(self.policy(group, key))

    def _native_objects(self) -> list[tuple[StatusAdapter, GroupKey, GroupObject]]:
        return [
            (group.adapter, key, group)
            for objects in self._objects.values()
            for key, group in list(objects.items())
            if group.native is not None
        ]

    def _with_workload_queue(self, group: GroupObject) -> GroupObject:
        """A native PodGroup without a queue label takes its Workload's (the PodGroup's wins)."""
        native = group.native
        if native is None or native.queue is not None:
            return group
        workload = (
            self._workloads.get((group.namespace, native.workload_ref.workload))
            if native.workload_ref is not None
            else None
        )
        queue = workload.queue if workload is not None and workload.queue else DEFAULT_QUEUE
        if group.spec.queue == queue:
            return group
        return dataclasses.replace(group, spec=group.spec.model_copy(update={"queue": queue}))

    def _creator(self, group: GroupObject, key: GroupKey) -> tuple[str, int] | None:
        """The Job that makes a native gang's members, and the most pods it runs at once.

        Its Workload's ``spec.controllerRef``, else the PodGroup's controlling
        owner, else its members' controlling owner (a PodGroup of the user's,
        the Job's pod template naming it).
        """
        native = group.native
        if native is None or native.min_count is None:
            return None
        job = None
        if native.workload_ref is not None:
            workload = self._workloads.get((key.namespace, native.workload_ref.workload))
            controller = workload.controller if workload is not None else None
            if controller is not None and controller.is_job:
                job = self._owners.job_named(key.namespace, controller.name)
        uid = _controlling_job(group.metadata)
        if job is None and uid is not None:
            job = self._owners.job(uid)
        if job is None:
            owners = {
                p.owner_uid for p in self._members.get(key, {}).values() if p.owner_kind == "Job"
            }
            if len(owners) == 1:
                job = self._owners.job(owners.pop() or "")
        creator = (
            None if job is None or job.most_pods is None else (f"Job {job.key}", job.most_pods)
        )
        self._creators[key] = creator
        return creator

    def add_gang(self, key: GroupKey, gang: GroupObject) -> None:
        """A Workload's gang (native or Kueue's), made on its first pod of ours; a
        CompositePodGroup's."""
        self.podgroups[key] = gang
        self._scheduler.upsert_group(self.policy(gang, key))
        if key.kind == KIND_COMPOSITE:
            self._changed(key)

    def drop_gang(self, key: GroupKey) -> None:
        if self.podgroups.pop(key, None) is not None:
            self.verdicts.pop(key, None)
            self._scheduler.remove_group(key.namespace, key.name, key.kind)

    def preempted(self, key: GroupKey, message: str) -> None:
        """The group lost members to a preemption: Kubernetes' own PodGroup says so
        in its ``DisruptionTarget`` condition (upstream's words; ours tell it by events),
        and so do a composite's children."""
        self._condition_preempted(key, message)
        for child in self._composites.children_of(key):
            self._condition_preempted(child, message)

    def _condition_preempted(self, key: GroupKey, message: str) -> None:
        group = self.podgroups.get(key)
        if group is None or (group.native is None and group.composite is None):
            return
        condition = disruption_condition(message, utc_now(whole_seconds=True))
        kept = [c for c in group.status.conditions if c.type != condition.type]
        status = group.status.model_copy(update={"conditions": [*kept, condition]})
        self.podgroups[key] = group.with_status(status, group.stored)
        self._changed(key)

    def set_status(self, key: GroupKey, status: PodGroupStatus, stored: object) -> None:
        """The status writer's record of what it derived, and what the server now holds."""
        group = self.podgroups.get(key)
        if group is not None and key.kind in (KIND_WORKLOAD, KIND_COMPOSITE, KIND_KUEUE):
            self.podgroups[key] = group.with_status(status, stored)
        elif group is not None:
            # Not a change to report: the writer itself concluded it.
            self.store(group.adapter, key, group.with_status(status, stored), notify=False)

    # -- verdicts ------------------------------------------------------------

    def set_verdict(self, key: GroupKey, verdict: Status | None) -> None:
        before = self.verdicts.get(key)
        if verdict is None:
            if before is not None:
                del self.verdicts[key]
                self._changed(key)
            return
        if before is None or (before.reason, before.message) != (verdict.reason, verdict.message):
            self.verdicts[key] = verdict
            self._changed(key)

    # -- policies --------------------------------------------------------------

    def clear_priority_classes(self) -> None:
        self.priority_classes.clear()

    def set_priority_class(self, name: str, value: int | None) -> None:
        """A PriorityClass's value (None: gone); the groups that name it follow."""
        if value is None:
            self.priority_classes.pop(name, None)
        else:
            self.priority_classes[name] = value
        for key, group in list(self.podgroups.items()):
            if group.spec.priority_class_name == name and group.spec.priority is None:
                self._scheduler.upsert_group(self.policy(group, key))

    def policy(self, group: GroupObject, key: GroupKey) -> GroupPolicy:
        """The group as the core's plain policy."""
        spec = group.spec
        priority = spec.priority
        if priority is None and spec.priority_class_name is not None:
            priority = self.priority_classes.get(spec.priority_class_name)
        created = group.creation_timestamp
        composite = group.composite
        return GroupPolicy(
            namespace=key.namespace,
            name=key.name,
            kind=key.kind,
            min_member=spec.min_member,
            creator=self._creator(group, key),
            role_minimums=spec.role_minimums(),
            min_resources=spec.min_resource_amounts(),
            priority=priority,
            schedule_timeout_seconds=spec.schedule_timeout_seconds,
            created=created.timestamp() if created is not None else 0.0,
            queue=spec.queue,
            topology_levels=spec.topology.levels() if spec.topology else (),
            role_topology=spec.role_topology(),
            min_run_seconds=self._min_run_seconds(group),
            evict_whole=(group.native is not None and group.native.disruption_all)
            or (composite is not None and composite.record.disrupt_all),
            roles_apart=composite is not None and not composite.record.disrupt_all,
            no_preemption=self._no_preemption(group),
            refused=self._refused(group, key) or (composite.waits if composite else None),
            shared_claims=group.native.resource_claims if group.native is not None else (),
            consumer=(
                (key.name, group.uid or "")
                if group.native is not None and group.native.resource_claims
                else None
            ),
        )

    @staticmethod
    def _no_preemption(group: GroupObject) -> str | None:
        """Why the group never evicts to be placed; None: it may."""
        composite = group.composite
        if (group.native is not None and group.native.never_preempts) or (
            composite is not None and composite.record.preempt_never
        ):
            return "its group's preemptionPolicy is Never"
        if group.api is kueue.API:
            # Kueue evicts Workloads to admit one: evicting more here would double it.
            return "Kueue preempts for the Workloads it admits, and its victims free the room"
        return None

    def _refused(self, group: GroupObject, key: GroupKey) -> tuple[Reason, str] | None:
        """Why a native group may not be placed as it is, if it may not."""
        mixed = self._mixed.get(key)
        if mixed:
            return (
                Reason.SCHEDULER_CONFLICT,
                f"the members of {key.title} name different schedulers "
                f"({', '.join(mixed)}): no scheduler can place the group whole; give every "
                "member the same spec.schedulerName",
            )
        return None

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
        self._complaints.invalid(
            InvalidObject(
                "PodGroup", group.namespace, group.name, group.uid or "", why, group.api.api_version
            )
        )
        return None


def _shadowed(key: GroupKey, *, ignored: GroupApi, used: GroupApi) -> None:
    log.warning(
        "PodGroup shadowed: a group of the same name in another API wins",
        group=str(key),
        ignored=str(ignored),
        used=str(used),
    )


def _controlling_job(metadata: Mapping[str, object]) -> str | None:
    """The uid of the Job that controls an object, if a Job does."""
    refs = metadata.get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind") == "Job":
            uid = ref.get("uid")
            return uid if isinstance(uid, str) else None
    return None
