"""Makes the PodGroup of each Job that asks for a gang (``scheduling.sigs.k8s.io/gang``).

Level-triggered: the Job handler marks a Job whenever it changes
(:mod:`coscheduler.runtime.handlers.jobs`), and the groups whenever the
PodGroup named after it appears or goes; one worker takes the marked Jobs and, for
each, as it is now:

1. The annotation is invalid: a Warning event on the Job says what to fix
   (``InvalidGangAnnotation``); nothing is made, and its pods wait.
2. The Job is being deleted: nothing (its PodGroup goes with it). Its pod
   template names another scheduler: a Warning event says the annotation has
   no effect, when that scheduler is the default one (another coscheduler's
   Jobs are left to it).
3. No PodGroup of that name: create it, controlled by the Job, so the garbage
   collector deletes it with the Job (``PodGroupCreated``).
4. A PodGroup of that name controlled by this Job: its ``minMember``, queue
   and priority class follow the Job (parallelism changed, the last wave).
5. A PodGroup of that name controlled by a Job of the same name with another
   uid: the previous Job's, which the garbage collector is deleting; its
   deletion marks the Job again and step 3 follows.
6. Any other PodGroup of that name: left as it is, never overwritten; a
   Warning event (``PodGroupNotOwned``) says the pods join it.

Under Volcano's scheduler name, a ReplicaSet, StatefulSet or Job annotated
``scheduling.volcano.sh/group-min-member`` is such an owner too: its PodGroup
is Volcano's, named as Volcano's controller names it
(:mod:`~coscheduler.api.adapters.volcano_owners`), through the same steps.

A request that fails is retried with backoff; a create that meets an existing
object (409) waits for that object's watch event, which marks the Job again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

import structlog

from coscheduler.api.adapters.base import GroupObject
from coscheduler.api.owners import GangOwner, controller_reference, owns
from coscheduler.api.reasons import Reason
from coscheduler.core.group import GroupKey
from coscheduler.runtime.errors import ApiError, Conflict, NotFound
from coscheduler.runtime.events import ObjectRef
from coscheduler.runtime.kube import MERGE_PATCH
from coscheduler.runtime.readmodel import Marks, ReadModel
from coscheduler.runtime.reporter import Reporter

__all__ = ["JobGroupMaker"]

log = structlog.get_logger(__name__)

_DEFAULT_SCHEDULERS: Final = frozenset({"", "default-scheduler"})


class JobGroupMaker:
    """Creates and keeps the PodGroup of each Job that asks for a gang (steps 1-6)."""

    def __init__(
        self,
        *,
        view: ReadModel,
        marked: Marks[str],
        reporter: Reporter,
        retry_initial_seconds: float = 0.5,
        retry_max_seconds: float = 30.0,
    ) -> None:
        self._view = view
        self._marked = marked
        self._client = reporter.client
        self._events = reporter.events
        self._scheduler_name = view.scheduler_name
        self._retry = (retry_initial_seconds, retry_max_seconds)
        self._failures: dict[str, int] = {}
        self.created = 0

    def mark(self, owner: GangOwner) -> None:
        """Look at this Job again (it, or the PodGroup named after it, changed)."""
        self._marked.mark(owner.uid)

    async def run(self) -> None:
        while True:
            await self._marked.wake.wait()
            for uid in sorted(self._marked.take()):
                owner = self._view.owner(uid)  # as it is now; None once deleted
                if owner is None:
                    self._failures.pop(uid, None)
                    continue
                try:
                    await self.reconcile(owner)
                except ApiError as error:
                    self._retry_later(owner, error)
                else:
                    self._failures.pop(uid, None)

    def _retry_later(self, owner: GangOwner, error: ApiError) -> None:
        failures = self._failures.get(owner.uid, 0) + 1
        self._failures[owner.uid] = failures
        initial, most = self._retry
        delay = min(most, initial * 2 ** (failures - 1))
        log.warning(
            "PodGroup of a Job not made yet, retrying",
            job=owner.key,
            error=str(error),
            retry_in_seconds=delay,
        )
        asyncio.get_running_loop().call_later(delay, self.mark, owner)

    async def reconcile(self, owner: GangOwner) -> None:
        """Steps 1-6 for one Job; raises :class:`ApiError` when a request fails."""
        if not owner.wants_gang or owner.deleting:
            return
        job = ObjectRef(owner.api_version, owner.kind, owner.namespace, owner.name, owner.uid)
        if owner.problem is not None:
            self._events.record(job, "Warning", Reason.INVALID_GANG, owner.problem)
            return
        if owner.scheduler_name != self._scheduler_name:
            if owner.scheduler_name in _DEFAULT_SCHEDULERS:
                self._events.record(
                    job,
                    "Warning",
                    Reason.INVALID_GANG,
                    f"annotation {owner.annotation} has no effect: the pod template's "
                    f"schedulerName is {owner.scheduler_name or 'unset'} (default-scheduler "
                    f"places pods one by one); set spec.template.spec.schedulerName: "
                    f"{self._scheduler_name}",
                )
            return
        key = GroupKey(owner.namespace, owner.group_name)
        group = self._view.group(key)
        if group is None:
            await self._create(owner, job, key)
        elif group.api == owner.api and owns(owner.uid, group.metadata):
            await self._follow(owner, group, key)
        elif _previous_jobs(owner, group.metadata):
            log.info("PodGroup of a deleted Job of the same name still there", job=owner.key)
        else:
            self._events.record(
                job,
                "Warning",
                Reason.POD_GROUP_NOT_OWNED,
                f"{group.api.kind} {key} ({group.api.api_version}) exists and is not this "
                f"Job's: coscheduler leaves it as it is and the Job's pods join it "
                f"(minMember {group.spec.min_member}); to have one made for the Job, delete "
                f"that PodGroup or rename the Job",
            )

    async def _create(self, owner: GangOwner, job: ObjectRef, key: GroupKey) -> None:
        api = owner.api
        path = f"/apis/{api.api_version}/namespaces/{owner.namespace}/{api.plural}"
        try:
            await self._client.call("POST", path, body=owner.podgroup(api.api_version))
        except Conflict:
            # Made meanwhile (by us before a restart, or by someone): its watch
            # event marks the Job again, and steps 4-6 decide.
            return
        self.created += 1
        spec = owner.spec
        min_member = spec.min_member if spec is not None else 1
        log.info("PodGroup made for a Job", group=str(key), min_member=min_member)
        self._events.record(
            job,
            "Normal",
            Reason.POD_GROUP_CREATED,
            f"created PodGroup {key} (minMember {min_member}) for this {owner.kind}'s pods",
        )

    async def _follow(self, owner: GangOwner, group: GroupObject, key: GroupKey) -> None:
        wanted = owner.spec_fields()
        spec = group.spec
        have = {
            "minMember": spec.min_member,
            "queue": spec.queue,
            "priorityClassName": spec.priority_class_name,
        }
        if wanted == have:
            return
        path = (
            f"/apis/{owner.api.api_version}/namespaces/{owner.namespace}/"
            f"{owner.api.plural}/{owner.group_name}"
        )
        try:
            await self._client.call("PATCH", path, body={"spec": wanted}, content_type=MERGE_PATCH)
        except NotFound:
            return  # deleted meanwhile: its watch event marks the Job again
        log.info("PodGroup follows its Job", group=str(key), spec=wanted, was=have)


def _previous_jobs(owner: GangOwner, metadata: Mapping[str, Any]) -> bool:
    """Whether the PodGroup is controlled by an earlier Job of the same name (now deleted)."""
    ref = controller_reference(metadata)
    return (
        ref is not None
        and ref.get("kind") == owner.kind
        and ref.get("name") == owner.name
        and ref.get("uid") != owner.uid
    )
