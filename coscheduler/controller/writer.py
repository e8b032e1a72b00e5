"""Writes each PodGroup's status when its members, object or verdict change.

Changes arrive as group keys marked dirty (from pod and PodGroup watch
events and from the scheduling loop's verdicts). The writer waits a short
moment before each round, so the dozens of pod events of one gang being bound
become one status write, not dozens. Per dirty group, one round:

1. derives the new status from the members (:func:`status.derive`);
2. renders it in the group's own API shape (its adapter's) and writes it
   with a merge patch of ``/status`` only if that differs from what the API
   server holds (as last seen or written); a group of a shared API
   (``scheduling.x-k8s.io``, Volcano's, T9k's) none of whose members is ours
   is left to the scheduler its members name (one with no members yet is
   written when we run under its API's own scheduler name);
3. records an Event on the PodGroup for each transition (phase changes,
   a new reason for being unschedulable). A native Workload's gangs have no
   status to write (their adapter's stored form never changes): they get
   the events alone, on the Workload, each naming its podGroup and replica.
   Kubernetes' own PodGroup gets its conditions in upstream's words (its
   adapter's ``conclude``) and a ``Scheduled`` event when it is placed.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Final

import structlog

from coscheduler.api.adapters.apis import GroupApi
from coscheduler.api.adapters.base import GroupObject
from coscheduler.api.podgroup import PodGroupPhase, PodGroupStatus
from coscheduler.api.reasons import Reason
from coscheduler.api.timestamps import utc_now
from coscheduler.controller.backoff import RoundBackoff
from coscheduler.controller.status import Transition, derive
from coscheduler.core.group import GroupKey
from coscheduler.core.positions import Position
from coscheduler.runtime.errors import ApiError, NotFound
from coscheduler.runtime.events import EventKind, ObjectRef
from coscheduler.runtime.kube import MERGE_PATCH
from coscheduler.runtime.readmodel import ChangedGroups, ReadModel
from coscheduler.runtime.reporter import Reporter

__all__ = ["FAILED", "UNCHANGED", "ChangedGroups", "StatusWriter", "Written"]

log = structlog.get_logger(__name__)

_PLACED = frozenset({PodGroupPhase.SCHEDULED, PodGroupPhase.RUNNING, PodGroupPhase.FINISHED})


def _in_upstream_words(before: PodGroupPhase, transitions: list[Transition]) -> list[Transition]:
    """Kubernetes' own PodGroup tells its placement as kube-scheduler does: a
    ``Scheduled`` event once placed, ``FailedScheduling`` and warnings; our
    phase names mean nothing on that kind, so its other moves are not told."""
    told = []
    for transition in transitions:
        if transition.reason in _PLACED and before not in _PLACED:
            told.append(
                Transition("Normal", Reason.SCHEDULED, transition.counts or transition.message)
            )
        elif transition.kind == "Warning":
            told.append(transition)
    return told


@dataclass(frozen=True, slots=True)
class Written:
    """How one object's reconcile ended."""

    #: False when a write failed and is worth trying again.
    ok: bool
    #: The object's resourceVersion in the API server's answer, when it was written
    #: and its follower needs it (a Queue's, :mod:`.handlers`).
    version: str | None = None


UNCHANGED: Final = Written(ok=True)
FAILED: Final = Written(ok=False)


