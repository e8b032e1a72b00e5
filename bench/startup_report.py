"""Table the startup suite (issue #28): exec to first Binding, and ours' phases, per peer.

    python -m bench.startup_report bench/results/startup/*.json

Per node count, gang size and peer: the median over rounds (min-max beside it) of the runner's
``first_bind_after_start_s`` and pods/s from start; then the median end of each phase of
ours' ``started`` line (seconds since its process began) and of each kind's list. The
ratio is to the first peer of the table (``--peers ours@REV,ours``: after / before).

Ours' rows also carry its tree's import floor (``bench/import_floor.py``, measured after
each trial in fresh interpreters): an empty interpreter's start, the libraries' imports
alone, the prescribed stack's alone (pydantic-settings, structlog, prometheus-client) and
ours' whole import (``coscheduler.app`` and ``coscheduler.operator``), wall
seconds with CPU-seconds beside, medians over the trials, and ours' share above the
libraries (CPU, the difference within each trial: the least noisy of them). ``imports``
and ``built`` read against them: no start path ends before the libraries' imports do.

A second table sets each of ours' peers against the issue's goals, from the medians over
rounds: first Binding within 0.5 s of exec; pods/s from start at least 0.8 of the
bind-only ceiling's and 1.2x the default scheduler's; CPU-seconds of the trial at most 2x
the ceiling's. A goal whose reference peer did not run reads "-". Beside the goals, without
one of its own: ours' first Binding as a multiple of kube-scheduler's in the same rounds
(its start-up with the same backlog on the same machine), and its CPU from exec to the
backlog's last Binding as a multiple of the ceiling's (the trial's CPU adds what each peer
writes after its Bindings within the 3 s settle: ours' PodGroup statuses, pod conditions
and events, none for the ceiling).
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
    ("stack", "the prescribed stack alone"),
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


#: The issue's goals (#28): (name, figure, reference peer, how to compare, bound); a
#: figure without a bound is shown for reference only.
GOALS: tuple[tuple[str, str, str | None, str, float | None], ...] = (
    ("first Binding, s (goal <= 0.5)", "first_bind_after_start_s", None, "at most", 0.5),
    ("first Binding / default's", "first_bind_after_start_s", "default", "at most", None),
    ("pods/s / ceiling (goal >= 0.8)", "pods_per_s_from_start", "ceiling", "at least", 0.8),
    ("pods/s / default (goal >= 1.2)", "pods_per_s_from_start", "default", "at least", 1.2),
    ("CPU-s / ceiling (goal <= 2)", "cpu_s", "ceiling", "at most", 2.0),
    ("CPU-s to the last Binding / ceiling's", "cpu_s_to_all_bound", "ceiling", "at most", None),
)


def _figure(trial: Json, name: str) -> float | None:
    if name.startswith("cpu_s"):
        value = (trial.get("cost") or {}).get(name)
    else:
        value = trial["figures"].get(name)
    return float(value) if isinstance(value, int | float) else None


def goals(trials: list[Json]) -> str:
    """Each of ours' peers against the goals, per node count and gang size (medians)."""
    by: dict[tuple[int, int, str], list[Json]] = defaultdict(list)
    for t in trials:
        if t.get("workload") == "startup" and t.get("ok"):
            by[(int(t["params"]["nodes"]), int(t["params"]["gang_size"]), t["peer"])].append(t)

    def median(key: tuple[int, int, str], name: str) -> float | None:
        values = [v for t in by.get(key, []) if (v := _figure(t, name)) is not None]
        return statistics.median(values) if values else None

    lines = [
        "| nodes | gangs of | peer | " + " | ".join(title for title, *_ in GOALS) + " |",
        "|---|---|---|" + "---|" * len(GOALS),
    ]
    for nodes, size, peer in sorted(by):
        if not peer.startswith("ours"):
            continue
        cells = []
        for _, name, reference, compare, bound in GOALS:
            value = median((nodes, size, peer), name)
            if reference is not None and value is not None:
                base = median((nodes, size, reference), name)
                value = value / base if base else None
            if value is None:
                cells.append("-")
                continue
            if bound is None:
                cells.append(f"{value:.2f}")
                continue
            met = value <= bound if compare == "at most" else value >= bound
            cells.append(f"{value:.2f} {'met' if met else '**not met**'}")
        lines.append(f"| {nodes} | {size} | {peer} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    trials: list[Json] = []
    for name in argv:
        trials += json.loads(Path(name).read_text())["trials"]
    print(table(trials))
    print()
    print(goals(trials))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
