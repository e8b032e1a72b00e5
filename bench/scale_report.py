"""Table the scale suite's trials: pods/s as a ratio to the ceiling, decision p99, peak RSS.

    python -m bench.scale_report bench/results/scale/*.json

One row per (node count, peer), newest trial of each; the ratio is to the ceiling of
the same node count in the same files. A trial stopped by its time limit shows what it
bound by then (marked "stopped").
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

Json = dict[str, Any]
ORDER = ("ceiling", "ours", "default", "native", "reference")


def rows(documents: list[Json]) -> list[str]:
    trials: dict[tuple[int, str], Json] = {}
    for document in sorted(documents, key=lambda d: d["started"]):
        for trial in document["trials"]:
            if trial["workload"] == "scale":
                trials[(trial["params"]["nodes"], trial["peer"])] = trial
    lines = [
        "| nodes | pods | peer | bound | pods/s from start | / ceiling | bind rate | "
        "first binding | decision p99 | peak RSS | CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for nodes in sorted({n for n, _ in trials}):
        ceiling = trials.get((nodes, "ceiling"), {}).get("figures", {})
        base = ceiling.get("pods_per_s_from_start")
        peers = sorted({p for n, p in trials if n == nodes},
                       key=lambda p: ORDER.index(p) if p in ORDER else len(ORDER))  # fmt: skip
        for peer in peers:
            lines.append(row(trials[(nodes, peer)], base))
    return lines


def row(trial: Json, ceiling_rate: float | None) -> str:
    figures, cost = trial.get("figures") or {}, trial.get("cost") or {}
    rate = figures.get("pods_per_s_from_start")
    ratio = f"{rate / ceiling_rate:.2f}" if rate and ceiling_rate else "-"
    bound = figures.get("pods_bound", 0)
    mark = " (stopped)" if figures.get("stopped") else ("" if trial["ok"] else " (failed)")
    return (
        f"| {trial['params']['nodes']:,} | {trial['params']['pods']:,} | {trial['peer']}{mark} | "
        f"{bound:,} | {_num(rate)} | {ratio} | {_num(figures.get('bind_rate_pods_per_s'))} | "
        f"{_seconds(figures.get('first_bind_after_start_s'))} | {decision(figures)} | "
        f"{_mib(cost.get('peak_rss_mib'))} | {_num(cost.get('cpu_s'))} |"
    )


def decision(figures: Json) -> str:
    """The p99 that answers "a gang of 512": ours' planner for 65-512 members, native's pod
    group algorithm; else the per-pod algorithm (the default scheduler has no gangs)."""
    found = figures.get("decision_p99_s") or {}
    for title in (
        "planner (ours), gangs of 65-512",
        "pod group algorithm (kube-scheduler)",
        "planner (ours), every group",
        "pod algorithm (kube-scheduler)",
    ):
        if title in found:
            entry = found[title]
            what = title.replace(" (ours)", "").replace(" (kube-scheduler)", "")
            return f"{entry['p99'] * 1000:,.1f} ms ({what}, n={entry['count']:,})"
    return "-"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} MiB"


def main(argv: list[str]) -> int:
    documents = [json.loads(Path(a).read_text()) for a in argv]
    if not documents:
        print(__doc__)
        return 2
    for document in documents:
        print(f"{document['command']}  ({document['started']} to {document['finished']})")
    print()
    print("\n".join(rows(documents)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
