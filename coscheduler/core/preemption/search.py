"""The victim search: the smallest disruption that lets a whole gang fit.

:func:`find_plan` is given a group that does not fit (the preemptor), the
groups running now and a :data:`~coscheduler.core.victims.VictimRule`,
and answers with a :class:`PreemptionPlan`: the victims, and where the
preemptor's members would go once they are gone; or no plan, and why. It
evicts nothing: each candidate set is *simulated* by taking the victims'
pods out of the snapshot and running the planner's own attempt
(:func:`~coscheduler.core.planner.plan`, its trial on a statement, the exact
search, domains and all), so "fits" means what the real attempt will find.
The snapshot is exactly as before when it returns.

The search, each step one *trial* of the preemptor's gang:

1. The units (:func:`~coscheduler.core.victims.victim_units`)
   that the rule allows and that sit where the preemptor could go, ordered
   by their cost: members above a gang's minimum and lone pods before whole
   gangs (fewest gangs broken), then lowest priority, least running time
   lost, fewest pods. A sum of resources first rules out hopeless cases
   without a trial.
2. The shortest prefix of that order that lets the gang fit: doubling, then
   bisection (the planner is monotone in capacity, so this is a search over
   one dimension).
3. The removal pass: the units no planned member landed near are dropped
   together (one trial), then every other unit, costliest first, unless the
   gang no longer fits without it. A set whose resource sums fall short of
   the gang's is known not to fit without a trial. A whole gang that cannot be spared is
   kept whole; its members above the minimum are separate units, so "only
   its surplus" is tried first. Afterwards no chosen unit can be spared.
4. When that plan breaks two gangs or more: plans breaking one gang only
   (the non-breaking units plus one gang, in cost order), each minimised as
   in 3; the cheapest plan wins.

The work is bounded by ``budget`` trials (never by a clock: the core reads
none). Past it, the best sufficient plan found so far is returned with
``exhausted`` set (still whole gangs, still verified to fit, maybe not the
smallest); with none found yet, no plan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from coscheduler.api.devices import DEVICE_CLASS_RESOURCE
from coscheduler.api.pod import PodInfo
from coscheduler.core.decision import PreemptionPlan
from coscheduler.core.devices import PodDevices
from coscheduler.core.group import GroupKey, GroupPolicy
from coscheduler.core.planner import plan
from coscheduler.core.preemption.interface import DEFAULT_BUDGET
from coscheduler.core.scoring import Scoring
from coscheduler.core.snapshot import Snapshot
from coscheduler.core.statement import Binding
from coscheduler.core.victims import (
    Cost,
    RunningGroup,
    Victim,
    VictimRule,
    lower_priority,
    plan_cost,
    victim_units,
)

__all__ = ["DEFAULT_BUDGET", "NEVER", "Admits", "PreemptionPlan", "Preemptor", "find_plan"]

#: Whether the preemptor's queue takes the whole gang once these victims are gone
#: (asked with their pods out of the snapshot); a caller's rule, like the victims'.
Admits = Callable[[Sequence[Victim]], bool]

#: ``spec.preemptionPolicy`` of a pod that waits rather than evict anyone.
NEVER = "Never"
#: Most-allocated, every resource weighing 1.
_DEFAULT = Scoring()


@dataclass(frozen=True, slots=True)
class Preemptor:
    """The group that does not fit: its policy, members and priority."""

    policy: GroupPolicy
    pending: Sequence[PodInfo]
    bound: Sequence[PodInfo]
    priority: int
    queue: str | None = None

    @property
    def key(self) -> GroupKey:
        return self.policy.key


@dataclass(slots=True)
class _Search:
    snapshot: Snapshot
    preemptor: Preemptor
    scoring: Scoring
    budget: int
    #: Whether the resource sums alone rule these units out (no trial needed).
    hopeless: Callable[[Sequence[Victim]], bool]
    admits: Admits | None = None
    trials: int = 0
    #: Trials where the gang fitted and its queue still refused it.
    refused_by_quota: int = 0
    #: Pods taken out of the snapshot now, to be put back.
    out: dict[str, PodInfo] = field(default_factory=dict)
    #: Per trial that fitted (its bindings): the devices (DRA) its members took.
    devices: dict[tuple[Binding, ...], tuple[PodDevices, ...]] = field(default_factory=dict)

    @property
    def spent(self) -> bool:
        return self.trials >= self.budget

    def fits(self, units: Iterable[Victim]) -> tuple[Binding, ...] | None:
        """One trial: the preemptor's attempt with these units' pods gone, then its queue's."""
        self.trials += 1
        units = list(units)
        self._evict({pod.uid: pod for unit in units for pod in unit.pods})
        decision = plan(
            self.snapshot,
            self.preemptor.key,
            self.preemptor.policy,
            self.preemptor.pending,
            self.preemptor.bound,
            scoring=self.scoring,
        )
        found = self.snapshot.devices.assumed_for
        taken = tuple(d for b in decision.bindings if (d := found(b.uid)) is not None)
        for binding in decision.bindings:
            self.snapshot.forget(binding.uid)
        if not (decision.admitted and decision.ok):
            return None
        if taken:
            self.devices[decision.bindings] = taken
        if self.admits is not None and not self.admits(units):
            self.refused_by_quota += 1
            return None
        return decision.bindings

    def restore(self) -> None:
        self._evict({})

    def _evict(self, wanted: Mapping[str, PodInfo]) -> None:
        for uid in [uid for uid in self.out if uid not in wanted]:
            self.snapshot.update_pod(self.out.pop(uid))
        for uid in wanted:
            if uid not in self.out:
                pod = self.snapshot.pod(uid)
                if pod is not None:
                    self.snapshot.remove_pod(uid)
                    self.out[uid] = pod
        # Their claims' devices (DRA) are free in the trial too.
        self.snapshot.devices.set_gone(set(self.out))


