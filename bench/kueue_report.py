"""``python -m bench.kueue_report FILES``: ours beside Kueue, one Markdown table per suite.

Reads the JSON of ``python -m bench run`` (any suites, any peers) and prints the tables
of bench/RESULTS.md's section on Kueue (issue #31): fairness (shares, deviation), contention,
preemption and throughput, with what every trial reports for every peer: admission to
bound, time to whole (submission to the gang whole), pods evicted and gangs left
partially bound beyond a bind burst (the rule of e2e/gangs.py). A trial that failed its outcome
check is listed with its failure, not its figures (unless another file has the same trial
passing: a re-run supersedes it).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

Json = dict[str, Any]


def _f(value: Any, digits: int = 1, suffix: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}{suffix}"
    return f"{value}{suffix}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def _span(figures: Json, key: str) -> str:
    spans = figures.get(key) or {}
    return f"{_f(spans.get('p50_s'), 2)} / {_f(spans.get('p99_s'), 2)}"


def _waits(figures: Json) -> str:
    return f"{_f(figures.get('wait_p50_s'), 1)} / {_f(figures.get('wait_p99_s'), 1)}"


def _arrangement(trial: Json) -> str:
    params = trial["params"]
    if params.get("heaviest_first"):
        return "fairness-late"
    if params.get("equal_backlogs"):
        return "fairness-equal"
    return "fairness"


def _table(header: list[str], rows: Iterable[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _rows(
    trials: list[Json], key: Callable[[Json], str], row: Callable[[Json], list[str]], width: int
) -> list[list[str]]:
    rows = []
    for trial in sorted(trials, key=lambda t: (key(t), t["peer"])):
        if trial["ok"]:
            rows.append([key(trial), trial["peer"], *row(trial)])
        else:
            failure = trial["failures"][0].splitlines()[0][:90] if trial["failures"] else "?"
            rows.append([key(trial), trial["peer"], f"failed: {failure}", *[""] * (width - 1)])
    return rows


def fairness_table(trials: list[Json]) -> str:
    def row(trial: Json) -> list[str]:
        fig = trial["figures"]
        share = fig.get("mean_share") or {}
        warm = fig.get("after_warmup") or {}
        return [
            " / ".join(_pct(share.get(t)) for t in ("team-a", "team-b")),
            _pct(fig.get("mean_abs_deviation")),
            _pct(fig.get("p95_abs_deviation")),
            _pct(warm.get("mean_abs_deviation")),
            _f(fig.get("makespan_s"), 0, " s"),
            _waits(fig),
            _span(fig, "admission_to_bound"),
            _f(fig.get("pods_evicted")),
            _f(fig.get("gangs_partial_beyond_burst")),
            _f(trial["cost"].get("cpu_s"), 1),
        ]

    header = ["arrangement", "peer", "mean share a / b (25 / 75 %)", "mean abs. deviation",
              "p95 abs. deviation", "mean abs. dev. after 20 s", "makespan",
              "time to whole p50 / p99 (s)", "admission to bound p50 / p99 (s)",
              "pods evicted", "gangs partial beyond a bind burst", "peer CPU-s"]  # fmt: skip
    return _table(header, _rows(trials, _arrangement, row, len(header) - 2))


def contention_table(trials: list[Json]) -> str:
    def row(trial: Json) -> list[str]:
        fig = trial["figures"]
        return [
            _f(fig.get("makespan_s"), 1, " s"),
            _pct(fig.get("utilization_mean")),
            _waits(fig),
            _span(fig, "admission_to_bound"),
            _f(fig.get("partially_bound_gangs")),
            _f(fig.get("gangs_partial_beyond_burst")),
            _f(fig.get("pods_evicted")),
            _f(trial["cost"].get("cpu_s"), 1),
        ]

    header = ["workload", "peer", "makespan", "utilization", "time to whole p50 / p99 (s)",
              "admission to bound p50 / p99 (s)", "gangs partial > 1 s + n/QPS",
              "gangs partial beyond a bind burst", "pods evicted", "peer CPU-s"]  # fmt: skip
    return _table(header, _rows(trials, lambda t: t["label"][:40], row, len(header) - 2))


def preemption_table(trials: list[Json]) -> str:
    def row(trial: Json) -> list[str]:
        fig = trial["figures"]
        evicted = (fig.get("evicted_pods") or 0) + (fig.get("other_deletions") or 0)
        return [
            f"{fig.get('high_gangs_bound')}/{fig.get('high_gangs')}",
            f"{_f(fig.get('bound_p50_s'), 1)} / {_f(fig.get('bound_max_s'), 1)}",
            _span(fig, "admission_to_bound"),
            f"{evicted} ({fig.get('minimal_pods')})",
            f"{fig.get('evicted_gangs')} ({fig.get('minimal_gangs')})",
            _f(fig.get("broken_gangs")),
            _f(fig.get("gangs_partial_beyond_burst")),
            _f(trial["cost"].get("cpu_s"), 1),
        ]

    header = ["round", "peer", "high gangs bound", "high gang bound p50 / max (s)",
              "admission to bound p50 / p99 (s)", "pods evicted (fewest possible)",
              "gangs evicted (fewest)", "low gangs broken", "gangs partial beyond a bind burst",
              "peer CPU-s"]  # fmt: skip
    return _table(header, _rows(trials, lambda t: f"round {t['params'].get('round')}", row,
                                len(header) - 2))  # fmt: skip


def throughput_table(trials: list[Json]) -> str:
    def row(trial: Json) -> list[str]:
        fig = trial["figures"]
        pods = trial["params"].get("pods", 0)
        after = fig.get("all_bound_after_start_s")
        return [
            _f(pods / after if after else None, 1),
            _f(fig.get("bind_rate_pods_per_s"), 1),
            _f(fig.get("first_bind_after_start_s"), 2, " s"),
            _f(after, 1, " s"),
            _f(fig.get("gangs_partial_beyond_burst")),
            _f(trial["cost"].get("cpu_s_per_10k_pods"), 1),
        ]

    header = ["gang size", "peer", "pods/s from start", "bind rate (first to last)",
              "first binding after start", "all bound after start",
              "gangs partial beyond a bind burst",
              "peer CPU-s per 10k pods"]  # fmt: skip
    return _table(header, _rows(trials, lambda t: f"{t['params'].get('gang_size'):>3}", row,
                                len(header) - 2))  # fmt: skip


def _superseded(trials: list[Json]) -> list[Json]:
    """Failed trials dropped where another run of the same workload and peer passed."""
    passed = {(t["workload"], t["label"], t["peer"]) for t in trials if t["ok"]}
    return [t for t in trials if t["ok"] or (t["workload"], t["label"], t["peer"]) not in passed]


def report(paths: list[Path]) -> str:
    trials: list[Json] = []
    for path in paths:
        trials += json.loads(path.read_text())["trials"]
    trials = _superseded(trials)
    sections = []
    for title, kind, table in (
        ("Fairness", "fairness", fairness_table),
        ("Contention", "contention", contention_table),
        ("Preemption", "preemption", preemption_table),
        ("Throughput", "throughput", throughput_table),
    ):
        chosen = [t for t in trials if t["workload"] == kind]
        if chosen:
            sections.append(f"**{title}**\n\n{table(chosen)}")
    return "\n\n".join(sections) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kueue_report", description=__doc__)
    parser.add_argument("files", nargs="+", type=Path)
    print(report(parser.parse_args(argv).files), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
