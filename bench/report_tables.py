"""The report's tables, one function per workload (and the cost of the throughput runs)."""

from __future__ import annotations

from typing import Any

from bench.report_format import PEER_ORDER, Json, cell_text, fmt_number, peer_columns, ratio_text


def source_header(combined: Json) -> list[str]:
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


def failure_lines(trials: list[Json]) -> list[str]:
    failed = [t for t in trials if not t["ok"]]
    if not failed:
        return []
    lines = ["Trials that failed their outcome check (no figure is reported for them):", ""]
    for t in failed:
        reason = "; ".join(t["failures"]).replace("\n", " ")[:600]
        lines.append(f"- {t['workload']} {t['label']}, {t['peer']}, QPS {t['qps']:g}: {reason}")
    return [*lines, ""]


def throughput_table(trials: list[Json], kind: str = "throughput") -> list[str]:
    lines: list[str] = []
    peers = peer_columns(trials)
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
                    cells.append(cell_text(t, "x"))
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
                + f" | {ratio_text(rate('ours'), rate('reference'))}"
                + f" | {ratio_text(rate('ours'), rate('native'))}"
                + f" | {ratio_text(rate('ours'), rate('ceiling'))} |"
            )  # fmt: skip
        lines.append("")
    return lines


AUDIT_WRITES = ("create", "update", "patch", "delete", "deletecollection")


def peer_writes(trial: Json) -> dict[str, int]:
    return {k: v for k, v in (trial["figures"].get("peer_requests") or {}).items()
            if k.split(" ")[0] in AUDIT_WRITES}  # fmt: skip


def _per_pod(trial: Json, count: float) -> float:
    return float(count / max(1, trial["cost"]["pods_bound"]))


def cost_table(trials: list[Json]) -> list[str]:
    lines: list[str] = []
    peers = peer_columns(trials)
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
                writes[p] = _per_pod(t, sum(peer_writes(t).values()))
                cells.append(f"{cpu[p]:.1f} / {c['peak_rss_mib']:.0f} / {writes[p]:.2f}")
            lines.append(
                f"| {size} | {nodes:,} | " + " | ".join(cells)
                + f" | {ratio_text(cpu.get('ours'), cpu.get('reference'))}"
                + f" | {ratio_text(cpu.get('ours'), cpu.get('native'))}"
                + f" | {ratio_text(writes.get('ours'), writes.get('reference'))} |"
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


def latency_table(trials: list[Json]) -> list[str]:
    lines: list[str] = []
    peers = peer_columns(trials)
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
                    cells.append(cell_text(t, "x"))
                    continue
                f = t["figures"] if size == "all" else t["figures"]["by_size"].get(size, {})
                cells.append(f"{fmt_number(f.get('p50_s'), 3)} / {fmt_number(f.get('p99_s'), 3)}")
                if f.get("p99_s") is not None:
                    p99[p] = f["p99_s"]
            lines.append(f"| {size} | " + " | ".join(cells)
                         + f" | {ratio_text(p99.get('ours'), p99.get('reference'))}"
                         + f" | {ratio_text(p99.get('ours'), p99.get('native'))} |")  # fmt: skip
        lines.append("")
    return lines


def contention_table(trials: list[Json]) -> list[str]:
    lines: list[str] = []
    peers = peer_columns(trials)
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
                cell = fmt_number(value, digits)
                cells.append(cell if t["ok"] or key in ("partially_bound_gangs",
                             "held_by_incomplete_gangs_cpu_s") else f"{cell} (failed)")  # fmt: skip
            ratio = ("-" if key in ("partially_bound_gangs", "held_by_incomplete_gangs_cpu_s",
                                    "bind_burst_cpu_s", "gangs_completed", "permit_wait_cpu_s",
                                    "permit_wait_rejected_cpu_s")
                     else ratio_text(values.get("ours"), values.get("reference")))  # fmt: skip
            ratio_n = "-" if ratio == "-" else ratio_text(values.get("ours"), values.get("native"))
            lines.append(f"| {title} | " + " | ".join(cells) + f" | {ratio} | {ratio_n} |")
        lines.append("")
    return lines


def scale_table(trials: list[Json]) -> list[str]:
    peers = peer_columns(trials)
    by = {(t["params"]["nodes"], t["peer"]): t for t in trials}
    nodes_list = sorted({t["params"]["nodes"] for t in trials})
    lines = [
        "Throughput workload (gangs of 64; since issue #28 the mix of `--gang-sizes`), high "
        "QPS, as the node count grows: pods/s from "
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
                cells.append(cell_text(t, "x"))
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
