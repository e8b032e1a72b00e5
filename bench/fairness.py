"""Per-tenant share of the allocated cpu over time, from a run's replayed pod events.

A tenant is a namespace. While every tenant still has work waiting (from the first
binding to the last binding of the tenant whose backlog drains first: the *backlogged
window*), a fair scheduler should hold each tenant's part of the allocated cpu at its
intended share; after that, work conservation rightly gives the rest to whoever is left.
Figures are over that window, sampled every ``step`` seconds:

- the time-averaged share of each tenant and its deviation from the intended one;
- the mean and 95th percentile of the largest deviation across tenants at each instant;
- the utilization (allocated cpu over capacity) in the window.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.analysis import percentile
from bench.observe import Recorder

Json = dict[str, Any]


def share_figures(
    recorder: Recorder, intended: Mapping[str, float], capacity: float, step: float = 1.0
) -> Json:
    """Share figures and the series behind them (cpu per tenant every ``step`` seconds)."""
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
    in_window = [(t, a) for t, a in samples if t <= window_end and sum(a.values()) > 0]
    figures: Json = {
        "tenants": tenants,
        "intended_share": {t: round(intended[t], 4) for t in tenants},
        "backlogged_window_s": round(window_end - first_bind, 1),
    }
    if in_window:
        shares = {t: [a[t] / sum(a.values()) for _, a in in_window] for t in tenants}
        worst = [max(abs(shares[t][i] - intended[t]) for t in tenants)
                 for i in range(len(in_window))]  # fmt: skip
        mean_share = {t: sum(v) / len(v) for t, v in shares.items()}
        figures.update(
            mean_share={t: round(v, 4) for t, v in mean_share.items()},
            mean_share_deviation={t: round(mean_share[t] - intended[t], 4) for t in tenants},
            mean_abs_deviation=round(sum(worst) / len(worst), 4),
            p95_abs_deviation=round(percentile(worst, 95) or 0.0, 4),
            utilization_in_window=round(
                sum(sum(a.values()) for _, a in in_window) / len(in_window) / capacity, 4
            ),
        )
    figures["share_series"] = {
        "step_s": step,
        "t": [round(t - first_bind, 2) for t, _ in samples],
        "cpu": {t: [round(a[t], 2) for _, a in samples] for t in tenants},
        "window_end_s": round(window_end - first_bind, 2),
    }
    return figures
