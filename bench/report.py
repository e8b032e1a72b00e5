"""Rewrite ``bench/RESULTS.md`` and the plots from the result files of each workload.

The section "Core (pure planner, no API server)" belongs to ``bench/core_bench.py`` and is
kept as it is; everything else is generated here from ``bench/results/*.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Json = dict[str, Any]
BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "RESULTS.md"
RESULTS_DIR = BENCH / "results"
PLOTS_DIR = RESULTS_DIR / "plots"
CORE_HEADING = "## Core (pure planner, no API server)"
PEER_ORDER = ["ours", "reference", "native", "default", "ceiling"]
WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE", "APPLY")
KINDS = ["throughput", "latency", "contention", "scale"]


def _load() -> dict[str, tuple[list[Path], Json]]:
    """For each workload kind, its trials merged over the result files, newest first wins.

    A trial is identified by (workload, label, peer, regime), a scale trial by its node
    count instead of its label; a later run of the same trial replaces the earlier one, so
    suites run separately (or a trial run again) make one report. Smoke runs are never
    reported.
    """
    merged: dict[str, tuple[list[Path], Json]] = {}
    documents = []
    for path in RESULTS_DIR.glob("*.json"):
        document = json.loads(path.read_text())
        if document.get("suite") != "smoke":
            documents.append((document["started"], path, document))
    for _, path, document in sorted(documents, key=lambda d: d[0]):
        for trial in document["trials"]:
            kind = trial["workload"]
            paths, combined = merged.setdefault(kind, ([], {"trials": [], "sources": []}))
            key = _trial_key(trial)
            combined["trials"] = [t for t in combined["trials"] if _trial_key(t) != key]
            combined["trials"].append(trial)
            if path not in paths:
                paths.append(path)
                combined["sources"].append((path, document))
            combined["versions"] = {**combined.get("versions", {}), **document.get("versions", {})}
    for paths, combined in merged.values():
        used = {id(t) for t in combined["trials"]}
        combined["sources"] = [
            (p, d) for p, d in combined["sources"] if any(id(t) in used for t in d["trials"])
        ]
        paths[:] = [p for p, _ in combined["sources"]]
    return merged


def _trial_key(trial: Json) -> tuple[str, str, str, str]:
    # A scale trial is its node count: the pods that fit may change with the workload.
    what = f"{trial['params']['nodes']} nodes" if trial["workload"] == "scale" else trial["label"]
    return (trial["workload"], what, trial["peer"], trial["regime"])


def _core_section() -> str:
    if not RESULTS.exists():
        return ""
    text = RESULTS.read_text()
    start = text.find(CORE_HEADING)
    if start < 0:
        return ""
    end = text.find("\n## ", start + len(CORE_HEADING))
    return text[start:] if end < 0 else text[start : end + 1]


def _peers(trials: list[Json]) -> list[str]:
    present = {t["peer"] for t in trials}
    return [p for p in PEER_ORDER if p in present]


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _ratio(a: float | None, b: float | None) -> str:
    if not a or not b:
        return "-"
    return f"{a / b:.2f}x"


def _cell(trial: Json | None, key: str, digits: int = 1) -> str:
    if trial is None:
        return "-"
    if not trial["ok"]:
        return "FAILED"
    return _fmt(trial["figures"].get(key), digits)


def _index(trials: list[Json], *keys: str) -> dict[tuple[Any, ...], Json]:
    return {tuple(t["params"].get(k) if k in t["params"] else t.get(k) for k in keys): t
            for t in trials}  # fmt: skip


def _header(combined: Json) -> list[str]:
    lines: list[str] = []
    for path, document in combined["sources"]:
        m = document["machine"]
        lines += [
            f"`bench/results/{path.name}`, {document['started']} to {document['finished']} "
            f"(UTC), {m['cores']} cores ({m['cpu_model']}), {m['memory_gib']} GiB, Linux "
            f"{m['kernel']}, Python {m['python']}:",
            "",
            f"    {document['command']}",
            "",
        ]
    lines += [
        "The peers, the control plane (etcd, kube-apiserver, kube-controller-manager, KWOK) "
        "and the runner share these cores; other work on the machine adds noise, so compare "
        "peers within one table.",
        "",
    ]
    return lines


def _failures(trials: list[Json]) -> list[str]:
    failed = [t for t in trials if not t["ok"]]
    if not failed:
        return []
    lines = ["Trials that failed their outcome check (no figure is reported for them):", ""]
    for t in failed:
        reason = "; ".join(t["failures"]).replace("\n", " ")[:600]
        lines.append(f"- {t['workload']} {t['label']}, {t['peer']}, QPS {t['qps']:g}: {reason}")
    return [*lines, ""]


def _throughput(trials: list[Json], kind: str = "throughput") -> list[str]:
    lines: list[str] = []
    peers = _peers(trials)
    for regime in ("high", "default"):
        rows = [t for t in trials if t["regime"] == regime]
        if not rows:
            continue
        qps = rows[0]["qps"]
        burst = rows[0]["burst"]
        by = {(t["params"]["gang_size"], t["params"]["nodes"], t["peer"]): t for t in rows}
        cases = sorted({(t["params"]["gang_size"], t["params"]["nodes"], t["params"]["pods"])
                        for t in rows})  # fmt: skip
        lines += [
            f"**Client QPS {qps:g} / burst {burst}** - pods bound per second from the peer's "
            "start to the last binding (its start-up included), higher is better; in "
            "brackets, the bind rate from its first binding to its last.",
            "",
            "| pods | gang size | nodes | "
            + " | ".join(peers)
            + " | ours / reference | ours / native | ours / ceiling |",
            "|---|---|---|" + "---|" * len(peers) + "---|---|---|",
        ]
        for size, nodes, pods in cases:
            cells = []
            for p in peers:
                t = by.get((size, nodes, p))
                if t is None or not t["ok"]:
                    cells.append(_cell(t, "x"))
                else:
                    f = t["figures"]
                    cells.append(
                        f"{f['pods_per_s_from_start']:,.0f} ({f['bind_rate_pods_per_s']:,.0f})"
                    )

            def rate(
                p: str, size: int = size, nodes: int = nodes, by: dict[Any, Json] = by
            ) -> float | None:
                t = by.get((size, nodes, p))
                return t["figures"].get("pods_per_s_from_start") if t and t["ok"] else None

            lines.append(
                f"| {pods:,} | {size} | {nodes:,} | " + " | ".join(cells)
                + f" | {_ratio(rate('ours'), rate('reference'))}"
                + f" | {_ratio(rate('ours'), rate('native'))}"
                + f" | {_ratio(rate('ours'), rate('ceiling'))} |"
            )  # fmt: skip
        lines.append("")
    return lines


AUDIT_WRITES = ("create", "update", "patch", "delete", "deletecollection")


def _peer_writes(trial: Json) -> dict[str, int]:
    return {k: v for k, v in (trial["figures"].get("peer_requests") or {}).items()
            if k.split(" ")[0] in AUDIT_WRITES}  # fmt: skip


def _per_pod(trial: Json, count: float) -> float:
    return float(count / max(1, trial["cost"]["pods_bound"]))


def _cost(trials: list[Json]) -> list[str]:
    lines: list[str] = []
    peers = _peers(trials)
    for regime in ("high", "default"):
        rows = [t for t in trials if t["regime"] == regime and t["ok"]]
        if not rows:
            continue
        qps = rows[0]["qps"]
        by = {(t["params"]["gang_size"], t["params"]["nodes"], t["peer"]): t for t in rows}
        cases = sorted({(t["params"]["gang_size"], t["params"]["nodes"]) for t in rows})
        lines += [
            f"**Client QPS {qps:g}** - per peer: CPU-seconds per 10,000 pods bound (from "
            "/proc: user + system of all its processes, the reference's scheduler and "
            "controller together, start-up included) / peak RSS in MiB (VmHWM, summed over "
            "its processes) / API writes per pod bound (the peer's own requests, below).",
            "",
            "| gang size | nodes | " + " | ".join(peers) + " | CPU ours / reference | "
            "CPU ours / native | writes ours / reference |",
            "|---|---|" + "---|" * len(peers) + "---|---|---|",
        ]
        for size, nodes in cases:
            cells = []
            cpu: dict[str, float] = {}
            writes: dict[str, float] = {}
            for p in peers:
                t = by.get((size, nodes, p))
                if t is None:
                    cells.append("-")
                    continue
                c = t["cost"]
                cpu[p] = c["cpu_s_per_10k_pods"]
                writes[p] = _per_pod(t, sum(_peer_writes(t).values()))
                cells.append(f"{cpu[p]:.1f} / {c['peak_rss_mib']:.0f} / {writes[p]:.2f}")
            lines.append(
                f"| {size} | {nodes:,} | " + " | ".join(cells)
                + f" | {_ratio(cpu.get('ours'), cpu.get('reference'))}"
                + f" | {_ratio(cpu.get('ours'), cpu.get('native'))}"
                + f" | {_ratio(writes.get('ours'), writes.get('reference'))} |"
            )  # fmt: skip
        lines.append("")
    for regime in ("high", "default"):
        detail = [t for t in trials if t["ok"] and t["regime"] == regime]
        if not detail:
            continue
        size = max(t["params"]["gang_size"] for t in detail)
        nodes = max(t["params"]["nodes"] for t in detail)
        case = {t["peer"]: t for t in detail
                if t["params"]["gang_size"] == size and t["params"]["nodes"] == nodes}  # fmt: skip
        cols = [p for p in PEER_ORDER if p in case]
        keys = sorted({k for t in case.values() for k in (t["figures"].get("peer_requests") or {})
                       if not k.startswith(("get /api", "watch ", "list "))})  # fmt: skip
        lines += [
            f"The peers' own API requests per pod bound, by verb and resource: gang size "
            f"{size}, {nodes:,} nodes, QPS {case[cols[0]]['qps']:g}. Counted from the API "
            "server's audit log of the peer's user (its start-up lists and watches left "
            "out); `apiserver_request_total` before and after each run, which counts every "
            "client of the cluster together (KWOK, node heartbeats, the controller manager), "
            "is kept in the result file as `requests`.",
            "",
            "| request | " + " | ".join(cols) + " |",
            "|---|" + "---|" * len(cols),
        ]
        for key in keys:
            counts = {p: (case[p]["figures"].get("peer_requests") or {}).get(key, 0) for p in cols}
            values = [f"{_per_pod(case[p], counts[p]):.3f}" for p in cols]
            lines.append(f"| `{key}` | " + " | ".join(values) + " |")
        lines.append("")
    return lines


def _latency(trials: list[Json]) -> list[str]:
    lines: list[str] = []
    peers = _peers(trials)
    for regime in ("high", "default"):
        rows = {t["peer"]: t for t in trials if t["regime"] == regime}
        if not rows:
            continue
        qps = next(iter(rows.values()))["qps"]
        sizes = sorted({s for t in rows.values() if t["ok"]
                        for s in t["figures"].get("by_size", {})}, key=int)  # fmt: skip
        lines += [
            f"**Client QPS {qps:g}** - seconds from a gang's last member created to its "
            "minMember-th binding, p50 / p99 (lower is better).",
            "",
            "| gang size | " + " | ".join(peers) + " | p99 ours / reference | p99 ours / native |",
            "|---|" + "---|" * len(peers) + "---|---|",
        ]
        for size in [*sizes, "all"]:
            cells = []
            p99: dict[str, float] = {}
            for p in peers:
                t = rows.get(p)
                if t is None or not t["ok"]:
                    cells.append(_cell(t, "x"))
                    continue
                f = t["figures"] if size == "all" else t["figures"]["by_size"].get(size, {})
                cells.append(f"{_fmt(f.get('p50_s'), 3)} / {_fmt(f.get('p99_s'), 3)}")
                if f.get("p99_s") is not None:
                    p99[p] = f["p99_s"]
            lines.append(f"| {size} | " + " | ".join(cells)
                         + f" | {_ratio(p99.get('ours'), p99.get('reference'))}"
                         + f" | {_ratio(p99.get('ours'), p99.get('native'))} |")  # fmt: skip
        lines.append("")
    return lines


def _contention(trials: list[Json]) -> list[str]:
    lines: list[str] = []
    peers = _peers(trials)
    metrics = [
        ("makespan_s", "makespan (s)", 1),
        ("wait_mean_s", "mean gang wait (s)", 1),
        ("wait_p99_s", "p99 gang wait (s)", 1),
        ("utilization_mean", "mean utilization", 3),
        ("gangs_completed", "gangs completed", 0),
        ("partially_bound_gangs", "gangs ever partially bound", 0),
        ("held_by_incomplete_gangs_cpu_s", "cpu-seconds held by incomplete gangs", 1),
        ("bind_burst_cpu_s", "cpu-seconds in bind bursts (not holding)", 2),
        ("permit_wait_cpu_s", "cpu-seconds reserved at Permit, unbound (all)", 1),
        ("permit_wait_rejected_cpu_s", "... of which for gangs then rejected", 1),
    ]
    for regime in ("high", "default"):
        rows = {t["peer"]: t for t in trials if t["regime"] == regime}
        if not rows:
            continue
        any_trial = next(iter(rows.values()))
        lines += [
            f"**Client QPS {any_trial['qps']:g}** - {any_trial['label']}.",
            "",
            "| | " + " | ".join(peers) + " | ours / reference | ours / native |",
            "|---|" + "---|" * len(peers) + "---|---|",
        ]
        for key, title, digits in metrics:
            cells, values = [], {}
            for p in peers:
                t = rows.get(p)
                if t is None:
                    cells.append("-")
                    continue
                value = t["figures"].get(key)
                values[p] = value
                cell = _fmt(value, digits)
                cells.append(cell if t["ok"] or key in ("partially_bound_gangs",
                             "held_by_incomplete_gangs_cpu_s") else f"{cell} (failed)")  # fmt: skip
            ratio = ("-" if key in ("partially_bound_gangs", "held_by_incomplete_gangs_cpu_s",
                                    "bind_burst_cpu_s", "gangs_completed", "permit_wait_cpu_s",
                                    "permit_wait_rejected_cpu_s")
                     else _ratio(values.get("ours"), values.get("reference")))  # fmt: skip
            ratio_n = "-" if ratio == "-" else _ratio(values.get("ours"), values.get("native"))
            lines.append(f"| {title} | " + " | ".join(cells) + f" | {ratio} | {ratio_n} |")
        lines.append("")
    return lines


def _scale(trials: list[Json]) -> list[str]:
    peers = _peers(trials)
    by = {(t["params"]["nodes"], t["peer"]): t for t in trials}
    nodes_list = sorted({t["params"]["nodes"] for t in trials})
    lines = [
        "Throughput workload, gangs of 64, high QPS, as the node count grows: pods/s from "
        "the peer's start / scheduler CPU-seconds per 10,000 pods / the planner's share of "
        "that CPU (ours only: `coscheduler_planner_duration_seconds_sum` over CPU-seconds).",
        "",
        "| nodes | pods | " + " | ".join(peers) + " |",
        "|---|---|" + "---|" * len(peers),
    ]
    for nodes in nodes_list:
        cells = []
        pods = "-"
        for p in peers:
            t = by.get((nodes, p))
            if t is None or not t["ok"]:
                cells.append(_cell(t, "x"))
                continue
            pods = f"{t['params']['pods']:,}"
            f, c = t["figures"], t["cost"]
            share = f.get("planner_share")
            extra = f" / {share:.0%}" if share is not None else ""
            cells.append(
                f"{f['pods_per_s_from_start']:,.0f} / {c['cpu_s_per_10k_pods']:.1f}{extra}"
            )
        lines.append(f"| {nodes:,} | {pods} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _goals(sources: dict[str, tuple[list[Path], Json]]) -> list[str]:
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
                ow = sum(_peer_writes(ours).values()) / max(1, ours["cost"]["pods_bound"])
                rw = sum(_peer_writes(ref).values()) / max(1, ref["cost"]["pods_bound"])
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


def _plots(sources: dict[str, tuple[list[Path], Json]]) -> dict[str, str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return {}
    PLOTS_DIR.mkdir(parents=True, exist_ok=True)
    made: dict[str, str] = {}
    colors = {"ours": "tab:blue", "reference": "tab:orange", "native": "tab:green",
              "default": "tab:gray", "ceiling": "black"}  # fmt: skip
    if "throughput" in sources:
        trials = [t for t in sources["throughput"][1]["trials"] if t["ok"]]
        regimes = [r for r in ("high", "default") if any(t["regime"] == r for t in trials)]
        if regimes:
            fig, axes = plt.subplots(1, len(regimes), figsize=(6 * len(regimes), 4), squeeze=False)
            for ax, regime in zip(axes[0], regimes, strict=True):
                rows = [t for t in trials if t["regime"] == regime]
                sizes = sorted({t["params"]["gang_size"] for t in rows})
                peers = _peers(rows)
                width = 0.8 / max(1, len(peers))
                for i, p in enumerate(peers):
                    values = []
                    for s in sizes:
                        match = [
                            t for t in rows if t["peer"] == p and t["params"]["gang_size"] == s
                        ]
                        values.append(match[0]["figures"]["pods_per_s_from_start"] if match else 0)
                    ax.bar([x + i * width for x in range(len(sizes))], values, width,
                           label=p, color=colors.get(p))  # fmt: skip
                ax.set_xticks([x + width * (len(peers) - 1) / 2 for x in range(len(sizes))])
                ax.set_xticklabels([str(s) for s in sizes])
                ax.set_xlabel("gang size")
                ax.set_ylabel("pods bound / s")
                qps = rows[0]["qps"]
                ax.set_title(f"throughput, client QPS {qps:g}")
                ax.legend(fontsize=8)
            fig.tight_layout()
            fig.savefig(PLOTS_DIR / "throughput.png", dpi=110)
            plt.close(fig)
            made["throughput"] = "results/plots/throughput.png"
    if "contention" in sources:
        trials = sources["contention"][1]["trials"]
        for regime in ("high", "default"):
            rows = [
                t
                for t in trials
                if t["regime"] == regime and t["figures"].get("utilization_series")
            ]
            if not rows:
                continue
            fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
            for t in rows:
                series = t["figures"]["utilization_series"]
                ax1.plot([s[0] for s in series], [s[1] for s in series], label=t["peer"],
                         color=colors.get(t["peer"]))  # fmt: skip
                waits = sorted(t["figures"].get("waits") or [])
                if waits:
                    fractions = [(i + 1) / len(waits) for i in range(len(waits))]
                    ax2.step(waits, fractions, where="post", label=t["peer"],
                             color=colors.get(t["peer"]))  # fmt: skip
            ax1.set_xlabel("seconds since submission")
            ax1.set_ylabel("cpu bound / capacity")
            ax1.set_title(f"utilization under contention, QPS {rows[0]['qps']:g}")
            ax1.legend(fontsize=8)
            ax2.set_xlabel("gang wait (s): submission to minMember bound")
            ax2.set_ylabel("fraction of gangs")
            ax2.set_title("CDF of gang wait")
            ax2.legend(fontsize=8)
            fig.tight_layout()
            name = f"contention-{regime}.png"
            fig.savefig(PLOTS_DIR / name, dpi=110)
            plt.close(fig)
            made[f"contention-{regime}"] = f"results/plots/{name}"
    if "latency" in sources:
        trials = [t for t in sources["latency"][1]["trials"] if t["ok"]]
        regimes = [r for r in ("high", "default") if any(t["regime"] == r for t in trials)]
        if regimes:
            fig, axes = plt.subplots(1, len(regimes), figsize=(6 * len(regimes), 4), squeeze=False)
            for ax, regime in zip(axes[0], regimes, strict=True):
                for t in [t for t in trials if t["regime"] == regime]:
                    values = sorted(t["figures"]["latencies"].values())
                    ax.step(values, [(i + 1) / len(values) for i in range(len(values))],
                            where="post", label=t["peer"], color=colors.get(t["peer"]))  # fmt: skip
                ax.set_xscale("log")
                ax.set_xlabel("gang latency (s), log scale")
                ax.set_ylabel("fraction of gangs")
                ax.set_title(
                    f"CDF of gang latency, QPS {trials[0]['qps'] if regime == 'high' else 50:g}"
                )
                ax.legend(fontsize=8)
            fig.tight_layout()
            fig.savefig(PLOTS_DIR / "latency.png", dpi=110)
            plt.close(fig)
            made["latency"] = "results/plots/latency.png"
    return made


def write_report() -> Path:
    sources = _load()
    core = _core_section()
    plots = _plots(sources)
    out = [
        "# Benchmark results",
        "",
        "Generated by `python -m bench report` (also at the end of every `python -m bench run`) "
        "from the files in `bench/results/`: for each workload, peer and setting the newest "
        "trial counts, and each table names the files and commands its rows come from; the "
        "section on the core is `bench/core_bench.py`'s and is kept as written.",
        "",
        "## Side by side on a real control plane",
        "",
        "Peers, each alone on a fresh control plane during its trial, each under its own "
        "`schedulerName`, with the same client QPS/burst: **ours** (`coscheduler run`), "
        "**reference** (kube-scheduler with the Coscheduling plugin of scheduler-plugins "
        "v0.34.7, built against Kubernetes 1.34.2, `permitWaitingTimeSeconds: 10` as in its "
        "example, plus its PodGroup controller), **native** (kube-scheduler 1.35.4 with "
        "`GenericWorkload` and `GangScheduling`, one `Workload` per gang), **default** "
        "(kube-scheduler 1.35.4, no gangs) and **ceiling** (`bench/ceiling`, a Go binder "
        "that binds pending pods round-robin with no checks: what the API server here "
        "allows). A gang of one is a plain pod for every peer. Before any figure is "
        "reported the run's outcome is checked from a replay of the pod watch: every pod "
        "bound at most once and every one bound that fits, no node over its allocatable "
        "at any instant, no gang of a gang scheduler left partially bound.",
        "",
    ]
    if not sources:
        out += ["No full run has been recorded yet: `python -m bench run --suite all`.", ""]
    for kind, title, render in (
        ("throughput", "Throughput", _throughput),
        ("latency", "Latency", _latency),
        ("contention", "Contention", _contention),
        ("throughput", "Cost", _cost),
        ("scale", "Scale", _scale),
    ):
        if kind not in sources:
            continue
        _, combined = sources[kind]
        trials = combined["trials"]
        out += [f"### {title}", ""]
        out += _header(combined)
        out += render(trials)
        if title != "Cost":
            out += _failures(trials)
        plot = {"Throughput": "throughput", "Latency": "latency"}.get(title)
        if plot and plot in plots:
            out += [f"![{title}]({plots[plot]})", ""]
        if title == "Contention":
            for regime in ("high", "default"):
                if f"contention-{regime}" in plots:
                    out += [f"![Contention, {regime} QPS]({plots[f'contention-{regime}']})", ""]
    out += _goals(sources)
    notes = RESULTS_DIR / "NOTES.md"
    if notes.exists():
        out += [notes.read_text().rstrip(), ""]
    versions: dict[str, str] = {}
    for _, combined in sources.values():
        versions.update(combined.get("versions", {}))
    if versions:
        out += ["### Versions", ""]
        out += [f"- {k}: {v}" for k, v in sorted(versions.items())]
        out.append("")
    if core:
        out.append(core.rstrip() + "\n")
    RESULTS.write_text("\n".join(out).rstrip() + "\n")
    return RESULTS
