"""Jobs (``batch/v1``): gang owners, and the resolver of a pod's group by owner.

Only while Jobs are read (``watched``: the process may list them) do pods
join groups by owner; a process that cannot list Jobs places their pods
alone. :class:`JobOwners` is the resolver the pod handler asks: a pod whose
controlling owner is a Job joins the group the core's owner rule gives it
(:func:`~coscheduler.core.owners.owner_group`). :class:`JobHandler` reads
the Jobs into it and acts on what each change returns (:class:`JobChange`):
when a Job's answer changes, its pods are fed in again; when its size does,
the groups store hears of it. ``changed`` tells the controller which Jobs'
PodGroups to make.

Under Volcano's scheduler name, ReplicaSets and StatefulSets are owners too
(:class:`VolcanoOwnerHandler`), and so is a Job that carries Volcano's
annotation instead of ours (:mod:`~coscheduler.api.adapters.volcano_owners`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from coscheduler.api.adapters import apis
from coscheduler.api.adapters.volcano_owners import volcano_owner
from coscheduler.api.owners import GANG_OWNER_KINDS, GangOwner
from coscheduler.api.pod import PodInfo
from coscheduler.core.group import GroupKey
from coscheduler.core.owners import owner_group
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import KeyedHandler, meta

__all__ = ["JobChange", "JobHandler", "JobOwners", "VolcanoOwnerHandler"]


@dataclasses.dataclass(frozen=True, slots=True)
class JobChange:
    """What keeping or forgetting a Job changed."""

    #: Its answer (a gang or not, or the Job gone): its pods' groups follow.
    regroup: bool = False
    #: It came, went or runs another number of pods at once: the native groups
    #: it makes members for follow.
    resized: bool = False


class JobOwners:
    """Jobs by uid, read as gang owners, and which pods each owns."""

    def __init__(
        self,
        scheduler: Scheduler,
        *,
        changed: Callable[[GangOwner], None],
        namespaces: frozenset[str] = frozenset(),
    ) -> None:
        self._scheduler = scheduler
        self._changed = changed
        self._namespaces = namespaces
        self.owners: dict[str, GangOwner] = {}
        #: True once Jobs are listed: only then do pods join groups by owner.
        self.watched = False
        #: Volcano's owner kinds listed so far (ReplicaSet, StatefulSet), whose pods
        #: join groups by owner from then on.
        self.watched_kinds: set[str] = set()
        #: Whether we stand in for Volcano's scheduler, whose owner annotation is read.
        self.volcano = scheduler.settings.scheduler_name == apis.VOLCANO_SCHEDULER
        #: Owner uid -> the uids of its pods (of gang owner kinds only).
        self._owned: dict[str, set[str]] = {}
        #: The group named after a Job that asks for a gang -> the Job's uid.
        self._owner_of_group: dict[GroupKey, str] = {}

    # -- asked by the pod handler --------------------------------------------

    def by_owner(self, pod: PodInfo) -> bool:
        """Whether the pod may join a group by owner: ours to place, and its owner's kind
        read (a Job; under Volcano's name, a ReplicaSet or StatefulSet too)."""
        if pod.scheduler_name != self._scheduler.settings.scheduler_name:
            return False
        if pod.owner_kind in GANG_OWNER_KINDS:
            return self.watched
        return pod.owner_kind in self.watched_kinds

    def assign(self, pod: PodInfo) -> PodInfo:
        """The pod with the group its owner gives it, if it joins one by owner."""
        if not self.by_owner(pod):
            return pod
        group = owner_group(pod, self.owners, volcano=self.volcano)
        return pod if group == pod.owner_group else dataclasses.replace(pod, owner_group=group)

    def index(self, pod: PodInfo, before: PodInfo | None) -> None:
        if before is not None and before.owner_uid and before.owner_uid != pod.owner_uid:
            self.unindex(before.owner_uid, pod.uid)
        if pod.owner_uid and self.by_owner(pod):
            self._owned.setdefault(pod.owner_uid, set()).add(pod.uid)

    def unindex(self, owner_uid: str, uid: str) -> None:
        pods = self._owned.get(owner_uid)
        if pods is not None:
            pods.discard(uid)
            if not pods:
                del self._owned[owner_uid]

    def owned(self, owner_uid: str) -> list[str]:
        return list(self._owned.get(owner_uid, ()))

    # -- asked by the groups and the loop ------------------------------------

    def group_moved(self, key: GroupKey) -> None:
        """A PodGroup appeared or went: the Job named like it may need one (again)."""
        owner = self.owner_of_group(key)
        if owner is not None:
            self._changed(owner)

    def job(self, uid: str) -> GangOwner | None:
        """The Job of that uid, if it is known."""
        return self.owners.get(uid)

    def job_named(self, namespace: str, name: str) -> GangOwner | None:
        """The Job of that name, if it is known (a Workload names its controller so)."""
        for owner in self.owners.values():
            if owner.name == name and owner.namespace == namespace:
                return owner
        return None

    def owner_of_group(self, key: GroupKey) -> GangOwner | None:
        """The Job that asks for the group named ``key``, if one does."""
        uid = self._owner_of_group.get(key)
        return None if uid is None else self.owners.get(uid)

    def wait_message(self, key: GroupKey) -> str | None:
        """Why the members of a group by owner wait for a PodGroup; None if it is not one."""
        owner = self.owner_of_group(key)
        if owner is not None:
            kind = owner.kind.lower()
            if owner.problem is not None:
                return (
                    f"{owner.kind} {owner.key} asks for a gang but {owner.problem}; its pods "
                    f"wait (see kubectl describe {kind} {owner.name} -n {owner.namespace})"
                )
            return (
                f"waiting for PodGroup {key}, which coscheduler makes for {owner.kind} "
                f"{owner.key} (annotation {owner.annotation})"
            )
        pending, _ = self._scheduler.members(key)
        for pod in pending:
            if pod.group is None and pod.owner_group == key.name:
                return (
                    f"waiting to see {pod.owner_kind} {key.namespace}/{pod.owner_name}, the "
                    "owner of this pod: its pods are placed only once it is known whether it "
                    "asks for a gang"
                )
        return None

    # -- written by the Job handler ------------------------------------------

    def upsert(self, owner: GangOwner) -> JobChange:
        """Keep the Job."""
        before = self.owners.get(owner.uid)
        if before == owner:
            return JobChange()
        self.owners[owner.uid] = owner
        self._set_owner_of_group(before, owner)
        if owner.wants_gang:
            self._changed(owner)
        return JobChange(
            regroup=before is None or before.wants_gang != owner.wants_gang,
            resized=before is None or before.most_pods != owner.most_pods,
        )

    def remove(self, uid: str) -> GangOwner | None:
        """Forget the Job; the Job when it was known (its pods wait as members of its group)."""
        owner = self.owners.pop(uid, None)
        if owner is not None:
            self._set_owner_of_group(owner, None)
        return owner

    def ours(self, owner: GangOwner) -> bool:
        return not self._namespaces or owner.namespace in self._namespaces

    def _set_owner_of_group(self, before: GangOwner | None, after: GangOwner | None) -> None:
        if before is not None and before.wants_gang:
            self._owner_of_group.pop(GroupKey(before.namespace, before.group_name), None)
        if after is not None and after.wants_gang:
            self._owner_of_group[GroupKey(after.namespace, after.group_name)] = after.uid


class _Refeed(Protocol):
    def refeed(self, uids: Iterable[str]) -> None: ...


class JobHandler(KeyedHandler[str]):
    """Every Job (not only annotated ones): a pod is placed alone only once its Job is
    known to ask for no gang."""

    #: The owner kind it reads.
    kind = "Job"

    def __init__(
        self, owners: JobOwners, pods: _Refeed, resized: Callable[[GangOwner], None]
    ) -> None:
        self._owners = owners
        self._pods = pods
        self._resized = resized

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None:
        self._owners.watched = True
        super().replace(objects)

    def upsert(self, raw: Mapping[str, Any]) -> str | None:
        owner = self.read(raw)
        if owner is None or not self._owners.ours(owner):
            return None
        change = self._owners.upsert(owner)
        if change.resized:
            self._resized(owner)
        if change.regroup:
            self._pods.refeed(self._owners.owned(owner.uid))
        return owner.uid

    def read(self, raw: Mapping[str, Any]) -> GangOwner | None:
        owner = GangOwner.from_job(raw)
        if owner is not None and not owner.wants_gang and self._owners.volcano:
            theirs = volcano_owner(raw, "Job")
            return theirs if theirs is not None and theirs.wants_gang else owner
        return owner

    def known(self) -> Iterable[str]:
        return [uid for uid, owner in self._owners.owners.items() if owner.kind == self.kind]

    def forget(self, key: str) -> None:
        owner = self._owners.remove(key)
        if owner is not None:
            self._resized(owner)
            self._pods.refeed(self._owners.owned(key))

    def key_of(self, raw: Mapping[str, Any]) -> str | None:
        uid = meta(raw).get("uid")
        return uid if isinstance(uid, str) else None


class VolcanoOwnerHandler(JobHandler):
    """ReplicaSets or StatefulSets, read under Volcano's scheduler name only: Volcano's
    controller groups their pods by the owner's annotation."""

    def __init__(
        self, owners: JobOwners, pods: _Refeed, resized: Callable[[GangOwner], None], kind: str
    ) -> None:
        super().__init__(owners, pods, resized)
        self.kind = kind

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None:
        self._owners.watched_kinds.add(self.kind)
        KeyedHandler.replace(self, objects)

    def read(self, raw: Mapping[str, Any]) -> GangOwner | None:
        return volcano_owner(raw, self.kind)
