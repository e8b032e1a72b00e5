"""Tables (and the share plot) of the queues and fairness suites, from their result files.

    python -m bench.queues_report bench/results/queues/queues-*.json
    python -m bench.queues_report bench/results/queues/fairness-*.json --plot OUT.png

The queues suite: pods/s from the peer's start of every trial, without and with queues,
by gang size; medians and their ratio. The fairness suite: per peer, each tenant's mean
share of the allocated cpu in the backlogged window against its intended share, the
deviation, utilization, makespan and partially bound gangs; ``--plot`` draws the share of
every tenant over time, one panel per peer.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from bench.fairness import window_figures

Json = dict[str, Any]


def _trials(paths: list[Path]) -> list[Json]:
    trials: list[Json] = []
    for path in paths:
        trials += json.loads(path.read_text())["trials"]
    return trials


def throughput_table(trials: list[Json]) -> str:
    rows = ["| gang size | queues | runs (pods/s from start) | median | with / without |",
            "|---|---|---|---|---|"]  # fmt: skip
    runs: dict[tuple[int, int], list[float]] = {}
    failed = 0
    for trial in trials:
        if trial["workload"] != "queue-throughput":
            continue
        if not trial["ok"]:
            failed += 1
            continue
        key = (trial["params"]["gang_size"], trial["params"]["queues"])
        runs.setdefault(key, []).append(trial["figures"]["pods_per_s_from_start"])
    for size in sorted({s for s, _ in runs}):
        base = statistics.median(runs.get((size, 0), [0.0])) or None
        for (s, queues), values in sorted(runs.items()):
            if s != size:
                continue
            median = statistics.median(values)
            ratio = f"{median / base:.2f}x" if base and queues else ""
            listed = ", ".join(f"{v:g}" for v in values)
            rows.append(f"| {size} | {queues or 'none'} | {listed} | {median:g} | {ratio} |")
    if failed:
        rows.append(f"\n{failed} trial(s) failed and are left out.")
    return "\n".join(rows)


def fairness_table(trials: list[Json]) -> str:
    rows = ["| peer | from | mean share (intended) | mean / p95 largest deviation "
            "| utilization | window | makespan | partially bound gangs "
            "| held by incomplete gangs |",
            "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for trial in trials:
        if trial["workload"] != "fairness":
            continue
        f = trial["figures"]
        if not trial["ok"] or "mean_share" not in f:
            rows.append(f"| {trial['peer']} | failed: {'; '.join(trial['failures'])[:200]} |")
            continue
        warmup = float(trial["params"]["run_seconds"])
        capacity = trial["params"]["nodes"] * trial["params"]["node_cpu"]
        late = f.get("after_warmup") or window_figures(
            f["share_series"], f["intended_share"], capacity, warmup
        )
        for start, figures in (("first binding", f), (f"+{warmup:g} s", late)):
            shares = ", ".join(
                f"{t} {figures['mean_share'][t]:.1%} ({f['intended_share'][t]:.0%})"
                for t in f["tenants"]
            )
            rows.append(
                f"| {trial['peer']} | {start} | {shares} | {figures['mean_abs_deviation']:.1%} / "
                f"{figures['p95_abs_deviation']:.1%} | {figures['utilization_in_window']:.1%} | "
                f"{f['backlogged_window_s']:g} s | {f['makespan_s']:g} s | "
                f"{f['partially_bound_gangs']} | {f['held_by_incomplete_gangs_cpu_s']:g} cpu-s |"
            )
    return "\n".join(rows)


def share_plot(trials: list[Json], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [t for t in trials if t["workload"] == "fairness" and "share_series" in t["figures"]]
    fig, axes = plt.subplots(len(rows), 1, figsize=(8, 2.6 * len(rows)), sharex=True,
                             squeeze=False)  # fmt: skip
    for ax, trial in zip(axes[:, 0], rows, strict=True):
        f = trial["figures"]
        series = f["share_series"]
        times = series["t"]
        totals = [sum(series["cpu"][t][i] for t in f["tenants"]) for i in range(len(times))]
        capacity = trial["params"]["nodes"] * trial["params"]["node_cpu"]
        for tenant in f["tenants"]:
            share = [c / total if total else 0.0
                     for c, total in zip(series["cpu"][tenant], totals, strict=True)]  # fmt: skip
            line = ax.plot(times, share, label=f"{tenant} share of allocated")[0]
            ax.axhline(f["intended_share"][tenant], color=line.get_color(), ls=":", lw=1)
        ax.plot(times, [t / capacity for t in totals], color="gray", lw=1, label="utilization")
        ax.axvline(series["window_end_s"], color="black", ls="--", lw=0.8)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("fraction")
        ax.set_title(f"{trial['peer']}: tenants' share of the allocated cpu "
                     "(dotted: intended; dashed: end of backlog)", fontsize=9)  # fmt: skip
    axes[-1, 0].set_xlabel("seconds from the first binding")
    axes[0, 0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--plot", type=Path, default=None, help="the fairness share plot")
    args = parser.parse_args()
    trials = _trials(args.files)
    if any(t["workload"] == "queue-throughput" for t in trials):
        print(throughput_table(trials))
    if any(t["workload"] == "fairness" for t in trials):
        print(fairness_table(trials))
        if args.plot is not None:
            share_plot(trials, args.plot)


if __name__ == "__main__":
    main()
