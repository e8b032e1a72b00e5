"""Admission to bound: how long a gang waits between its admission and its last binding.

Kueue admits (reserves quota for a whole Job and lets the Job controller make its pods)
and kube-scheduler then places the pods one by one; coscheduler admits by binding, so
for ours (and the Permit-based peers) the span is the gang's own bind burst. Read from
the trial's pod watch, the same for every peer:

- admitted: for a peer whose Jobs' pods exist only once admitted (Kueue), the moment the
  first member the watch saw of the gang's first whole generation; else its first binding;
- whole: its ``minMember``-th binding.

Time to whole (submission to whole) is the contention figures' ``wait_*``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from bench.analysis import percentile
from bench.observe import PodRecord
from bench.peers import Gang

Json = dict[str, Any]


def admission_to_bound(
    pods: Iterable[PodRecord], gangs: Iterable[Gang], *, admits_by_creating_pods: bool
) -> dict[str, float]:
    """Seconds from admission to whole, per gang that became whole."""
    by_gang: dict[str, list[PodRecord]] = defaultdict(list)
    for pod in pods:
        by_gang[pod.gang].append(pod)
    spans: dict[str, float] = {}
    for gang in gangs:
        bound = sorted((p for p in by_gang.get(gang.name, []) if p.bound is not None),
                       key=lambda p: p.bound or 0.0)  # fmt: skip
        if len(bound) < gang.min_member:
            continue
        whole = bound[gang.min_member - 1].bound
        assert whole is not None
        first = bound[: gang.min_member]
        if admits_by_creating_pods:
            seen = [p.seen for p in first if p.seen is not None]
            admitted = min(seen) if seen else first[0].bound
        else:
            admitted = first[0].bound
        assert admitted is not None
        spans[gang.name] = max(0.0, whole - admitted)
    return spans


def admission_figures(
    pods: Iterable[PodRecord], gangs: Iterable[Gang], *, admits_by_creating_pods: bool
) -> Json:
    spans = list(
        admission_to_bound(pods, gangs, admits_by_creating_pods=admits_by_creating_pods).values()
    )
    return {
        "gangs": len(spans),
        "p50_s": _r(percentile(spans, 50)),
        "p99_s": _r(percentile(spans, 99)),
        "max_s": _r(max(spans, default=None)),
    }


def pods_evicted(pods: Iterable[PodRecord]) -> int:
    """Pods taken off their node before they finished: deleted (or being deleted) after
    their binding with no completion first. In these workloads nothing else deletes a
    running pod, so it is the peer's preemption (ours: a gang evicted; Kueue: a Job
    suspended, its pods deleted by the Job controller)."""
    count = 0
    for pod in pods:
        gone = pod.terminating if pod.terminating is not None else pod.deleted
        if pod.bound is not None and gone is not None and pod.finished is None:
            count += 1
    return count


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