def find_plan(
    snapshot: Snapshot,
    preemptor: Preemptor,
    running: Iterable[RunningGroup],
    now: float,
    *,
    rule: VictimRule | None = None,
    budget: int = DEFAULT_BUDGET,
    scoring: Scoring = _DEFAULT,
    admits: Admits | None = None,
    anywhere: bool = False,
) -> PreemptionPlan:
    """The smallest disruption found that lets the whole preemptor fit (see the module).

    With ``admits``, "fits" also means its queue takes it then. ``anywhere``:
    victims count wherever they run (the gang waits for its queue's quota, which
    pods free on any node), not only where the preemptor could go.
    """
    key = preemptor.key
    if any(pod.preemption_policy == NEVER for pod in preemptor.pending):
        return PreemptionPlan(key, summary="its pods' preemptionPolicy is Never: it waits")
    if preemptor.policy.no_preemption is not None:
        return PreemptionPlan(key, summary=f"{preemptor.policy.no_preemption}: it waits")
    allow = rule or lower_priority(preemptor.priority)
    useful_slots = _where_it_could_go(snapshot, preemptor.pending)
    useful_nodes = {snapshot.name_of(slot) for slot in np.flatnonzero(useful_slots).tolist()}

    def useful(pod: PodInfo) -> bool:
        return anywhere or pod.node_name in useful_nodes

    units: list[Victim] = []
    for group in running:
        if group.protected_until is None or now >= group.protected_until:
            # A rule that refuses a unit alone refuses it beside others too.
            units.extend(unit for unit in victim_units(group, useful) if allow(unit, ()))
    units.sort(key=lambda unit: _unit_order(unit, now))
    candidates: list[Victim] = []
    for unit in units:
        if allow(unit, candidates):
            candidates.append(unit)
    if not candidates:
        return PreemptionPlan(
            key,
            summary="no pod it may preempt runs where it could go",
            worth_telling=False,
        )
    room = _Room(preemptor, useful_nodes)
    free = room.free_on(snapshot, useful_slots)
    search = _Search(
        snapshot,
        preemptor,
        scoring,
        max(1, budget),
        lambda units: bool(room.short(room.plus(free, units))),
        admits,
    )
    try:
        best = _greedy(search, candidates)
        if best is None:
            why = _why_none(search, room.short(room.plus(free, candidates)))
            return PreemptionPlan(key, trials=search.trials, exhausted=search.spent, summary=why)
        chosen, nominated = _minimise(search, best[0], best[1])
        best_cost = plan_cost(chosen, now)
        if best_cost.gangs_broken >= 2:
            one = _breaking_one_gang(search, candidates, room, free, allow, now, best_cost)
            if one is not None:
                chosen, nominated, best_cost = one
        exhausted = search.spent
    finally:
        search.restore()
    victims = tuple(sorted(chosen, key=lambda unit: _unit_order(unit, now)))
    return PreemptionPlan(
        key,
        victims,
        nominated,
        best_cost,
        search.trials,
        exhausted,
        "would preempt " + _listing(victims, now),
        preemptor.priority,
        nominated_devices=search.devices.get(nominated, ()),
    )


