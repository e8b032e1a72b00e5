"""A PodGroup's status, derived from its members and the scheduler's verdict.

Pure and synchronous: given the group's spec, its previous status, its member
pods and what the scheduling loop last concluded about it (the core's
:class:`~coscheduler.core.status.Status` of its latest failed attempt, the
*verdict*), :func:`derive`
returns the new status and the transitions worth an Event. The status writer
around it (:mod:`coscheduler.controller.writer`) only moves data in and out.

Counters:

* ``pending``: members not bound to a node and not finished;
* ``scheduled``: members bound to a node, whatever their phase since;
* ``running``, ``succeeded``, ``failed``, ``unknown``: members in that phase.

Phase, the first rule that holds wins (``bound`` counts bound members that
have not finished, ``done`` those that succeeded or failed):

1. ``Finished``: no member pending or bound-and-active, ≥ minMember succeeded.
2. ``Running``: ≥ minMember running or succeeded, and some running.
3. ``Failed``: a member failed, and the rest are not enough to run.
4. ``Unknown``: some members' state is unknown (their node is lost) and the
   group would be running with them.
5. ``Scheduled``: ≥ minMember bound (running or not).
6. ``Scheduling``: some members bound, fewer than minMember.
7. ``Pending``: nothing bound.

A Failed group recovers by the same rules once replacements come up.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from coscheduler.api.podgroup import (
    ConditionStatus,
    ConditionType,
    PodGroupCondition,
    PodGroupPhase,
    PodGroupSpec,
    PodGroupStatus,
)
from coscheduler.api.quantity import format_resource_list
from coscheduler.api.reasons import Reason
from coscheduler.core.positions import Position
from coscheduler.core.status import Status

__all__ = ["Member", "Transition", "derive", "in_line"]


class Member(Protocol):
    """What the status needs to know of one member pod."""

    @property
    def phase(self) -> str: ...
    @property
    def node_name(self) -> str | None: ...
    @property
    def requests(self) -> Mapping[str, int]: ...
    @property
    def owner_uid(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Transition:
    """A change worth an Event on the PodGroup."""

    kind: str  # "Normal" or "Warning"
    reason: str  # a Reason, or the new phase's name
    message: str
    #: A phase change's counts alone, without our phase names (for upstream's kinds).
    counts: str = ""


@dataclass(frozen=True, slots=True)
class _Counts:
    pending: int = 0
    scheduled: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    unknown: int = 0
    bound_active: int = 0
    allocated: dict[str, int] = field(default_factory=dict)
    owners: tuple[str, ...] = ()


def _count(members: Iterable[Member]) -> _Counts:
    pending = scheduled = running = succeeded = failed = unknown = bound_active = 0
    allocated: dict[str, int] = {}
    owners: set[str] = set()
    for member in members:
        if member.owner_uid:
            owners.add(member.owner_uid)
        phase = member.phase
        bound = bool(member.node_name)
        if phase == "Succeeded":
            succeeded += 1
        elif phase == "Failed":
            failed += 1
        elif phase == "Unknown":
            unknown += 1
        elif phase == "Running":
            running += 1
        elif not bound:
            pending += 1
        if bound:
            scheduled += 1
            if phase in ("Pending", "Running", "Unknown"):
                bound_active += 1
                for resource, amount in member.requests.items():
                    allocated[resource] = allocated.get(resource, 0) + amount
    return _Counts(
        pending,
        scheduled,
        running,
        succeeded,
        failed,
        unknown,
        bound_active,
        allocated,
        tuple(sorted(owners)),
    )


def _phase(counts: _Counts, min_member: int) -> PodGroupPhase:
    c = counts
    active = c.pending + c.bound_active
    if active == 0 and c.succeeded >= min_member:
        return PodGroupPhase.FINISHED
    if c.running > 0 and c.running + c.succeeded >= min_member:
        return PodGroupPhase.RUNNING
    if c.failed > 0:
        return PodGroupPhase.FAILED
    if c.unknown > 0 and c.running + c.succeeded + c.unknown >= min_member:
        return PodGroupPhase.UNKNOWN
    if c.bound_active + c.succeeded >= min_member:
        return PodGroupPhase.SCHEDULED
    if c.bound_active > 0:
        return PodGroupPhase.SCHEDULING
    return PodGroupPhase.PENDING


def _condition(
    previous: PodGroupStatus,
    condition_type: ConditionType,
    status: ConditionStatus,
    reason: Reason,
    message: str,
    now: datetime.datetime,
) -> PodGroupCondition:
    """A condition whose transition time moves only when its status changes."""
    before = previous.condition(condition_type)
    transition_time = now
    if before is not None and before.status == status and before.last_transition_time:
        transition_time = before.last_transition_time
    return PodGroupCondition(
        type=condition_type,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=transition_time,
    )


def derive(
    *,
    spec: PodGroupSpec,
    previous: PodGroupStatus,
    members: Iterable[Member],
    verdict: Status | None,
    now: datetime.datetime,
    domain: str | None = None,
    position: Position | None = None,
) -> tuple[PodGroupStatus, list[Transition]]:
    """The group's new status and the transitions since ``previous``.

    ``domain`` (``key=value``) is where a group with ``spec.topology`` has
    its bound members, said in the Scheduled condition. ``position`` is the
    group's place in line as last published (:mod:`~coscheduler.controller.positions`),
    while it waits: in ``queuePosition``/``clusterPosition`` and the Scheduled
    condition's message (the one kinds whose status has no such fields show).
    """
    counts = _count(members)
    phase = _phase(counts, spec.min_member)
    placed = phase in (
        PodGroupPhase.SCHEDULED,
        PodGroupPhase.RUNNING,
        PodGroupPhase.FINISHED,
    )
    if placed:
        position = None
    conditions = [
        _scheduled_condition(
            previous, counts, spec.min_member, placed, verdict, domain, now, position
        ),
        _unschedulable_condition(previous, placed, verdict, now),
    ]
    status = _status(previous, phase, counts, conditions, verdict, now)
    if position is not None:
        status = status.model_copy(
            update={
                "queue_position": position.in_queue,
                "cluster_position": position.in_cluster,
            }
        )
    return status, _transitions(previous, status, verdict, spec.min_member)


def in_line(position: Position) -> str:
    """``position 2 in queue q, 5 in the cluster`` (no line lengths: they move with
    every group that joins or leaves, and the message would have to be rewritten)."""
    return (
        f"position {position.in_queue} in queue {position.queue}, "
        f"{position.in_cluster} in the cluster"
    )


def _scheduled_condition(
    previous: PodGroupStatus,
    counts: _Counts,
    min_member: int,
    placed: bool,
    verdict: Status | None,
    domain: str | None,
    now: datetime.datetime,
    position: Position | None = None,
) -> PodGroupCondition:
    """``Scheduled``: True once placed (and where), else False with the verdict's reason
    (and its place in line, while it has one)."""
    bound = counts.bound_active + counts.succeeded
    if placed:
        return _condition(
            previous,
            ConditionType.SCHEDULED,
            ConditionStatus.TRUE,
            Reason.MIN_MEMBER_SCHEDULED,
            f"{bound} of minMember {min_member} members are bound"
            + (f" in {domain}" if domain else ""),
            now,
        )
    return _condition(
        previous,
        ConditionType.SCHEDULED,
        ConditionStatus.FALSE,
        verdict.reason if verdict else Reason.WAITING,
        f"{bound} of minMember {min_member} members are bound"
        + (f": {verdict.message}" if verdict else "")
        + (f" ({in_line(position)})" if position is not None else ""),
        now,
    )


def _unschedulable_condition(
    previous: PodGroupStatus, placed: bool, verdict: Status | None, now: datetime.datetime
) -> PodGroupCondition:
    """``Unschedulable``: True while an attempt fails and the group is not placed."""
    if verdict is not None and not placed:
        return _condition(
            previous,
            ConditionType.UNSCHEDULABLE,
            ConditionStatus.TRUE,
            verdict.reason,
            verdict.message,
            now,
        )
    return _condition(
        previous,
        ConditionType.UNSCHEDULABLE,
        ConditionStatus.FALSE,
        Reason.SCHEDULABLE,
        "the group can be placed" if not placed else "the group is placed",
        now,
    )


def _status(
    previous: PodGroupStatus,
    phase: PodGroupPhase,
    counts: _Counts,
    conditions: list[PodGroupCondition],
    verdict: Status | None,
    now: datetime.datetime,
) -> PodGroupStatus:
    """The status from its parts; conditions of other types are kept after ours."""
    others = [
        c
        for c in previous.conditions
        if c.type not in (ConditionType.SCHEDULED, ConditionType.UNSCHEDULABLE)
    ]
    start = previous.schedule_start_time
    if start is None and (verdict is not None or counts.scheduled > 0):
        start = now
    return PodGroupStatus(
        phase=phase,
        conditions=[*conditions, *others],
        pending=counts.pending,
        scheduled=counts.scheduled,
        running=counts.running,
        succeeded=counts.succeeded,
        failed=counts.failed,
        unknown=counts.unknown,
        schedule_start_time=start,
        # Several owners (rare: a group spread over two Jobs) are listed up
        # to what the field holds.
        occupied_by=",".join(counts.owners[:6]) or None,
        allocated=dict(format_resource_list(counts.allocated)) or None,
    )


def _transitions(
    previous: PodGroupStatus, status: PodGroupStatus, verdict: Status | None, min_member: int
) -> list[Transition]:
    transitions: list[Transition] = []
    if status.phase != previous.phase:
        kind = (
            "Warning" if status.phase in (PodGroupPhase.FAILED, PodGroupPhase.UNKNOWN) else "Normal"
        )
        counts = (
            f"{status.scheduled} scheduled, {status.running} running, "
            f"{status.succeeded} succeeded, {status.failed} failed (minMember {min_member})"
        )
        transitions.append(
            Transition(
                kind,
                status.phase.value,
                f"phase {previous.phase.value} -> {status.phase.value}: {counts}",
                counts,
            )
        )
    before = previous.condition(ConditionType.UNSCHEDULABLE)
    after = status.condition(ConditionType.UNSCHEDULABLE)
    if (
        verdict is not None
        and after is not None
        and after.status == ConditionStatus.TRUE
        and (before is None or before.status != after.status or before.message != after.message)
    ):
        transitions.append(Transition("Warning", Reason.FAILED_SCHEDULING, verdict.message))
    return transitions
