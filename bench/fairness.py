"""Per-tenant share of the allocated cpu over time, from a run's replayed pod events.

A tenant is a namespace. While every tenant still has work waiting (from the first
binding to the last binding of the tenant whose backlog drains first: the *backlogged
window*), a fair scheduler should hold each tenant's part of the allocated cpu at its
intended share; after that, work conservation rightly gives the rest to whoever is left.
Figures are over that window, sampled every ``step`` seconds:

- the time-averaged share of each tenant and its deviation from the intended one;
- the mean and 95th percentile of the largest deviation across tenants at each instant;
- the utilization (allocated cpu over capacity) in the window.

The first pods of every tenant land on an empty cluster as they arrive: without
preemption nobody can take them back before they finish, so the shares can only move
towards the intended ones as the first generation of pods ends. The figures are also
given from ``warmup`` seconds on (the workload passes one pod run time).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.analysis import percentile
from bench.observe import Recorder

Json = dict[str, Any]


def share_figures(
    recorder: Recorder,
    intended: Mapping[str, float],
    capacity: float,
    step: float = 1.0,
    warmup: float = 0.0,
) -> Json:
    """Share figures and the series behind them (cpu per tenant every ``step`` seconds);
    ``warmup``: the same figures again from that many seconds after the first binding."""
    tenants = sorted(intended)
    allocated = dict.fromkeys(tenants, 0.0)
    ended: set[str] = set()
    last_bind = dict.fromkeys(tenants, 0.0)
    first_bind: float | None = None
    samples: list[tuple[float, dict[str, float]]] = []
    next_sample: float | None = None
    for event in recorder.events:
        pod = recorder.pods[event.pod]
        if pod.namespace not in allocated or pod.bound is None:
            continue
        if first_bind is None:
            first_bind = next_sample = event.t
        assert next_sample is not None
        while next_sample <= event.t:
            samples.append((next_sample, dict(allocated)))
            next_sample += step
        if event.kind == "bind":
            allocated[pod.namespace] += pod.cpu
            last_bind[pod.namespace] = event.t
        elif event.pod not in ended:
            ended.add(event.pod)
            allocated[pod.namespace] -= pod.cpu
    if first_bind is None:
        return {"tenants": tenants}
    samples.append((samples[-1][0] + step if samples else first_bind, dict(allocated)))
    window_end = min(last_bind.values())
    series: Json = {
        "step_s": step,
        "t": [round(t - first_bind, 2) for t, _ in samples],
        "cpu": {t: [round(a[t], 2) for _, a in samples] for t in tenants},
        "window_end_s": round(window_end - first_bind, 2),
    }
    figures: Json = {
        "tenants": tenants,
        "intended_share": {t: round(intended[t], 4) for t in tenants},
        "backlogged_window_s": round(window_end - first_bind, 1),
    }
    figures.update(window_figures(series, intended, capacity, 0.0))
    if warmup:
        late = window_figures(series, intended, capacity, warmup)
        figures["after_warmup"] = {"warmup_s": warmup, **late}
    figures["share_series"] = series
    return figures


def window_figures(series: Json, intended: Mapping[str, float], capacity: float,
                   start: float) -> Json:  # fmt: skip
    """Shares, deviations and utilization from ``start`` (seconds after the first binding) to
    the end of the backlogged window, from a share series."""
    tenants = sorted(intended)
    rows = [
        {t: series["cpu"][t][i] for t in tenants}
        for i, at in enumerate(series["t"])
        if start <= at <= series["window_end_s"]
    ]
    rows = [row for row in rows if sum(row.values()) > 0]
    if not rows:
        return {}
    shares = {t: [row[t] / sum(row.values()) for row in rows] for t in tenants}
    worst = [max(abs(shares[t][i] - intended[t]) for t in tenants) for i in range(len(rows))]
    mean_share = {t: sum(v) / len(v) for t, v in shares.items()}
    return {
        "mean_share": {t: round(v, 4) for t, v in mean_share.items()},
        "mean_share_deviation": {t: round(mean_share[t] - intended[t], 4) for t in tenants},
        "mean_abs_deviation": round(sum(worst) / len(worst), 4),
        "p95_abs_deviation": round(percentile(worst, 95) or 0.0, 4),
        "utilization_in_window": round(
            sum(sum(row.values()) for row in rows) / len(rows) / capacity, 4
        ),
    }
