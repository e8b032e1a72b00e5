"""The PNG: cpu utilization over time and the CDF of gang waits, per policy.

matplotlib is an optional dependency (the ``simulate`` extra) and heavy to
import, so it is imported here, when a plot is asked for, with the Agg
backend (no display needed).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from coscheduler.sim.replay import Replay

__all__ = ["PlotUnavailableError", "write_plot"]

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

    figure, (usage, waits) = plt.subplots(1, 2, figsize=(12, 4.5), layout="constrained")
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
    if title:
        figure.suptitle(title)
    figure.savefig(path, dpi=100)
    plt.close(figure)
