"""The preemption workload's figures, from the replayed pod watch (pure functions).

The workload (``bench.workloads.Preemption``) fills a cluster with long-running
low-priority gangs, then sends high-priority gangs one at a time. Every pod asks the
same cpu and memory and every node holds a whole number of them, so the cluster is a
count of *slots* and any freed slot fits any member: the room a plan makes is the
number of pods it evicts.

The minimal plan of each high gang is computed from the workload's shape alone
(:func:`minimal_plans`): the issue's order of smallest disruption with every gang
evicted whole (fewest gangs ended, then fewest pods; one low priority, and the running
time lost left out, as it depends on when each gang started), taking the high gangs in
arrival order, each after the previous one took its minimal plan (the room a plan frees
beyond its gang's need is left for the next one). ``pod_minimum`` is what a pod-by-pod
preemption needs in its own history (one pod per missing slot, gangs ignored, so it never
leaves room over): over the whole workload no preemption can evict fewer.

From the watch (:func:`preemption_figures`), attributing each eviction to the high gang
that arrived last before it (they arrive one at a time, each once the previous one is
bound or its own limit ran out):

- time from a high gang's creation (its Job's) to all its members bound; to the watch
  seeing all its members (the Job controller makes them), and to its first eviction;
- pods evicted: bound members of low gangs whose deletion began (a deletionTimestamp, or
  gone at once), with a ``DisruptionTarget`` condition; other deletions of running pods
  are counted apart;
- when its victims were gone, and how long after that its last member was bound;
- victim gangs left *broken*: some members running (bound, not being deleted), fewer
  than its minMember, after a member went; the moment a gang's evictions are in flight
  (``1 s + minMember / QPS``, as for bindings) is an eviction burst, not breaking;
  the cpu-seconds their running members hold while broken (to the end of the trial);
- low pods bound after the first high gang arrived (a victim Job's replacements placed in
  room a preemption freed), and how many of them were evicted in turn;
- partially bound preemptors: a high gang with some but not all members bound for
  longer than its bind burst (``1 s + size / QPS``), and for how long.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bench.analysis import percentile
from bench.observe import PodRecord

Json = dict[str, Any]

#: The goal's slack past the victims' termination (the issue: "plus about a second").
GOAL_SLACK_SECONDS = 1.0


@dataclass(frozen=True)
class MinimalPlan:
    """The smallest whole-gang plan for one high gang, in the workload's ideal history."""

    gang: str
    size: int
    need: int
    """Slots it lacks on arrival: its size less the room earlier plans left."""
    gangs: int
    """Low gangs the plan ends (each evicted whole)."""
    pods: int
    """Their pods: what the plan evicts."""
    victim_sizes: tuple[int, ...]
    pod_minimum: int
    """What a pod-by-pod preemption evicts for it, in its own history (gangs ignored)."""
    free_after: int
    """Slots left free once it is bound (for the next gang)."""


def minimal_plans(
    low_sizes: Sequence[int], high: Sequence[tuple[str, int]], free: int = 0
) -> list[MinimalPlan]:
    """Each high gang's minimal plan, in arrival order (see the module docstring).

    ``low_sizes``: the running low gangs (each minMember = its size); ``high``: (name,
    size) in arrival order; ``free``: slots free before the first arrives.
    """
    available = Counter(low_sizes)
    plans: list[MinimalPlan] = []
    free_by_pods = free
    for name, size in high:
        need = max(0, size - free)
        pod_minimum = max(0, size - free_by_pods)
        free_by_pods = max(0, free_by_pods - size)
        chosen = _fewest_gangs_then_pods(available, need)
        if chosen is None:
            raise ValueError(f"no whole-gang plan frees {need} slots for {name}: {available}")
        available.subtract(chosen)
        evicted = sum(chosen.elements())
        free = free + evicted - size
        plans.append(
            MinimalPlan(
                gang=name, size=size, need=need, gangs=sum(chosen.values()), pods=evicted,
                victim_sizes=tuple(sorted(chosen.elements(), reverse=True)),
                pod_minimum=pod_minimum, free_after=free,
            )
        )  # fmt: skip
    return plans


def _fewest_gangs_then_pods(available: Counter[int], need: int) -> Counter[int] | None:
    """How many gangs of each size to evict: fewest gangs, then fewest pods, sum >= need."""
    if need <= 0:
        return Counter()
    sizes = sorted(s for s, n in available.items() if n > 0 and s > 0)
    ranges = [range(min(available[s], math.ceil(need / s)) + 1) for s in sizes]
    best: tuple[int, int] | None = None
    choice: Counter[int] | None = None
    for counts in itertools.product(*ranges):
        pods = sum(s * c for s, c in zip(sizes, counts, strict=True))
        if pods < need:
            continue
        key = (sum(counts), pods)
        if best is None or key < best:
            best = key
            choice = Counter({s: c for s, c in zip(sizes, counts, strict=True) if c})
    return choice


