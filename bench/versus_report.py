"""Side by side over rounds: medians (min-max) per workload and peer, and ratios to ours.

    python -m bench.versus_report bench/results/k8s-1.37/*.json

For runs with ``--rounds`` (throughput, contention, topology, dra) and the preemption suite:
every trial of a (workload, peer) pair counts, not only the newest as in ``bench.report``,
and a failed trial is listed, not measured. Markdown on stdout, for ``RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

Json = dict[str, Any]
Figure = Callable[[Json], float | None]
ROUND = re.compile(r", round \d+$")

#: (heading, figure, higher is better: None for no ratio) per workload kind; each ratio says
#: how many times better ours is (ours over the peer, or the peer over ours when lower wins).
FIGURES: dict[str, list[tuple[str, Figure, bool | None]]] = {
    "throughput": [
        ("pods/s from start", lambda f: f.get("pods_per_s_from_start"), True),
        ("bind rate (pods/s)", lambda f: f.get("bind_rate_pods_per_s"), True),
        ("first binding after start (s)", lambda f: f.get("first_bind_after_start_s"), False),
        ("gangs partial beyond a bind burst", lambda f: f.get("gangs_partial_beyond_burst"), False),
    ],
    "contention": [
        ("makespan (s)", lambda f: f.get("makespan_s"), False),
        ("first whole gang (s)", lambda f: min(f["waits"]) if f.get("waits") else None, False),
        ("first whole gang after start (s)", lambda f: f.get("first_whole_after_start_s"), False),
        (
            "first whole gang after first binding (s)",
            lambda f: f.get("first_whole_after_first_binding_s"),
            False,
        ),
        ("wait p50 (s)", lambda f: f.get("wait_p50_s"), False),
        ("wait p99 (s)", lambda f: f.get("wait_p99_s"), False),
        # With gangs bound in waves, the median falls on one side of a wave's edge or the
        # other from run to run; the mean moves with every gang's wait.
        ("wait mean (s)", lambda f: f.get("wait_mean_s"), False),
        ("utilization", lambda f: f.get("utilization_mean"), True),
        ("gangs partial beyond a bind burst", lambda f: f.get("gangs_partial_beyond_burst"), False),
        (
            "cpu-s held by incomplete gangs",
            lambda f: f.get("held_by_incomplete_gangs_cpu_s"),
            False,
        ),
        ("cpu-s reserved at Permit", lambda f: f.get("permit_wait_cpu_s"), False),
    ],
    "preemption": [
        ("high gangs bound", lambda f: f.get("high_gangs_bound"), True),
        ("high gang bound p50 (s)", lambda f: f.get("bound_p50_s"), False),
        ("high gang bound max (s)", lambda f: f.get("bound_max_s"), False),
        ("pods evicted", lambda f: f.get("evicted_pods"), False),
        ("minimal plan (pods)", lambda f: f.get("minimal_pods"), None),
        ("low gangs ended", lambda f: f.get("evicted_gangs"), False),
        ("low gangs left broken", lambda f: f.get("broken_gangs"), False),
        ("partial preemptors", lambda f: f.get("partial_preemptors"), False),
        ("gangs partial beyond a bind burst", lambda f: f.get("gangs_partial_beyond_burst"), False),
    ],
}
FIGURES["topology"] = [
    *FIGURES["contention"][:7],
    ("gangs split across racks", lambda f: f.get("gangs_split"), False),
    *FIGURES["contention"][7:],
]

FIGURES["dra"] = [
    *FIGURES["contention"][:6],
    ("gangs never whole", lambda f: f["gangs"] - len(f.get("waits") or ()), False),
    ("GPU utilization", lambda f: f.get("gpu_utilization_mean"), True),
    ("gangs partial beyond a bind burst", lambda f: f.get("gangs_partial_beyond_burst"), False),
    ("partial gangs holding GPUs", lambda f: f.get("partially_bound_gangs"), False),
    ("GPU-s idle, held by partial gangs", lambda f: f.get("gpu_s_held_by_partial_gangs"), False),
    ("claims left allocated", lambda f: f.get("claims_left_allocated"), False),
    ("peer cpu-s", lambda f: f.get("peer_cpu_s"), False),
    ("peer cpu-s once serving (start-up left out)", lambda f: f.get("peer_cpu_s_serving"), False),
]


def _load(paths: list[Path]) -> tuple[list[Json], list[Json]]:
    documents = [json.loads(path.read_text()) for path in paths]
    trials = [t for d in documents for t in d["trials"]]
    return documents, trials


def _median(values: list[float]) -> str:
    if not values:
        return "-"
    middle = statistics.median(values)
    text = _number(middle)
    if len(values) > 1 and min(values) != max(values):
        text += f" ({_number(min(values))}-{_number(max(values))})"
    return text


def _number(value: float) -> str:
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"


def _ratio(ours: list[float], other: list[float], higher: bool | None) -> str:
    if higher is None:
        return ""
    if not ours or not other:
        return "-"
    a, b = statistics.median(ours), statistics.median(other)
    if higher:
        return f"{a / b:.2f}x" if b else "-"
    # Lower is better: how many times faster / fewer ours is (other over ours).
    return f"{b / a:.2f}x" if a else ("=" if not b else "ours 0")


def tables(trials: list[Json]) -> list[str]:
    by_label: dict[tuple[str, str], dict[str, list[Json]]] = defaultdict(lambda: defaultdict(list))
    failed: list[Json] = []
    for trial in trials:
        if trial["workload"] not in FIGURES:
            continue
        if not trial["ok"]:
            failed.append(trial)
            continue
        label = ROUND.sub("", trial["label"])  # the preemption suite's rounds are one workload
        cost = trial.get("cost") or {}
        by_label[(trial["workload"], label)][trial["peer"]].append(
            {
                **trial["figures"],
                "peer_cpu_s": cost.get("cpu_s"),
                "peer_cpu_s_serving": cost.get("cpu_s_once_serving"),
            }
        )
    out: list[str] = []
    for (kind, label), by_peer in by_label.items():
        peers = sorted(by_peer, key=lambda p: (not p.startswith("ours"), p))
        others = [p for p in peers if not p.startswith("ours")]
        rounds = ", ".join(f"{p} {len(by_peer[p])}" for p in peers)
        out += [f"**{kind}: {label}** (runs: {rounds})", ""]
        header = ["figure", *peers, *(f"ours vs {p}" for p in others if "ours" in by_peer)]
        out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for heading, figure, higher in FIGURES[kind]:
            values = {
                p: [float(v) for v in (figure(f) for f in by_peer[p]) if v is not None]
                for p in peers
            }
            if not any(values.values()):
                continue
            row = [heading, *(_median(values[p]) for p in peers)]
            if "ours" in by_peer:
                row += [_ratio(values["ours"], values[p], higher) for p in others]
            out.append("| " + " | ".join(row) + " |")
        out.append("")
    if failed:
        out += ["Trials that failed their outcome check:", ""]
        out += [f"- {t['workload']} {t['label']}, {t['peer']}: {t['failures'][0]}" for t in failed]
        out.append("")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    documents, trials = _load(args.files)
    lines = [f"- `{d['command']}` ({d['started']} to {d['finished']})" for d in documents]
    print("\n".join([*lines, "", *tables(trials)]).rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
