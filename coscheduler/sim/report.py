"""What a replay means: the figures per policy, as a table or as JSON.

Definitions (all times in seconds of simulated time):

- *makespan*: from the first arrival to the last completion; none when some
  gang never started (the workload never completes).
- *wait*: from a gang's arrival to its start (``minMember`` bound); the mean
  and the p99 (nearest rank) are over the gangs that started.
- *utilization*: cpu used by started gangs, over the cpu of schedulable nodes,
  averaged from the first arrival to the end of the replay; *allocated* adds
  the cpu that partially placed gangs hold while they wait.
- *partial gangs*: gangs that held some, but fewer than ``minMember``, bound
  pods at some moment; *partial cpu-seconds*: the cpu those pods held until
  their gang started (or until the end of the replay).
- *deadlocked*: gangs that never started while holding pods at the end: no
  completion was left that could free what they wait for.
- *in one domain* (with ``--domain-key``): the share of started gangs whose
  pods all ran on nodes sharing one value of that node label.
- with queues: each queue's cpu share, its fair share while backlogged, the
  largest deviation and Jain's index (:mod:`coscheduler.sim.fairness`), and
  the mean share per queue in equal windows of the replay (share over time).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coscheduler.sim.fairness import Fairness, fairness, share_windows
from coscheduler.sim.replay import Replay

__all__ = ["Stuck", "Summary", "render_queues", "render_table", "summarize", "to_json"]


@dataclass(frozen=True, slots=True)
class Stuck:
    """A gang that never started, and what it held at the end."""

    name: str
    bound: int
    min_member: int
    cpu_millis: int


@dataclass(frozen=True, slots=True)
class Summary:
    """The figures of one replay (see the module docstring)."""

    policy: str
    gangs: int
    started: int
    finished: int
    makespan_seconds: float | None
    last_completion_seconds: float | None
    wait_mean_seconds: float | None
    wait_p99_seconds: float | None
    utilization: float | None
    allocated: float | None
    partial_gangs: int
    partial_cpu_seconds: float
    deadlocked: tuple[Stuck, ...]
    #: Gangs that never started and hold nothing (waiting behind the others, or too big).
    never_started: tuple[str, ...]
    replay_seconds: float | None = None
    #: The node label ``within_one_domain`` is about, when asked for.
    domain_key: str | None = None
    within_one_domain: float | None = None
    #: With queues: the fairness figures, and (start, end, share per queue) windows.
    fairness: Fairness | None = None
    share_windows: tuple[tuple[float, float, tuple[float, ...]], ...] = ()
    #: Gangs' places in their queue on arrival: median and largest (None: no gang queued).
    queue_position_median: float | None = None
    queue_position_max: int | None = None


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile: the smallest value with ``fraction`` of values at or below."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


#: Windows the share over time is cut into, in the table and the JSON.
SHARE_WINDOWS = 8


def summarize(
    result: Replay,
    replay_seconds: float | None = None,
    domain_key: str | None = None,
    node_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> Summary:
    outcomes = result.gangs
    within = None
    if domain_key is not None and node_labels is not None:
        started = [o for o in outcomes if o.start is not None]
        together = sum(
            1
            for o in started
            if len(values := {node_labels[n].get(domain_key) for n in o.nodes}) == 1
            and None not in values
        )
        within = together / len(started) if started else None
    waits = [o.wait for o in outcomes if o.wait is not None]
    places = [o.queue_position for o in outcomes if o.queue_position is not None]
    finishes = [o.finish for o in outcomes if o.finish is not None]
    horizon = result.end - result.begin
    capacity = result.cpu_capacity * horizon
    deadlocked = tuple(
        Stuck(o.gang.name, o.bound, o.gang.min_member, o.bound * o.gang.cpu)
        for o in outcomes
        if o.start is None and o.bound > 0
    )
    never = tuple(o.gang.name for o in outcomes if o.start is None and o.bound == 0)
    return Summary(
        policy=result.policy.value,
        gangs=len(outcomes),
        started=len(waits),
        finished=len(finishes),
        makespan_seconds=(
            max(finishes) - result.begin if finishes and len(finishes) == len(outcomes) else None
        ),
        last_completion_seconds=max(finishes) if finishes else None,
        wait_mean_seconds=sum(waits) / len(waits) if waits else None,
        wait_p99_seconds=percentile(waits, 0.99) if waits else None,
        utilization=result.useful_cpu_ms / capacity if capacity > 0 else None,
        allocated=(
            (result.useful_cpu_ms + result.partial_cpu_ms) / capacity if capacity > 0 else None
        ),
        partial_gangs=sum(1 for o in outcomes if o.partial),
        partial_cpu_seconds=result.partial_cpu_ms / 1000,
        deadlocked=deadlocked,
        never_started=never,
        replay_seconds=replay_seconds,
        domain_key=domain_key,
        within_one_domain=within,
        fairness=fairness(result),
        share_windows=tuple(
            (low, high, tuple(shares)) for low, high, shares in share_windows(result, SHARE_WINDOWS)
        ),
        queue_position_median=statistics.median(places) if places else None,
        queue_position_max=max(places) if places else None,
    )


def to_json(summary: Summary) -> dict[str, Any]:
    """The summary as plain JSON values (camelCase keys, like the scenario file)."""
    return {
        "policy": summary.policy,
        "gangs": summary.gangs,
        "started": summary.started,
        "finished": summary.finished,
        "makespanSeconds": summary.makespan_seconds,
        "lastCompletionSeconds": summary.last_completion_seconds,
        "waitMeanSeconds": summary.wait_mean_seconds,
        "waitP99Seconds": summary.wait_p99_seconds,
        "cpuUtilization": summary.utilization,
        "cpuAllocated": summary.allocated,
        "partialGangs": summary.partial_gangs,
        "partialCpuSeconds": summary.partial_cpu_seconds,
        "deadlockedGangs": [
            {
                "name": s.name,
                "bound": s.bound,
                "minMember": s.min_member,
                "cpu": s.cpu_millis / 1000,
            }
            for s in summary.deadlocked
        ],
        "neverStartedGangs": list(summary.never_started),
        "replaySeconds": summary.replay_seconds,
        "queuePositionAtArrival": {
            "median": summary.queue_position_median,
            "max": summary.queue_position_max,
        },
        **(
            {"domainKey": summary.domain_key, "withinOneDomain": summary.within_one_domain}
            if summary.domain_key
            else {}
        ),
        **(_fairness_json(summary, summary.fairness) if summary.fairness is not None else {}),
    }


def _fairness_json(summary: Summary, figures: Fairness) -> dict[str, Any]:
    names = [q.name for q in figures.queues]
    return {
        "queues": [
            {
                "name": q.name,
                "weight": q.entitlement.weight,
                "nominalShare": q.entitlement.nominal,
                "maxShare": q.entitlement.max,
                "meanShare": q.mean_share,
                "backloggedSeconds": q.backlogged_seconds,
                "shareWhileBacklogged": q.backlogged_share,
                "fairShare": q.fair_share,
                "deviation": q.deviation,
            }
            for q in figures.queues
        ],
        "maxShareDeviation": figures.max_deviation,
        "jainIndex": figures.jain,
        "shareOverTime": [
            {"fromSeconds": low, "toSeconds": high, "shares": dict(zip(names, shares, strict=True))}
            for low, high, shares in summary.share_windows
        ],
    }


def _seconds(value: float | None) -> str:
    if value is None:
        return "never"
    if abs(value) < 100:
        return f"{value:.1f} s"
    return f"{value:,.0f} s"


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


_COLUMNS = (
    "policy",
    "finished",
    "makespan",
    "wait mean",
    "wait p99",
    "cpu used",
    "cpu held",
    "partial gangs",
    "partial cpu·s",
    "deadlocked",
    "place on arrival",
)


def _aligned(rows: list[list[str]]) -> list[str]:
    """Rows as fixed-width lines: the first column left, the others right, a rule under the head."""
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    lines = []
    for number, row in enumerate(rows):
        cells = [
            cell.ljust(width) if c == 0 else cell.rjust(width)
            for c, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
        if number == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def _points(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:+.1f}"


def render_queues(summaries: Sequence[Summary]) -> str:
    """Per queue and policy: the shares, then the share over time; empty without queues."""
    shown = [s for s in summaries if s.fairness is not None]
    if not shown:
        return ""
    rows = [
        [
            "policy",
            "queue",
            "weight",
            "nominal",
            "max",
            "backlogged",
            "mean share",
            "share while backlogged",
            "fair share",
            "deviation (points)",
        ]
    ]
    for s in shown:
        assert s.fairness is not None
        for q in s.fairness.queues:
            rows.append(
                [
                    s.policy,
                    q.name,
                    str(q.entitlement.weight),
                    _percent(q.entitlement.nominal) if q.entitlement.nominal else "—",
                    _percent(q.entitlement.max) if q.entitlement.max < 1 else "—",
                    _seconds(q.backlogged_seconds),
                    _percent(q.mean_share),
                    _percent(q.backlogged_share),
                    _percent(q.fair_share),
                    _points(q.deviation),
                ]
            )
    lines = ["cpu share per queue (of the cluster's cpu):", *_aligned(rows), ""]
    for s in shown:
        assert s.fairness is not None
        jain = "—" if s.fairness.jain is None else f"{s.fairness.jain:.3f}"
        lines.append(
            f"{s.policy}: largest deviation from the fair share "
            f"{_points(s.fairness.max_deviation).lstrip('+')} points, Jain's index {jain}"
        )
    for s in shown:
        assert s.fairness is not None
        if not s.share_windows:
            continue
        names = [q.name for q in s.fairness.queues]
        windows = [["time", *names]]
        for low, high, shares in s.share_windows:
            windows.append([f"{low:,.0f}-{high:,.0f} s", *(_percent(share) for share in shares)])
        lines += ["", f"{s.policy}: cpu share per queue over time", *_aligned(windows)]
    return "\n".join(lines)


def _places(summary: Summary) -> str:
    """Median / largest place in its queue a gang found on arrival."""
    if summary.queue_position_median is None or summary.queue_position_max is None:
        return "—"
    return f"{summary.queue_position_median:g} / {summary.queue_position_max}"


def render_table(summaries: Sequence[Summary]) -> str:
    """A fixed-width table, one row per policy, then notes on stuck gangs."""
    keyed = next((s.domain_key for s in summaries if s.domain_key), None)
    columns = [*_COLUMNS, f"in one {keyed}"] if keyed else list(_COLUMNS)
    rows = [columns]
    for s in summaries:
        rows.append(
            [
                s.policy,
                f"{s.finished}/{s.gangs}",
                _seconds(s.makespan_seconds),
                "—" if s.wait_mean_seconds is None else _seconds(s.wait_mean_seconds),
                "—" if s.wait_p99_seconds is None else _seconds(s.wait_p99_seconds),
                _percent(s.utilization),
                _percent(s.allocated),
                str(s.partial_gangs),
                f"{s.partial_cpu_seconds:,.0f}",
                str(len(s.deadlocked)),
                _places(s),
                *([_percent(s.within_one_domain)] if keyed else []),
            ]
        )
    lines = _aligned(rows)
    for s in summaries:
        if s.deadlocked:
            shown = ", ".join(
                f"{d.name} ({d.bound}/{d.min_member} bound)" for d in s.deadlocked[:4]
            )
            more = f" and {len(s.deadlocked) - 4} more" if len(s.deadlocked) > 4 else ""
            lines.append(
                f"{s.policy}: deadlock: {len(s.deadlocked)} gang(s) hold part of their "
                f"members and wait forever: {shown}{more}"
            )
        if s.never_started:
            shown = ", ".join(s.never_started[:4])
            more = f" and {len(s.never_started) - 4} more" if len(s.never_started) > 4 else ""
            lines.append(
                f"{s.policy}: {len(s.never_started)} gang(s) never started "
                f"and hold nothing: {shown}{more}"
            )
    return "\n".join(lines)