@dataclass(frozen=True)
class Arrival:
    """A high gang as submitted: its name, size and when its Job was created."""

    gang: str
    size: int
    created: float


def _deletion_began(pod: PodRecord) -> float | None:
    """When its deletion began: its deletionTimestamp seen, or gone at once (grace 0)."""
    moments = [t for t in (pod.terminating, pod.deleted) if t is not None]
    return min(moments) if moments else None


def _stopped_running(pod: PodRecord) -> float | None:
    """When it stopped counting as running: its deletion began, or it finished."""
    moments = [t for t in (_deletion_began(pod), pod.finished) if t is not None]
    return min(moments) if moments else None


@dataclass(frozen=True)
class BrokenSpell:
    """A victim gang below its minMember with members still running, for a while."""

    gang: str
    start: float
    end: float
    cpu_s: float
    open_at_end: bool


def broken_spells(
    pods: Iterable[PodRecord], low: Mapping[str, int], *, since: float, end: float,
    allowance: Mapping[str, float],
) -> list[BrokenSpell]:  # fmt: skip
    """Spells in which a low gang ran some but fewer than minMember members, entered by a
    member going after ``since``, longer than the gang's eviction burst (``allowance``)."""
    changes: dict[str, list[tuple[float, int, float]]] = defaultdict(list)
    for pod in pods:
        if pod.gang not in low or pod.bound is None:
            continue
        changes[pod.gang].append((pod.bound, 1, pod.cpu))
        stopped = _stopped_running(pod)
        if stopped is not None:
            changes[pod.gang].append((stopped, -1, pod.cpu))
    spells: list[BrokenSpell] = []
    for gang, events in changes.items():
        minimum = low[gang]
        # Departures before arrivals at one instant: a member replaced at once still left.
        events.sort(key=lambda e: (e[0], e[1]))
        running, cpu = 0, 0.0
        opened: float | None = None
        held = 0.0
        last = 0.0
        for t, delta, c in events:
            if opened is not None:
                held += cpu * (t - last)
            running += delta
            cpu += c * delta
            last = t
            broken = 0 < running < minimum
            if opened is None and broken and delta < 0 and t >= since:
                opened, held = t, 0.0
            elif opened is not None and not broken:
                if t - opened > allowance.get(gang, 0.0):
                    spells.append(BrokenSpell(gang, opened, t, held, open_at_end=False))
                opened = None
        if opened is not None:
            held += cpu * (end - last)
            if end - opened > allowance.get(gang, 0.0):
                spells.append(BrokenSpell(gang, opened, end, held, open_at_end=True))
    return sorted(spells, key=lambda s: (s.start, s.gang))


