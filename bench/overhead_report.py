"""Tables of the preemption-overhead suite (issue #18), from its result files.

    python -m bench.overhead_report bench/results/preemption-overhead/*.json

Ours with ``--preemption=off`` and with it on (its default), interleaved round by round:
per workload and figure, every run of each, the median with its spread (min-max of the
rounds), the ratio of the medians on / off, the median of the per-round ratios (a round's
two runs sat side by side, under the same load), and whether on's median lies within
off's spread: the issue's goal ("stays within the run-to-run spread of the run with it
off"; outside it on the good side is "better"). Then ours' own preemption counters:
searches run, plans found or none, evictions.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Json = dict[str, Any]

OFF = "ours-preemption-off"
ON = "ours"
KINDS = ("overhead-throughput", "overhead-contention")


@dataclass(frozen=True)
class Figure:
    """One figure of a trial: its title, the kind it belongs to, how to read it."""

    title: str
    kind: str
    read: Callable[[Json], float | None]
    higher_is_better: bool = False


def _figure(name: str) -> Callable[[Json], float | None]:
    def read(trial: Json) -> float | None:
        value = trial["figures"].get(name)
        return None if value is None else float(value)

    return read


def _cpu_s(trial: Json) -> float | None:
    """Ours' scheduler process CPU seconds (user + system) over the trial."""
    process = trial["cost"].get("processes", {}).get(trial["peer"])
    return None if process is None else float(process["cpu_s"])


FIGURES = (
    Figure("pods/s from start", "overhead-throughput", _figure("pods_per_s_from_start"), True),
    Figure("bind rate, pods/s", "overhead-throughput", _figure("bind_rate_pods_per_s"), True),
    Figure("ours' CPU-s", "overhead-throughput", _cpu_s),
    Figure("makespan, s", "overhead-contention", _figure("makespan_s")),
    Figure("mean wait, s", "overhead-contention", _figure("wait_mean_s")),
    Figure("ours' CPU-s", "overhead-contention", _cpu_s),
    Figure("planner, s", "overhead-contention", _figure("planner_seconds")),
)


def _trials(paths: list[Path]) -> list[Json]:
    trials: list[Json] = []
    for path in paths:
        trials += json.loads(path.read_text())["trials"]
    return trials


def _workload(trial: Json) -> str:
    if trial["workload"] == "overhead-throughput":
        return f"throughput, gangs of {trial['params']['gang_size']}"
    return "contention"


def runs_by_workload(trials: list[Json]) -> dict[tuple[str, str], dict[str, list[Json]]]:
    """The passing trials by (kind, workload) and peer, in the order they ran."""
    runs: dict[tuple[str, str], dict[str, list[Json]]] = {}
    for trial in trials:
        if trial["workload"] in KINDS and trial["ok"] and trial["peer"] in (OFF, ON):
            key = (trial["workload"], _workload(trial))
            runs.setdefault(key, {OFF: [], ON: []})[trial["peer"]].append(trial)
    return runs


def _g(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def summary_row(off: list[float], on: list[float], higher_is_better: bool = False) -> list[str]:
    """The cells: runs off, median (min-max) off, the same on, ratio, per-round ratio, and
    whether on's median is within off's spread ("yes"; "better": outside it on the good
    side; "**no**": on the bad side)."""
    cells: list[str] = []
    for values in (off, on):
        listed = ", ".join(_g(v) for v in values)
        spread = f"{_g(statistics.median(values))} ({_g(min(values))}-{_g(max(values))})"
        cells += [listed, spread]
    off_median, on_median = statistics.median(off), statistics.median(on)
    cells.append(f"{on_median / off_median:.2f}x" if off_median else "")
    # Round i's run off beside round i's run on: the same load weighed on both.
    pairs = [b / a for a, b in zip(off, on, strict=False) if a]
    cells.append(
        f"{statistics.median(pairs):.2f}x ({min(pairs):.2f}-{max(pairs):.2f})" if pairs else ""
    )
    if min(off) <= on_median <= max(off):
        cells.append("yes")
    else:
        cells.append("better" if (on_median > max(off)) == higher_is_better else "**no**")
    return cells


def overhead_table(trials: list[Json]) -> str:
    rows = [
        "| workload | figure | off: runs | off: median (min-max) | on: runs "
        "| on: median (min-max) | on / off (medians) | on / off by round "
        "| on within off's spread |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    runs = runs_by_workload(trials)
    for (kind, workload), by_peer in sorted(runs.items(), key=lambda item: _order(item[0])):
        for figure in FIGURES:
            if figure.kind != kind:
                continue
            off = [v for v in map(figure.read, by_peer[OFF]) if v is not None]
            on = [v for v in map(figure.read, by_peer[ON]) if v is not None]
            if not off or not on:
                continue
            cells = summary_row(off, on, figure.higher_is_better)
            rows.append(f"| {workload} | {figure.title} | " + " | ".join(cells) + " |")
    failed = sum(1 for t in trials if t["workload"] in KINDS and not t["ok"])
    if failed:
        rows.append(f"\n{failed} trial(s) failed and are left out.")
    return "\n".join(rows)


def counters_table(trials: list[Json]) -> str:
    """Ours' preemption counters and its failed attempts, per run (as they ran)."""
    rows = [
        "| workload | preemption | attempts not placed for room | searches | plans none "
        "| plans found | pods evicted |",
        "|---|---|---|---|---|---|---|",
    ]
    runs = runs_by_workload(trials)
    for (_, workload), by_peer in sorted(runs.items(), key=lambda item: _order(item[0])):
        for peer, label in ((OFF, "off"), (ON, "on")):
            trials_of = by_peer[peer]
            if not trials_of:
                continue
            failed = [_unschedulable(t) for t in trials_of]
            counters = [t["figures"].get("preemption", {}) for t in trials_of]
            cells = [", ".join(str(v) for v in failed)]
            for name in ("attempts", "plans_none", "plans_found", "evicted_pods"):
                cells.append(", ".join(str(c.get(name, "-")) for c in counters))
            rows.append(f"| {workload} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _unschedulable(trial: Json) -> int:
    """Attempts that failed for room, where a search may run (not those waiting for
    members: no search is made for them)."""
    return int(trial["figures"].get("attempts_by_result", {}).get("unschedulable", 0))


def _order(key: tuple[str, str]) -> tuple[int, int, str]:
    kind, workload = key
    size = workload.rpartition(" ")[2]
    return KINDS.index(kind), int(size) if size.isdigit() else 0, workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    trials = _trials(args.files)
    print(overhead_table(trials))
    print()
    print(counters_table(trials))


if __name__ == "__main__":
    main()
