"""Table the startup suite (issue #28): exec to first Binding, and ours' phases, per peer.

    python -m bench.startup_report bench/results/startup/*.json

Per node count, gang size and peer: the median over rounds (min-max beside it) of the runner's
``first_bind_after_start_s`` and pods/s from start; then the median end of each phase of
ours' ``started`` line (seconds since its process began) and of each kind's list. The
ratio is to the first peer of the table (``--peers ours@REV,ours``: after / before).

Ours' rows also carry its tree's import floor (``bench/import_floor.py``, measured after
each trial in fresh interpreters): an empty interpreter's start, the libraries' imports
alone and ours' whole import (``coscheduler.app`` and ``coscheduler.operator``), wall
seconds with CPU-seconds beside, medians over the trials, and ours' share above the
libraries (CPU, the difference within each trial: the least noisy of them). ``imports``
and ``built`` read against them: no start path ends before the libraries' imports do.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

Json = dict[str, Any]
PHASES = ("imports", "client", "built", "leading", "listed", "first_decision", "first_binding")
#: Spans between two phases' ends: less noisy than the ends, which carry the imports' noise.
SPANS = (("lists", "client", "listed"), ("decision to binding", "first_decision", "first_binding"))
#: The import floor's cases (bench/import_floor.py) and their columns.
FLOOR = (
    ("empty", "empty interpreter"),
    ("libraries", "the libraries' imports alone"),
    ("ours", "ours' imports alone"),
)


def _above_floor(runs: list[Json]) -> str:
    """Ours' whole import less the libraries' alone, CPU-seconds (the same trial's)."""
    floors = [f["import_floor"] for f in runs if "ours" in f.get("import_floor", {})]
    if not floors:
        return "-"
    return f"{statistics.median(f['ours']['cpu_s'] - f['libraries']['cpu_s'] for f in floors):.2f}"


def _floor(runs: list[Json], case: str) -> str:
    cases = [f["import_floor"][case] for f in runs if case in f.get("import_floor", {})]
    if not cases:
        return "-"
    wall = statistics.median(c["wall_s"] for c in cases)
    cpu = statistics.median(c["cpu_s"] for c in cases)
    return f"{wall:.2f} ({cpu:.2f} CPU)"


def _median(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def table(trials: list[Json]) -> str:
    by: dict[tuple[int, int, str], list[Json]] = defaultdict(list)
    peers: list[str] = []
    for t in trials:
        if t.get("workload") != "startup" or not t.get("ok"):
            continue
        params = t["params"]
        by[(int(params["nodes"]), int(params["gang_size"]), t["peer"])].append(t["figures"])
        if t["peer"] not in peers:
            peers.append(t["peer"])
    lines = [
        "| nodes | gangs of | peer | runs | first binding after exec, s | ratio "
        "| pods/s from start | "
        + " | ".join(title for _, title in FLOOR)
        + " | ours above the libraries, CPU-s | "
        + " | ".join(PHASES)
        + " | "
        + " | ".join(name for name, _, _ in SPANS)
        + " | slowest lists |",
        "|---|---|---|---|---|---|---|"
        + "---|" * (len(FLOOR) + 1 + len(PHASES) + len(SPANS))
        + "---|",
    ]
    for nodes, size in sorted({(nodes, size) for nodes, size, _ in by}):
        base = [f["first_bind_after_start_s"] for f in by.get((nodes, size, peers[0]), [])]
        for peer in peers:
            runs = by.get((nodes, size, peer), [])
            if not runs:
                continue
            first = [f["first_bind_after_start_s"] for f in runs]
            ratio = (
                f"{statistics.median(first) / statistics.median(base):.2f}"
                if base and statistics.median(base) > 0
                else "-"
            )
            lines_ = [f.get("startup") or {} for f in runs]
            phases = [_floor(runs, case) for case, _ in FLOOR] + [_above_floor(runs)]
            phases += [_median([s[p] for s in lines_ if p in s]) for p in PHASES]
            phases += [
                _median([s[end] - s[begin] for s in lines_ if begin in s and end in s])
                for _, begin, end in SPANS
            ]
            lists: dict[str, list[float]] = defaultdict(list)
            for s in lines_:
                for kind, at in (s.get("lists") or {}).items():
                    lists[kind].append(at)
            slowest = sorted(lists, key=lambda k: -statistics.median(lists[k]))[:3]
            lists_text = ", ".join(f"{k} {statistics.median(lists[k]):.2f}" for k in slowest)
            lines.append(
                f"| {nodes} | {size} | {peer} | {len(runs)} | {_median(first)} | {ratio} | "
                f"{_median([f['pods_per_s_from_start'] for f in runs])} | "
                + " | ".join(phases)
                + f" | {lists_text or '-'} |"
            )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    trials: list[Json] = []
    for name in argv:
        trials += json.loads(Path(name).read_text())["trials"]
    print(table(trials))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