def _why_none(search: _Search, short: str) -> str:
    """Why no plan was found (``short``: a resource even every victim would leave short)."""
    if search.spent:
        return f"gave up after {search.trials} trials"
    if short:
        return f"evicting every pod it may would still leave too little {short}"
    if search.refused_by_quota:
        return "no set of victims it may preempt brings it within its queue's quota"
    return "no set of victims lets it fit"


def _breaking_one_gang(
    search: _Search,
    candidates: Sequence[Victim],
    room: _Room,
    free: Mapping[str, int],
    allow: VictimRule,
    now: float,
    best_cost: Cost,
) -> tuple[list[Victim], tuple[Binding, ...], Cost] | None:
    """Step 4: plans breaking one gang only, each minimised; the cheapest if any beats
    ``best_cost``."""
    best: tuple[list[Victim], tuple[Binding, ...], Cost] | None = None
    calm = [unit for unit in candidates if not unit.breaks_gang]
    calm_room = room.plus(free, calm)
    for gang in (unit for unit in candidates if unit.breaks_gang):
        if search.spent:
            break
        if room.short(room.plus(calm_room, [gang])) or not allow(gang, calm):
            continue
        placed = search.fits([*calm, gang])
        if placed is None:
            continue
        other, other_nominated = _minimise(search, [*calm, gang], placed)
        cost = plan_cost(other, now)
        if cost < best_cost:
            best, best_cost = (other, other_nominated, cost), cost
    return best


def _where_it_could_go(snapshot: Snapshot, pending: Sequence[PodInfo]) -> npt.NDArray[np.bool_]:
    """Per slot: some pending member could run there were the node empty (filters 1-3, size)."""
    useful = np.zeros(snapshot.slot_count, dtype=np.bool_)
    all_slots = np.arange(snapshot.slot_count)
    allocatable, _ = snapshot.rows(all_slots)
    for pod in {pod.shape: pod for pod in pending}.values():
        mask = snapshot.static_mask(pod)
        for column, amount in snapshot.request(pod).items():
            if amount > 0:
                mask &= allocatable[:, column] >= amount
        useful |= mask
    return useful


def _unit_order(unit: Victim, now: float) -> tuple[bool, int, float, int, str]:
    return (
        unit.breaks_gang,
        unit.group.priority,
        unit.running_seconds(now),
        len(unit.pods),
        f"{unit.group.key}/{unit.pods[0].name}",
    )


class _Room:
    """Sums per resource: what the preemptor needs at least, and what it could have.

    A necessary condition only (it ignores how room is split among nodes, and
    may count a pod twice, in a gang's unit and in one above its minimum): it
    rules out hopeless searches, and hopeless one-gang plans, without a trial.
    """

    def __init__(self, preemptor: Preemptor, useful_nodes: set[str]) -> None:
        self.useful_nodes = useful_nodes
        self.wanted = _least_needed(preemptor)
        self._amounts: dict[int, dict[str, int]] = {}

    def free_on(self, snapshot: Snapshot, useful_slots: npt.NDArray[np.bool_]) -> dict[str, int]:
        """Free room on the nodes where the preemptor could go."""
        if not self.wanted:
            return {}
        allocatable, used = snapshot.rows(np.flatnonzero(useful_slots))
        free = np.maximum(allocatable - used, 0).sum(axis=0)
        columns = snapshot.columns
        return {
            name: int(free[columns.column(name)]) if name in columns else 0 for name in self.wanted
        }

    def plus(self, base: Mapping[str, int], units: Iterable[Victim]) -> dict[str, int]:
        """``base`` with the requests of the units' pods where the preemptor could go."""
        room = dict(base)
        for unit in units:
            for name, amount in self._of(unit).items():
                room[name] = room.get(name, 0) + amount
        return room

    def short(self, room: Mapping[str, int]) -> str:
        """A resource the preemptor needs more of than ``room`` holds ('' if none)."""
        for name, amount in sorted(self.wanted.items()):
            if amount > room.get(name, 0):
                return name
        return ""

    def _of(self, unit: Victim) -> dict[str, int]:
        amounts = self._amounts.get(id(unit))
        if amounts is None:
            amounts = dict.fromkeys(self.wanted, 0)
            for pod in unit.pods:
                if pod.node_name in self.useful_nodes:
                    for name in self.wanted:
                        amounts[name] += pod.requests.get(name, 0)
            self._amounts[id(unit)] = amounts
        return amounts


