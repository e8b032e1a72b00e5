"""What an attempt returns: the decision, and the preemption order it carries.

A :class:`Decision` is the outcome of one attempt for one group (the
planner's, then the queue's and preemption's say); the runtime carries it
out: its bindings, its volume actions, and its preemption :class:`Order`
(a :class:`PreemptionPlan` to evict, or only to tell).
"""

from __future__ import annotations

from dataclasses import dataclass

from coscheduler.api.devices import ResourceClaimInfo
from coscheduler.api.pod import PodInfo
from coscheduler.core.devices import ClaimWrite, PodDevices
from coscheduler.core.group import GroupKey
from coscheduler.core.statement import Binding, VolumeAction
from coscheduler.core.status import Status
from coscheduler.core.victims import Cost, Victim

__all__ = ["Decision", "Order", "PreemptionPlan"]


@dataclass(frozen=True, slots=True)
class PreemptionPlan:
    """What to evict so the preemptor fits, or why nothing will be.

    ``nominated`` is where the preemptor's members go once the victims are
    gone (the planner's bindings in the last trial of exactly these victims).
    ``exhausted``: the budget ran out, so the plan is sufficient but perhaps
    not the smallest. ``summary`` says it for people.
    """

    preemptor: GroupKey
    victims: tuple[Victim, ...] = ()
    nominated: tuple[Binding, ...] = ()
    cost: Cost | None = None
    trials: int = 0
    exhausted: bool = False
    summary: str = ""
    #: The preemptor's priority.
    priority: int = 0
    #: Whether there is anything to tell: False when no running pod could be
    #: a victim at all (the common case of a full cluster of equals).
    worth_telling: bool = True
    #: The devices (DRA) the nominated members took in that trial: the hold keeps them.
    nominated_devices: tuple[PodDevices, ...] = ()

    @property
    def found(self) -> bool:
        return bool(self.victims)

    @property
    def pods(self) -> tuple[PodInfo, ...]:
        """Every pod to evict, once each."""
        seen: dict[str, PodInfo] = {}
        for victim in self.victims:
            for pod in victim.pods:
                seen.setdefault(pod.uid, pod)
        return tuple(seen.values())


@dataclass(frozen=True, slots=True)
class Order:
    """For the runtime: carry out ``plan`` (evict) or only show it (dry-run, or no plan)."""

    plan: PreemptionPlan
    evict: bool
    decided: float


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of one attempt for one group.

    ``bindings`` are assumed in the snapshot already; the runtime binds them
    and reports a failed one back (``forget``). ``bound`` is how many members
    were bound before the attempt, ``needed`` how many more were needed to
    reach ``minMember`` and the role minimums, ``admitted`` whether the group
    holds them after this decision, ``pending`` the keys (namespace/name) of
    the members still pending afterwards, and ``unplaced`` why the members left
    pending by an admitted group did not fit (a failed attempt's ``status``
    says it for all of its members).
    """

    group: GroupKey
    status: Status
    bindings: tuple[Binding, ...] = ()
    members: int = 0
    bound: int = 0
    needed: int = 0
    admitted: bool = False
    pending: tuple[str, ...] = ()
    unplaced: Status | None = None
    #: Claims to bind or provision before any binding (see :mod:`~coscheduler.core.volumes`).
    volume_actions: tuple[VolumeAction, ...] = ()
    #: Claims' allocations and reservations (DRA) to write before any binding.
    device_writes: tuple[ClaimWrite, ...] = ()
    #: Claims (DRA) allocated for members that could not be placed: deallocate them.
    device_releases: tuple[ResourceClaimInfo, ...] = ()
    #: The exception that ended the attempt (``InternalError``), for the log's traceback.
    error: Exception | None = None
    #: What preemption decided for the group after this attempt: a plan to carry out
    #: (evict) or only to tell; None when there is nothing new to tell.
    preemption: Order | None = None
    #: A victim search ran after this attempt: whether it found a plan (for metrics).
    preemption_found: bool | None = None
    #: A preemptor placed: seconds since its plan was made (for metrics).
    preemption_waited: float | None = None

    @property
    def ok(self) -> bool:
        return self.status.ok

    @property
    def why_pending(self) -> Status | None:
        """Why the members in ``pending`` still wait; None when none does.

        Every pending member of ours gets a reason after an attempt: those of a
        failed attempt share its status, those left over by an admitted group
        (beyond ``minMember``, or of a group already running) get ``unplaced``.
        """
        if not self.pending:
            return None
        return self.unplaced or (None if self.status.ok else self.status)
