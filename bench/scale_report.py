"""Table the scale suite's trials: pods/s and CPU as ratios to the ceiling, decision p99,
peak RSS and gangs left partial.

    python -m bench.scale_report bench/results/scale/*.json

One row per (node count, peer), newest trial of each; the ratio is to the ceiling of
the same node count in the same files. CPU is each peer's from its exec to the last
Binding where every pod was bound (the trial's whole, with its 3 s settle, where not),
its ratio to the ceiling's per pod bound.
Gangs partial: left partially bound beyond a bind burst (``e2e/gangs.py``, the same rule
for every peer). A trial stopped by its time limit shows what it bound by then (marked
"stopped"). A second table: what the API server was asked to write
a second while each peer ran (``apiserver_request_total``, every client), by kind.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

Json = dict[str, Any]
ORDER = ("ceiling", "ours", "default", "native", "reference")
SETTLE_SECONDS = 3.0
"""The trial's wait after its drive, inside the request window (``bench.trial``)."""
WRITE_KINDS = {
    "Bindings": ("POST pods/binding",),
    "pod status": ("PATCH pods/status", "PUT pods/status"),
    "node status": ("PATCH nodes/status", "PUT nodes/status", "PATCH nodes", "PUT nodes"),
    "Leases": ("PUT leases", "POST leases"),
    "events": ("POST events", "PATCH events"),
}
"""The columns of the writes table; every other write is "other"."""


def rows(documents: list[Json]) -> list[str]:
    trials = latest(documents)
    lines = [
        "| nodes | pods | peer | bound | pods/s from start | / ceiling | bind rate | "
        "first binding | decision p99 | peak RSS | CPU s | per pod / ceiling | gangs partial |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for nodes in sorted({n for n, _ in trials}):
        ceiling = trials.get((nodes, "ceiling"), {})
        base = (ceiling.get("figures") or {}).get("pods_per_s_from_start")
        peers = sorted({p for n, p in trials if n == nodes},
                       key=lambda p: ORDER.index(p) if p in ORDER else len(ORDER))  # fmt: skip
        for peer in peers:
            lines.append(row(trials[(nodes, peer)], base, cpu_per_pod(ceiling)))
    return lines


def cpu(trial: Json) -> float | None:
    """CPU-s from exec to the last Binding; the whole trial's where not every pod was bound."""
    cost = trial.get("cost") or {}
    value = cost.get("cpu_s_to_all_bound", cost.get("cpu_s"))
    return float(value) if isinstance(value, int | float) else None


def cpu_per_pod(trial: Json) -> float | None:
    """:func:`cpu` per pod bound (a stopped trial bound fewer)."""
    used, bound = cpu(trial), (trial.get("figures") or {}).get("pods_bound")
    return used / bound if used and bound else None


def latest(documents: list[Json]) -> dict[tuple[int, str], Json]:
    trials: dict[tuple[int, str], Json] = {}
    for document in sorted(documents, key=lambda d: d["started"]):
        for trial in document["trials"]:
            if trial["workload"] == "scale":
                trials[(trial["params"]["nodes"], trial["peer"])] = trial
    return trials


def request_window(trial: Json) -> float | None:
    """Seconds the trial's request counts span: from the peer's start to the settle's end."""
    figures = trial.get("figures") or {}
    window = figures.get("requests_window_s")
    if window is None:  # runs before the figure: the last binding, or the time limit
        window = figures.get("all_bound_after_start_s")
        stopped = re.search(r"after (\d+)s", figures.get("stopped") or "")
        if stopped:
            window = float(stopped.group(1))
    return None if window is None else window + SETTLE_SECONDS


def write_rows(documents: list[Json]) -> list[str]:
    """Writes a second by kind while each peer ran, every client of the API server."""
    trials = latest(documents)
    kinds = [*WRITE_KINDS, "other"]
    lines = [
        "| nodes | peer | window | " + " | ".join(kinds) + " | all writes |",
        "|---|---|---|" + "---|" * len(kinds) + "---|",
    ]
    for (nodes, peer), trial in sorted(trials.items(), key=lambda kv: (kv[0][0], _rank(kv[0][1]))):
        window = request_window(trial)
        requests = trial.get("requests") or {}
        writes = {k: v for k, v in requests.items()
                  if k.split(" ", 1)[0] in ("POST", "PUT", "PATCH", "DELETE")}  # fmt: skip
        if not window or not writes:
            continue
        per_kind = {
            kind: sum(writes.get(k, 0.0) for k in keys) for kind, keys in WRITE_KINDS.items()
        }
        per_kind["other"] = sum(writes.values()) - sum(per_kind.values())
        cells = " | ".join(f"{per_kind[k] / window:,.1f}" for k in kinds)
        lines.append(f"| {nodes:,} | {peer} | {window:,.0f} s | {cells} | "
                     f"{sum(writes.values()) / window:,.1f} |")  # fmt: skip
    return lines


def _rank(peer: str) -> int:
    return ORDER.index(peer) if peer in ORDER else len(ORDER)


def row(trial: Json, ceiling_rate: float | None, ceiling_cpu_per_pod: float | None = None) -> str:
    figures, cost = trial.get("figures") or {}, trial.get("cost") or {}
    rate = figures.get("pods_per_s_from_start")
    ratio = f"{rate / ceiling_rate:.2f}" if rate and ceiling_rate else "-"
    used, per_pod = cpu(trial), cpu_per_pod(trial)
    cpu_ratio = f"{per_pod / ceiling_cpu_per_pod:.2f}" if per_pod and ceiling_cpu_per_pod else "-"
    partial = figures.get("gangs_partial_beyond_burst")
    bound = figures.get("pods_bound", 0)
    mark = " (stopped)" if figures.get("stopped") else ("" if trial["ok"] else " (failed)")
    return (
        f"| {trial['params']['nodes']:,} | {trial['params']['pods']:,} | {trial['peer']}{mark} | "
        f"{bound:,} | {_num(rate)} | {ratio} | {_num(figures.get('bind_rate_pods_per_s'))} | "
        f"{_seconds(figures.get('first_bind_after_start_s'))} | {decision(figures)} | "
        f"{_mib(cost.get('peak_rss_mib'))} | {_num(used)} | {cpu_ratio} | "
        f"{'-' if partial is None else partial} |"
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
    print()
    print("Writes a second while each peer ran (every client):")
    print()
    print("\n".join(write_rows(documents)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