def preemption_figures(
    pods: Iterable[PodRecord],
    arrivals: Sequence[Arrival],
    low: Mapping[str, int],
    plans: Sequence[MinimalPlan],
    *,
    end: float,
    qps: float,
) -> Json:
    """The figures of one trial (see the module docstring). ``low``: low gang -> minMember;
    ``plans``: :func:`minimal_plans` of ``arrivals``, in the same order."""
    records = list(pods)
    by_gang: dict[str, list[PodRecord]] = defaultdict(list)
    for pod in records:
        by_gang[pod.gang].append(pod)
    low_running = [p for p in records if p.gang in low and p.bound is not None]
    evicted_all = [p for p in low_running if _deletion_began(p) is not None and p.disrupted]
    others = [p for p in low_running if _deletion_began(p) is not None and not p.disrupted]
    plan_of = {plan.gang: plan for plan in plans}

    per_gang: list[Json] = []
    for index, arrival in enumerate(arrivals):
        closes = arrivals[index + 1].created if index + 1 < len(arrivals) else math.inf
        members = by_gang.get(arrival.gang, [])
        binds = sorted(p.bound for p in members if p.bound is not None)
        seen = sorted(p.seen for p in members if p.seen is not None)
        all_seen = seen[arrival.size - 1] if len(seen) >= arrival.size else None
        all_bound = binds[arrival.size - 1] if len(binds) >= arrival.size else None
        first_bind = binds[0] if binds else None
        victims = [
            p for p in evicted_all
            if arrival.created <= (_deletion_began(p) or 0.0) < closes
        ]  # fmt: skip
        starts = [_deletion_began(p) for p in victims]
        gone = [p.deleted for p in victims if p.deleted is not None]
        first_eviction = min((t for t in starts if t is not None), default=None)
        victims_gone = max(gone) if len(gone) == len(victims) and gone else None
        allowance = 1.0 + arrival.size / qps
        partial_s = None
        if first_bind is not None and (all_bound is None or all_bound - first_bind > allowance):
            partial_s = (all_bound if all_bound is not None else end) - first_bind
        plan = plan_of.get(arrival.gang)
        row: Json = {
            "gang": arrival.gang,
            "size": arrival.size,
            "bound_s": _r(None if all_bound is None else all_bound - arrival.created),
            "members_bound": len(binds),
            "evicted": len(victims),
            "victim_gangs": len({p.gang for p in victims}),
            "minimal_pods": plan.pods if plan else None,
            "minimal_gangs": plan.gangs if plan else None,
            "pod_minimum": plan.pod_minimum if plan else None,
            "members_seen_s": _r(_since(all_seen, arrival.created)),
            "first_eviction_s": _r(_since(first_eviction, arrival.created)),
            "victims_gone_s": _r(_since(victims_gone, arrival.created)),
            "bind_after_victims_gone_s": _r(
                None if all_bound is None or victims_gone is None else all_bound - victims_gone
            ),
            "partial_s": _r(partial_s),
        }
        row["in_time"] = _in_time(row)
        per_gang.append(row)

    since = arrivals[0].created if arrivals else end
    replacements = [p for p in low_running if p.bound is not None and p.bound >= since]
    allowances = {gang: 1.0 + minimum / qps for gang, minimum in low.items()}
    spells = broken_spells(records, low, since=since, end=end, allowance=allowances)
    termination = [p.deleted - t for p in evicted_all
                   if p.deleted is not None and (t := _deletion_began(p)) is not None]  # fmt: skip
    bound_times = [row["bound_s"] for row in per_gang if row["bound_s"] is not None]
    partial = [row["partial_s"] for row in per_gang if row["partial_s"] is not None]
    return {
        "high_gangs": len(arrivals),
        "high_gangs_bound": len(bound_times),
        "bound_p50_s": _r(percentile(bound_times, 50)),
        "bound_p99_s": _r(percentile(bound_times, 99)),
        "bound_max_s": _r(max(bound_times, default=None)),
        "evicted_pods": len(evicted_all),
        "evicted_gangs": len({p.gang for p in evicted_all}),
        "minimal_pods": sum(plan.pods for plan in plans),
        "minimal_gangs": sum(plan.gangs for plan in plans),
        "pod_minimum": sum(plan.pod_minimum for plan in plans),
        "other_deletions": len(others),
        "replacements_bound": len(replacements),
        "replacements_evicted": sum(1 for p in replacements if p in evicted_all),
        "victim_termination_p50_s": _r(percentile(termination, 50)),
        "victim_termination_max_s": _r(max(termination, default=None)),
        "broken_gangs": len({s.gang for s in spells}),
        "broken_at_end": len({s.gang for s in spells if s.open_at_end}),
        "broken_cpu_s": round(sum(s.cpu_s for s in spells), 2),
        "broken_spells": [
            {
                "gang": s.gang,
                "start": round(s.start, 3),
                "end": round(s.end, 3),
                "cpu_s": round(s.cpu_s, 2),
                "open_at_end": s.open_at_end,
            }
            for s in spells
        ],
        "partial_preemptors": len(partial),
        "partial_preemptor_s_max": _r(max(partial, default=None)),
        "partial_preemptor_s_total": _r(sum(partial) if partial else 0.0),
        "bound_in_time": sum(1 for row in per_gang if row["in_time"]),
        "per_gang": per_gang,
    }


def _in_time(row: Json) -> bool:
    """The issue's goal of time for one high gang: bound within its victims' termination
    plus about a second (within about a second, if nothing was evicted for it)."""
    if row["bound_s"] is None:
        return False
    if row["evicted"] == 0:
        return bool(row["bound_s"] <= GOAL_SLACK_SECONDS)
    after = row["bind_after_victims_gone_s"]
    return after is not None and after <= GOAL_SLACK_SECONDS


def plans_json(plans: Sequence[MinimalPlan]) -> list[Json]:
    return [{**asdict(plan), "victim_sizes": list(plan.victim_sizes)} for plan in plans]


def _since(moment: float | None, origin: float) -> float | None:
    return None if moment is None else moment - origin


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