class StatusWriter:
    def __init__(
        self,
        *,
        view: ReadModel,
        changed: ChangedGroups,
        reporter: Reporter,
        written: Callable[[GroupKey, PodGroupStatus, object], None],
        debounce_seconds: float = 0.25,
        concurrency: int = 8,
        positions: Mapping[GroupKey, Position] | None = None,
        followed: Collection[GroupApi] = (),
    ) -> None:
        self._view = view
        #: Told the status derived and written (or already held), so that the next round
        #: compares with it even before the PodGroup's own watch event comes back (an
        #: assumption, as kube-scheduler's cache assumes a pod bound before its event).
        self._written = written
        #: APIs whose groups Kopf's handlers follow, by namespace (:mod:`.handlers`):
        #: the rounds leave them to :meth:`reconcile`, called by those handlers.
        self._followed = frozenset(followed)
        #: Each pending group's place in line, as published (:mod:`.positions`).
        self._positions: Mapping[GroupKey, Position] = {} if positions is None else positions
        self._changed = changed
        self._client = reporter.client
        self._events = reporter.events
        self._metrics = reporter.metrics
        self._backoff = RoundBackoff(debounce_seconds)
        self._slots = asyncio.Semaphore(concurrency)
        self.writes = 0
        self._scheduler_name = view.scheduler_name

    def mark(self, key: GroupKey) -> None:
        """The group's status may have changed."""
        self._changed.mark(key)

    def mark_all(self) -> None:
        for key in self._view.group_keys():
            self.mark(key)

    async def run(self) -> None:
        while True:
            await self._changed.wake.wait()
            await asyncio.sleep(self._backoff.pause)
            await self.write_marked()

    async def write_marked(self) -> None:
        """One round: every group marked so far, each written if its status changed."""
        keys = self._changed.take()
        written = await asyncio.gather(
            *(self._reconcile(key) for key in sorted(keys) if not self._is_followed(key))
        )
        self._backoff.round_done(failed=not all(outcome.ok for outcome in written))
        self._report_phases()

    def _is_followed(self, key: GroupKey) -> bool:
        group = self._view.group(key)
        return group is not None and group.api in self._followed

    async def reconcile(self, key: GroupKey) -> Written:
        """Derive and write one group's status now (its namespace's Kopf handler's step)."""
        # The phases' gauge is set by the rounds, which every mark wakes.
        return await self._reconcile(key)

    def _report_phases(self) -> None:
        phases = Counter(group.status.phase for group in self._view.groups())
        for phase in PodGroupPhase:
            self._metrics.podgroups.labels(phase=phase.value).set(phases.get(phase, 0))

    def _domain(self, group: GroupObject, key: GroupKey) -> str | None:
        """The narrowest ``spec.topology`` domain holding every bound member, if any."""
        topology = group.spec.topology
        if topology is None:
            return None
        nodes = {pod.node_name for pod in self._view.members(key) if pod.node_name}
        if not nodes:
            return None
        for level in topology.levels():
            values = set()
            for name in nodes:
                labels = self._view.node_labels(name)
                values.add(None if labels is None else labels.get(level))
            if len(values) == 1 and None not in values:
                return f"{level}={values.pop()}"
        return None

    async def _reconcile(self, key: GroupKey) -> Written:
        group = self._view.group(key)
        if group is None:
            return UNCHANGED
        members = self._view.members(key)
        adapter = group.adapter
        ours = any(m.scheduler_name == self._scheduler_name for m in members)
        # A shared API's group none of whose members is ours is left to its own
        # scheduler, but not one with no members: a native group or composite whose
        # members are all gone (evicted whole by us) may still have a condition to
        # tell, and a group with no pods yet is ours when we stand in for the API's
        # own scheduler (operators in Volcano mode make the pods once it is Inqueue).
        upstream = group.native is not None or group.composite is not None
        standing_in = group.api.home_scheduler == self._scheduler_name
        memberless_ours = not members and (upstream or standing_in)
        if adapter.shared and not ours and not memberless_ours:
            return UNCHANGED  # another scheduler's group, in an API we share with it
        status, transitions = derive(
            spec=group.spec,
            previous=group.status,
            members=members,
            verdict=self._view.verdict(key),
            now=utc_now(whole_seconds=True),
            domain=self._domain(group, key),
            position=self._positions.get(key),
        )
        status = adapter.conclude(status)
        if upstream:
            transitions = _in_upstream_words(group.status.phase, transitions)
        body = adapter.render_status(status, members)
        stored = adapter.stored_form(body)
        if stored == group.stored:
            if status == group.status:
                return UNCHANGED
            # What the API holds already says it (its shape has no place for what
            # changed, such as a condition): nothing to write, but the story goes on.
            self._written(key, self._kept(key, group, status), stored)
            self._record(group, transitions)
            return UNCHANGED
        path = group.api.status_path(key.namespace, key.name)
        async with self._slots:
            try:
                await self._client.send(
                    "PATCH", path, body={"status": body}, content_type=MERGE_PATCH
                )
            except NotFound:
                return UNCHANGED  # the group was deleted meanwhile
            except ApiError as error:
                if error.retryable:
                    log.warning("status not written", group=str(key), error=str(error))
                    if group.api not in self._followed:
                        self.mark(key)  # its follower tries again itself
                    return FAILED
                log.warning("status refused", group=str(key), error=str(error))
                return UNCHANGED
        self.writes += 1
        self._written(key, self._kept(key, group, status), stored)
        self._record(group, transitions)
        return Written(ok=True)

    def _kept(self, key: GroupKey, before: GroupObject, status: PodGroupStatus) -> PodGroupStatus:
        """``status`` with the conditions the group gained while it was being written.

        The preempter adds ``DisruptionTarget`` to the stored group at any time;
        recorded over by a status derived before it came, it would be lost.
        """
        now = self._view.group(key)
        if now is None or now is before:
            return status
        gained = [
            condition
            for condition in now.status.conditions
            if before.status.condition(condition.type) is None
            and status.condition(condition.type) is None
        ]
        if not gained:
            return status
        return status.model_copy(update={"conditions": [*status.conditions, *gained]})

    def _record(self, group: GroupObject, transitions: list[Transition]) -> None:
        ref = ObjectRef(
            group.api.api_version,
            group.api.kind,
            group.namespace,
            group.name,
            group.uid or "",
        )
        for transition in transitions:
            kind: EventKind = "Warning" if transition.kind == "Warning" else "Normal"
            # An object with several gangs (a Workload) says which one moved,
            # unless the message names it already (the planner's verdicts do).
            message = transition.message
            if group.within and group.within not in message:
                message = f"{group.within}: {message}"
            # A PodGroup's story must be current in `kubectl describe`: a new
            # reason for waiting shows within seconds, not an event interval.
            self._events.record(ref, kind, transition.reason, message, change_interval=2.0)
