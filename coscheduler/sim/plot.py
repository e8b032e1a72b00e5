"""The PNG: cpu utilization over time and the CDF of gang waits, per policy.

With queues, a second row: each queue's cpu share over time, one panel per
policy, its fair share dashed while it is backlogged (see
:mod:`coscheduler.sim.fairness`).

matplotlib is an optional dependency (the ``simulate`` extra) and heavy to
import, so it is imported here, when a plot is asked for, with the Agg
backend (no display needed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from coscheduler.sim.fairness import entitlements, fair_shares
from coscheduler.sim.replay import Replay

__all__ = ["PlotUnavailableError", "write_plot"]

if TYPE_CHECKING:
    from matplotlib.axes import Axes

_COLORS = {"gang": "tab:blue", "baseline": "tab:red"}


class PlotUnavailableError(RuntimeError):
    """matplotlib is not installed."""


def write_plot(results: Sequence[Replay], path: Path, title: str = "") -> None:
    """Write the two panels for these replays to ``path`` (PNG)."""
    try:
        import matplotlib as mpl

        mpl.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise PlotUnavailableError(
            "--plot needs matplotlib: pip install 'coscheduler[simulate]'"
        ) from error

    queued = [r for r in results if r.queue_names]
    rows = 2 if queued else 1
    figure, axes = plt.subplots(
        rows, 2, figsize=(12, 4.5 * rows), layout="constrained", squeeze=False
    )
    usage, waits = axes[0]
    # Lines run to the latest end among the replays: a deadlock holds its level forever.
    last_time = max((r.end for r in results), default=0.0)
    longest_wait = max(
        (w for r in results for g in r.gangs if (w := g.wait) is not None), default=0.0
    )
    for result in results:
        name = result.policy.value
        color = _COLORS.get(name)
        capacity = result.cpu_capacity or 1
        timeline = [*result.timeline]
        if timeline and timeline[-1][0] < last_time:
            timeline.append((last_time, *timeline[-1][1:]))
        times = [t for t, _, _ in timeline]
        used = [100 * u / capacity for _, u, _ in timeline]
        held = [100 * (u + p) / capacity for _, u, p in timeline]
        usage.step(times, used, where="post", color=color, label=f"{name}: used by running gangs")
        if any(p for _, _, p in timeline):
            usage.step(
                times,
                held,
                where="post",
                color=color,
                linestyle=":",
                label=f"{name}: incl. held by partial gangs",
            )
        gangs = len(result.gangs)
        started = sorted(w for g in result.gangs if (w := g.wait) is not None)
        if gangs:
            xs = [0.0, *started, max(longest_wait, 1.0)]
            ys = [0.0, *((i + 1) / gangs for i in range(len(started))), len(started) / gangs]
            waits.step(
                xs, ys, where="post", color=color, label=f"{name}: {len(started)}/{gangs} started"
            )
    usage.set_xlabel("simulated time (s)")
    usage.set_ylabel("cpu of the cluster (%)")
    usage.set_ylim(0, 105)
    usage.set_title("cpu utilization over time")
    usage.legend(loc="lower right", fontsize="small")
    waits.set_xlabel("wait from arrival to start (s)")
    waits.set_ylabel("fraction of gangs started")
    waits.set_ylim(0, 1.02)
    waits.set_title("gang wait CDF (never-started gangs keep it below 1)")
    waits.legend(loc="lower right", fontsize="small")
    if queued:
        for panel, result in zip(axes[1], queued, strict=False):
            _shares(panel, result, last_time)
        for panel in axes[1][len(queued) :]:
            panel.set_visible(False)
    if title:
        figure.suptitle(title)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _shares(panel: Axes, result: Replay, last_time: float) -> None:
    """One replay's cpu share per queue over time, fair shares dashed."""
    capacity = result.cpu_capacity or 1
    samples = [*result.queue_timeline]
    if samples and samples[-1][0] < last_time:
        samples.append((last_time, *samples[-1][1:]))
    terms = entitlements(result.queues, result.queue_names, result.cpu_capacity)
    times = [t for t, _, _ in samples]
    due = [
        fair_shares(terms, backlogged, [u / capacity for u in used])
        for _, used, backlogged in samples
    ]
    for i, name in enumerate(result.queue_names):
        line = panel.step(
            times,
            [100 * used[i] / capacity for _, used, _ in samples],
            where="post",
            label=f"{name} (weight {terms[i].weight})",
        )
        # NaN where it is not backlogged: the dashed line breaks there.
        fair = [math.nan if (share := d[i]) is None else 100 * share for d in due]
        panel.step(
            times, fair, where="post", linestyle="--", linewidth=0.9, color=line[0].get_color()
        )
    panel.set_xlabel("simulated time (s)")
    panel.set_ylabel("cpu of the cluster (%)")
    panel.set_ylim(0, 105)
    panel.set_title(f"{result.policy.value}: cpu share per queue (dashed: fair share)")
    panel.legend(loc="upper right", fontsize="small")
