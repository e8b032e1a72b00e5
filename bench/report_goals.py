"""The benchmark's goals, each with the measured value and whether it is met."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.report_format import Json
from bench.report_tables import peer_writes


def goals_section(sources: dict[str, tuple[list[Path], Json]]) -> list[str]:
    """The issue's goals, each with the measured value and whether it is met."""
    rows: list[tuple[str, str, str]] = []

    def trials(kind: str) -> list[Json]:
        if kind not in sources:
            return []
        found: list[Json] = sources[kind][1]["trials"]
        return found

    def pick(kind: str, regime: str, peer: str, **params: Any) -> Json | None:
        for t in trials(kind):
            if (
                t["regime"] == regime
                and t["peer"] == peer
                and t["ok"]
                and all(t["params"].get(k) == v for k, v in params.items())
            ):
                return t
        return None

    def verdict(ok: bool | None) -> str:
        return "n/a" if ok is None else ("met" if ok else "**not met**")

    for regime in ("high", "default"):
        sizes = sorted({t["params"]["gang_size"] for t in trials("throughput")
                        if t["regime"] == regime})  # fmt: skip
        for size in sizes:
            ours = pick("throughput", regime, "ours", gang_size=size)
            ref = pick("throughput", regime, "reference", gang_size=size)
            ceil = pick("throughput", regime, "ceiling", gang_size=size)
            need = 1.5 if (regime == "high" and size >= 64) else 1.0
            ref_failed = ref is None and any(
                t["regime"] == regime and t["peer"] == "reference"
                and t["params"].get("gang_size") == size and not t["ok"]
                for t in trials("throughput")
            )  # fmt: skip
            if ours and ref_failed:
                rows.append((f"{regime} QPS: throughput, gangs of {size}, >= {need}x reference",
                             "the reference did not finish (see the failed trials)",
                             "n/a"))  # fmt: skip
            if ours and ref:
                r = (
                    ours["figures"]["pods_per_s_from_start"]
                    / ref["figures"]["pods_per_s_from_start"]
                )
                rows.append((f"{regime} QPS: throughput, gangs of {size}, >= {need}x reference",
                             f"{r:.2f}x", verdict(r >= need)))  # fmt: skip
            if regime == "high" and ours and ceil:
                r = (
                    ours["figures"]["pods_per_s_from_start"]
                    / ceil["figures"]["pods_per_s_from_start"]
                )
                rows.append((f"high QPS: throughput, gangs of {size}, >= 80% of the ceiling",
                             f"{r:.0%}", verdict(r >= 0.8)))  # fmt: skip
            if ours and ref:
                ow = sum(peer_writes(ours).values()) / max(1, ours["cost"]["pods_bound"])
                rw = sum(peer_writes(ref).values()) / max(1, ref["cost"]["pods_bound"])
                rows.append((f"{regime} QPS: API writes per pod <= reference's, gangs of {size}",
                             f"{ow:.2f} vs {rw:.2f}", verdict(ow <= rw)))  # fmt: skip
                oc, rc = ours["cost"]["cpu_s_per_10k_pods"], ref["cost"]["cpu_s_per_10k_pods"]
                need = 2.0 if regime == "high" else 1.0
                rows.append((f"{regime} QPS: CPU-s per 10k pods <= {need}x reference's, "
                             f"gangs of {size}", f"{oc:.1f} vs {rc:.1f} ({oc / rc:.2f}x)",
                             verdict(oc <= need * rc)))  # fmt: skip
        ours = pick("latency", regime, "ours")
        ref = pick("latency", regime, "reference")
        if ours and ref:
            o, r = ours["figures"]["p99_s"], ref["figures"]["p99_s"]
            need = 0.5 if regime == "high" else 1.0
            goal = f"{regime} QPS: p99 gang latency <= {need}x reference's"
            rows.append((goal, f"{o:.3f}s vs {r:.3f}s ({o / r:.2f}x)", verdict(o <= need * r)))
        ours = pick("contention", regime, "ours")
        ref = pick("contention", regime, "reference")
        if ours:
            f = ours["figures"]
            rows.append((f"{regime} QPS: zero partially bound gangs, zero cpu-s held (ours)",
                         f"{f['partially_bound_gangs']} gangs, "
                         f"{f['held_by_incomplete_gangs_cpu_s']} cpu-s",
                         verdict(f["partially_bound_gangs"] == 0
                                 and f["held_by_incomplete_gangs_cpu_s"] == 0)))  # fmt: skip
        if ours and ref:
            o, r = ours["figures"]["makespan_s"], ref["figures"]["makespan_s"]
            rows.append((f"{regime} QPS: makespan <= reference's", f"{o:.1f}s vs {r:.1f}s",
                         verdict(o <= r)))  # fmt: skip
    if not rows:
        return []
    lines = [
        "### Goals",
        "",
        "The goals of the benchmark issue against the figures above (ratios ours / peer; "
        "when a table's rows come from more than one run, it names each file and command).",
        "",
        "| goal | measured | |",
        "|---|---|---|",
    ]
    lines += [f"| {goal} | {value} | {ok} |" for goal, value, ok in rows]
    return [*lines, ""]