def _least_needed(preemptor: Preemptor) -> dict[str, int]:
    """Per resource, the least the needed members ask together (the smallest requests)."""
    policy = preemptor.policy
    held: dict[str | None, int] = {}
    for pod in preemptor.bound:
        held[pod.role] = held.get(pod.role, 0) + 1
    role_needs = sum(
        max(0, minimum - held.get(role, 0)) for role, minimum in policy.role_minimums.items()
    )
    needed = max(policy.min_member - len(preemptor.bound), role_needs, 0)
    if needed == 0 or needed > len(preemptor.pending):
        return {}
    wanted: dict[str, int] = {}
    for resource in {name for pod in preemptor.pending for name in pod.requests}:
        if resource.startswith(DEVICE_CLASS_RESOURCE):
            continue  # devices (DRA) are no node column: free ones would count as none
        amounts = sorted(pod.requests.get(resource, 0) for pod in preemptor.pending)
        wanted[resource] = sum(amounts[:needed])
    return wanted


def _greedy(
    search: _Search, candidates: Sequence[Victim]
) -> tuple[list[Victim], tuple[Binding, ...]] | None:
    """The shortest prefix of the candidates that lets the gang fit (doubling, then bisection)."""
    count = len(candidates)
    low, size = 0, 1
    found: tuple[int, tuple[Binding, ...]] | None = None
    while not search.spent:
        size = min(size, count)
        placed = None if search.hopeless(candidates[:size]) else search.fits(candidates[:size])
        if placed is not None:
            found = (size, placed)
            break
        low = size
        if size == count:
            return None
        size *= 2
    if found is None:
        return None
    high, nominated = found
    while high - low > 1 and not search.spent:
        middle = (low + high) // 2
        prefix = candidates[:middle]
        placed = None if search.hopeless(prefix) else search.fits(prefix)
        if placed is None:
            low = middle
        else:
            high, nominated = middle, placed
    return list(candidates[:high]), nominated


def _minimise(
    search: _Search, chosen: list[Victim], nominated: tuple[Binding, ...]
) -> tuple[list[Victim], tuple[Binding, ...]]:
    """The removal pass: drop every unit the gang fits without (see the module)."""
    chosen = _without_covered(chosen)
    landed = {binding.node for binding in nominated}
    far = [unit for unit in chosen if not any(pod.node_name in landed for pod in unit.pods)]
    if far and len(far) < len(chosen) and not search.spent:
        near = [unit for unit in chosen if unit not in far]
        placed = None if search.hopeless(near) else search.fits(near)
        if placed is not None:
            chosen, nominated = near, placed
    for unit in reversed(list(chosen)):
        if search.spent:
            break
        if unit not in chosen:
            continue
        rest = [other for other in chosen if other is not unit]
        placed = None if search.hopeless(rest) else search.fits(rest)
        if placed is not None:
            chosen, nominated = rest, placed
    return chosen, nominated


def _without_covered(chosen: Sequence[Victim]) -> list[Victim]:
    """Drop members above the minimum (and roles) whose gang, or role, is chosen whole anyway."""
    whole = {unit.group.key for unit in chosen if unit.whole and unit.group.gang}
    roles = {(unit.group.key, unit.role) for unit in chosen if unit.role is not None}
    return [
        unit
        for unit in chosen
        if unit.whole
        or (
            unit.group.key not in whole
            and (unit.role is not None or (unit.group.key, unit.pods[0].role) not in roles)
        )
    ]


def _listing(victims: Sequence[Victim], now: float) -> str:
    parts = [victim.describe(now) for victim in _merged(victims)]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _merged(victims: Sequence[Victim]) -> list[Victim]:
    """Members above one gang's minimum told together (``2 pods of ns/etl above ...``)."""
    merged: dict[tuple[GroupKey, bool, str | None], Victim] = {}
    for victim in victims:
        slot = (victim.group.key, victim.whole, victim.role)
        before = merged.get(slot)
        merged[slot] = (
            victim
            if before is None
            else Victim(victim.group, before.pods + victim.pods, victim.whole, victim.role)
        )
    return list(merged.values())
