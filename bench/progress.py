"""The progress display: a live line on a terminal (rich), plain timestamped lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.progress import TaskID

try:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress
except ImportError:  # the bench extra is not installed: plain lines
    Console = None  # type: ignore[assignment,misc]


class Progress:
    def __init__(self, *, live: bool | None = None) -> None:
        self.live = (sys.stderr.isatty() if live is None else live) and Console is not None
        self.started = time.monotonic()
        self._last_plain = 0.0
        self._title = ""
        if self.live:
            self.console = Console(stderr=True)
            self.bar = RichProgress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[what]}"), TimeElapsedColumn(),
                console=self.console, transient=True,
            )  # fmt: skip
            self.task: TaskID | None = None

    def _stamp(self) -> str:
        elapsed = int(time.monotonic() - self.started)
        return f"[{elapsed // 60:3d}:{elapsed % 60:02d}]"

    def log(self, message: str) -> None:
        if self.live:
            self.console.print(f"{self._stamp()} {message}", highlight=False)
        else:
            print(f"{self._stamp()} {message}", file=sys.stderr, flush=True)

    def begin(self, title: str) -> None:
        self._title = title
        self.log(title)
        if self.live:
            self.bar.start()
            self.task = self.bar.add_task("  ", total=None, what="")

    def status(self, message: str) -> None:
        if self.live and self.task is not None:
            self.bar.update(self.task, description=f"  {message}", total=None, completed=0, what="")
        else:
            self.log(f"  {message}")

    def update(self, done: int, total: int, what: str) -> None:
        if self.live and self.task is not None:
            self.bar.update(self.task, description="  ", total=total, completed=done, what=what)
            return
        now = time.monotonic()
        if now - self._last_plain >= 5 or done >= total:
            self._last_plain = now
            self.log(f"  {done}/{total} {what}")

    def end(self, result: Any) -> None:
        if self.live and self.task is not None:
            self.bar.remove_task(self.task)
            self.bar.stop()
            self.task = None
        verdict = "ok" if result.ok else "FAILED: " + "; ".join(result.failures)[:2000]
        self.log(f"  {verdict} ({result.wall_seconds:.0f}s){_headline(result)}")


def _headline(result: Any) -> str:
    f = result.figures
    if not result.ok:
        return ""
    return _figures_headline(f) + _broken_gangs(f)


def _broken_gangs(f: Any) -> str:
    """Gangs partial beyond the burst (e2e/gangs.py): a failure for ours, a finding else."""
    count = f.get("gangs_partial_beyond_burst")
    return f"; gangs partial beyond the burst: {count}" if count else ""


def _figures_headline(f: Any) -> str:
    if "bind_rate_pods_per_s" in f:
        rate, after = f["pods_per_s_from_start"], f["all_bound_after_start_s"]
        return f" - {rate} pods/s (all bound {after}s after the peer's start)"
    if "p99_s" in f:
        return f" - gang latency p50 {f['p50_s']}s p99 {f['p99_s']}s"
    if "gpu_utilization_mean" in f:
        return (
            f" - makespan {f['makespan_s']}s, GPU utilization {f['gpu_utilization_mean']:.0%}, "
            f"partial gangs {f['partially_bound_gangs']}, "
            f"GPU-s held by them {f['gpu_s_held_by_partial_gangs']}"
        )
    if "makespan_s" in f:
        return (
            f" - makespan {f['makespan_s']}s, utilization {f['utilization_mean']:.0%}, "
            f"partial gangs {f['partially_bound_gangs']}"
        )
    return ""
