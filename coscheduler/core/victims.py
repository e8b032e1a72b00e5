"""Who may be evicted to make room for a gang, in what units, at what cost.

The gang is the unit both ways. A running PodGroup offers its members above
``minMember`` one by one (evicting them breaks nothing), and otherwise only
itself whole: it is never left below ``minMember`` with members running. A
group that asks to be disrupted only whole (``disruptionMode: all``) offers
itself whole alone. A
lone pod, or a pod of another scheduler, is a unit of one.

Who may be a victim at all is a :data:`VictimRule`, supplied by the caller:
priority preemption inside one queue (or a cluster without queues) allows
only strictly lower priorities (:func:`lower_priority`); reclaim between
queues will pass a rule that also knows what removing a victim does to its
queue. A rule sees the victims already chosen, so it can judge a plan as a
whole (a disruption budget, a queue's nominal share); it must be monotone: a
unit it refuses beside fewer victims, it refuses beside more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from coscheduler.api.pod import PodInfo
from coscheduler.core.group import GroupKey

__all__ = [
    "Cost",
    "RunningGroup",
    "Victim",
    "VictimRule",
    "lower_priority",
    "plan_cost",
    "running_since",
    "victim_units",
]


@dataclass(frozen=True, slots=True)
class RunningGroup:
    """A group with members running: where victims come from.

    ``pods`` are its members that count on a node now (bound, not being
    deleted, not a binding in flight). ``min_member`` is 1 for a lone pod and
    for pods of other schedulers (``gang`` False: they count one by one).
    ``protected_until`` (seconds, the caller's clock): not a victim before
    then, from the group's ``min-run-seconds``. ``queue``: the queue it
    draws from (None for pods of other schedulers).
    """

    key: GroupKey
    pods: tuple[PodInfo, ...]
    min_member: int
    priority: int
    gang: bool = True
    protected_until: float | None = None
    #: The queue it draws from; None for pods of other schedulers (in no queue).
    queue: str | None = None
    #: Evicted only whole (a native PodGroup's ``disruptionMode: all``): no
    #: member above ``minMember`` goes alone.
    whole_only: bool = False

    @property
    def surplus(self) -> int:
        """Members above ``minMember``: each may go without breaking the gang."""
        if not self.gang or self.whole_only:
            return 0
        return max(0, len(self.pods) - self.min_member)


@dataclass(frozen=True, slots=True)
class Victim:
    """A unit of eviction: one member above the minimum, or a group whole."""

    group: RunningGroup
    pods: tuple[PodInfo, ...]
    whole: bool

    @property
    def breaks_gang(self) -> bool:
        """Evicting it stops a running gang (a lone pod is no gang)."""
        return self.whole and self.group.gang

    def running_seconds(self, now: float) -> float:
        """Running time lost: the sum over its pods of how long each has run."""
        return sum(max(0.0, now - running_since(pod)) for pod in self.pods)

    def describe(self, now: float) -> str:
        """``ns/name (8 pods, priority 10, running 42 min)`` or ``2 pods of ns/name above ...``."""
        minutes = max((now - running_since(pod) for pod in self.pods), default=0.0) / 60
        count = len(self.pods)
        pods = f"{count} pod{'s' if count != 1 else ''}"
        if self.whole and self.group.gang:
            return (
                f"{self.group.key} ({pods}, priority {self.group.priority}, "
                f"running {minutes:.0f} min)"
            )
        if self.whole:
            return (
                f"pod {self.group.key} (priority {self.group.priority}, running {minutes:.0f} min)"
            )
        return f"{pods} of {self.group.key} above its minMember"


def running_since(pod: PodInfo) -> float:
    """When the pod started running (its creation, when the kubelet has not said)."""
    return pod.created if pod.started is None else pod.started


#: May ``victim`` be evicted, given the victims already chosen for the same plan?
VictimRule = Callable[[Victim, Sequence[Victim]], bool]


def lower_priority(preemptor_priority: int) -> VictimRule:
    """Priority preemption: only victims of strictly lower priority."""

    def rule(victim: Victim, chosen: Sequence[Victim]) -> bool:
        return victim.group.priority < preemptor_priority

    return rule


class Cost(NamedTuple):
    """How a plan is judged, smallest first: the order the design promises."""

    gangs_broken: int
    top_priority: int
    running_seconds: float
    pods: int


def plan_cost(victims: Iterable[Victim], now: float) -> Cost:
    chosen = list(victims)
    return Cost(
        sum(victim.breaks_gang for victim in chosen),
        max((victim.group.priority for victim in chosen), default=-(2**31)),
        sum(victim.running_seconds(now) for victim in chosen),
        sum(len(victim.pods) for victim in chosen),
    )


def victim_units(group: RunningGroup, useful: Callable[[PodInfo], bool]) -> list[Victim]:
    """The group's units: members above its minimum one by one, then itself whole.

    ``useful`` says whether a pod sits where the preemptor could go; a group
    none of whose pods is useful offers nothing. Useful members, then the
    lowest priority, then the shortest run go first among those above the
    minimum (any of them may be the ones above it).
    """
    if not any(useful(pod) for pod in group.pods):
        return []
    if not group.gang:
        return [Victim(group, (pod,), whole=True) for pod in group.pods]
    whole = Victim(group, group.pods, whole=True)
    if not group.surplus:
        return [whole]
    ordered = sorted(
        group.pods,
        key=lambda pod: (not useful(pod), pod.priority, -running_since(pod), pod.name),
    )
    units = [Victim(group, (pod,), whole=False) for pod in ordered[: group.surplus] if useful(pod)]
    units.append(whole)
    return units
