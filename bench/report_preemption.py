"""The report's section on gang preemption (issue #18): one run's trials, side by side.

The rows come from the newest result file with trials of the ``preemption`` workload, all
its rounds pooled (gangs' times) or summed (counts); the reading written by hand beside the
figures is ``results/preemption-notes.md``, kept as it is.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

from bench.analysis import percentile
from bench.report_format import PLOTS_DIR, RESULTS_DIR, Json, fmt_number, peer_columns, ratio_text
from bench.report_tables import source_header

HEADING = "### Gang preemption side by side (issue #18)"
NOTES = RESULTS_DIR / "preemption-notes.md"
PLOT = "preemption.png"
COLORS = {"ours": "tab:blue", "reference": "tab:orange", "native": "tab:green",
          "default": "tab:gray"}  # fmt: skip


def newest_run(sources: dict[str, tuple[list[Path], Json]]) -> tuple[Path, Json, list[Json]] | None:
    """The newest result file with preemption trials, and those trials."""
    if "preemption" not in sources:
        return None
    _, combined = sources["preemption"]
    path, document = max(combined["sources"], key=lambda source: source[1]["started"])
    trials = [t for t in document["trials"] if t["workload"] == "preemption"]
    return (path, document, trials) if trials else None


def preemption_section(sources: dict[str, tuple[list[Path], Json]]) -> list[str]:
    found = newest_run(sources)
    if found is None:
        return []
    path, document, trials = found
    lines = [HEADING, ""]
    lines += source_header({"sources": [(path, document)]})
    lines += _setting(trials)
    lines += _goal_lines(trials)
    lines += _summary_table(trials)
    lines += _per_gang_table(trials)
    failed = [t for t in trials if not t["ok"]]
    if failed:
        lines += ["Trials that failed their outcome check (left out of the figures above):", ""]
        lines += [f"- {t['peer']}, round {t['params']['round']}: "
                  + "; ".join(t["failures"]).replace("\n", " ")[:400] for t in failed]  # fmt: skip
        lines.append("")
    plot = _draw(trials)
    if plot:
        lines += [f"![Gang preemption]({plot})", ""]
    if NOTES.exists():
        lines += [NOTES.read_text().rstrip(), ""]
    return lines


def _setting(trials: list[Json]) -> list[str]:
    params = trials[0]["params"]
    rounds = sorted({t["params"]["round"] for t in trials})
    plans = params["minimal_plans"]
    plan_text = ", ".join(
        f"{p['size']}: {'+'.join(map(str, p['victim_sizes'])) or 'nothing'}" for p in plans
    )
    return [
        f"{trials[0]['label'].rsplit(', round', 1)[0]}; {len(rounds)} round(s), each peer on a "
        f"fresh control plane per round, client QPS {trials[0]['qps']:g}. PriorityClasses "
        f"`bench-low` ({params['priorities']['bench-low']}) and `bench-high` "
        f"({params['priorities']['bench-high']}); every gang is a Job (minMember = its size) "
        "whose pods run an hour; KWOK removes a deleted pod at its deletionTimestamp (the "
        f"grace period of {params['grace_seconds']} s, which the API server keeps in whole "
        "seconds: 2-3 s). A low Job ignores disrupted pods (podFailurePolicy), so its "
        "preempted members are made again and wait. High gangs arrive one at a time, each "
        f"once the previous one is bound (at most {params['per_gang_seconds']:g} s) and "
        f"{params['gap_seconds']:g} s later. Minimal whole-gang plans, by high gang size in "
        f"arrival order (victim gang sizes): {plan_text}; "
        f"{sum(p['pods'] for p in plans)} pods in all, as many as pod by pod "
        f"({sum(p['pod_minimum'] for p in plans)}).",
        "",
    ]


def _goal_lines(trials: list[Json]) -> list[str]:
    """The issue's goal for ours, judged on every round of the run."""
    if not any(t["peer"] == "ours" and t["ok"] for t in trials):
        return []

    def total(key: str) -> int:
        return int(_total(trials, "ours", key) or 0)

    def verdict(ok: bool) -> str:
        return "met" if ok else "**not met**"

    broken, evicted, minimal = total("broken_gangs"), total("evicted_pods"), total("minimal_pods")
    in_time, gangs = total("bound_in_time"), total("high_gangs")
    after = [r["bind_after_victims_gone_s"] for r in _rows(trials, "ours")
             if r["bind_after_victims_gone_s"] is not None]  # fmt: skip
    worst = f", at most {max(after):.3f} s after its last victim went" if after else ""
    return [
        "The issue's goal for ours, over every round:",
        "",
        "| goal | measured | |",
        "|---|---|---|",
        f"| breaks zero gangs | {broken} victim gangs left broken | {verdict(broken == 0)} |",
        f"| evicts no more pods than the minimal plan | {evicted} evicted, minimal {minimal} | "
        f"{verdict(evicted <= minimal)} |",
        f"| binds each preemptor within its victims' termination + about 1 s | {in_time}/"
        f"{gangs} gangs{worst} | {verdict(in_time == gangs)} |",
        "",
    ]


def _rows(trials: list[Json], peer: str) -> list[Json]:
    return [row for t in trials if t["peer"] == peer and t["ok"]
            for row in t["figures"]["per_gang"]]  # fmt: skip


def _total(trials: list[Json], peer: str, key: str) -> float | None:
    ok = [t for t in trials if t["peer"] == peer and t["ok"]]
    return sum(t["figures"][key] for t in ok) if ok else None


def _summary_table(trials: list[Json]) -> list[str]:
    peers = peer_columns(trials)
    others = [p for p in ("reference", "native", "default") if p in peers]

    def times(peer: str) -> list[float]:
        return [r["bound_s"] for r in _rows(trials, peer) if r["bound_s"] is not None]

    def pooled(key: str) -> Callable[[str], list[float]]:
        return lambda peer: [r[key] for r in _rows(trials, peer) if r[key] is not None]

    def median(values: list[float]) -> float | None:
        return statistics.median(values) if values else None

    rows: list[tuple[str, Callable[[str], str], Callable[[str], float | None] | None]] = [
        ("high gangs bound within the trial",
         lambda p: f"{_total(trials, p, 'high_gangs_bound'):.0f}/"
                   f"{_total(trials, p, 'high_gangs'):.0f}", None),
        ("creation to all members bound, p50 / p99 / max (s)",
         lambda p: " / ".join(fmt_number(percentile(times(p), q), 2) for q in (50, 99, 100)),
         lambda p: percentile(times(p), 50)),
        ("... bound within its victims' termination + 1 s",
         lambda p: f"{_total(trials, p, 'bound_in_time'):.0f}/"
                   f"{_total(trials, p, 'high_gangs'):.0f}", None),
        ("all members made (by the Job controller), median (s)",
         lambda p: fmt_number(median(pooled("members_seen_s")(p)), 2), None),
        ("first eviction after creation, median (s)",
         lambda p: fmt_number(median(pooled("first_eviction_s")(p)), 2),
         lambda p: median(pooled("first_eviction_s")(p))),
        ("victims gone after creation, median (s)",
         lambda p: fmt_number(median(pooled("victims_gone_s")(p)), 2), None),
        ("last member bound after the last victim gone, median / max (s)",
         lambda p: f"{fmt_number(median(pooled('bind_after_victims_gone_s')(p)), 3)} / "
                   f"{fmt_number(max(pooled('bind_after_victims_gone_s')(p), default=None), 3)}",
         None),
        ("pods evicted (minimal whole-gang plan / pod by pod)",
         lambda p: f"{_total(trials, p, 'evicted_pods'):.0f} "
                   f"({_total(trials, p, 'minimal_pods'):.0f} / "
                   f"{_total(trials, p, 'pod_minimum'):.0f})",
         lambda p: _total(trials, p, "evicted_pods")),
        ("low gangs hit (the minimal plan ends)",
         lambda p: f"{_total(trials, p, 'evicted_gangs'):.0f} "
                   f"({_total(trials, p, 'minimal_gangs'):.0f})", None),
        ("victim gangs left broken, ever / at the end",
         lambda p: f"{_total(trials, p, 'broken_gangs'):.0f} / "
                   f"{_total(trials, p, 'broken_at_end'):.0f}", None),
        ("cpu-seconds held by broken victim gangs (to the trial's end)",
         lambda p: fmt_number(_total(trials, p, "broken_cpu_s"), 0), None),
        ("partially bound preemptors (longest, s)",
         lambda p: f"{_total(trials, p, 'partial_preemptors'):.0f} ("
                   + fmt_number(max((r["partial_s"] for r in _rows(trials, p)
                                     if r["partial_s"] is not None), default=None), 1) + ")",
         None),
        ("victims' replacements bound, of them evicted again",
         lambda p: f"{_total(trials, p, 'replacements_bound'):.0f}, "
                   f"{_total(trials, p, 'replacements_evicted'):.0f}", None),
        ("running pods deleted without DisruptionTarget",
         lambda p: f"{_total(trials, p, 'other_deletions'):.0f}", None),
    ]  # fmt: skip
    lines = [
        "Summed over the rounds (times: every high gang of every round pooled). Ratios are "
        "ours / peer.",
        "",
        "| | " + " | ".join(peers) + " | " + " | ".join(f"ours / {p}" for p in others) + " |",
        "|---|" + "---|" * (len(peers) + len(others)),
    ]
    for title, cell, value in rows:
        cells = []
        for peer in peers:
            ok = any(t["peer"] == peer and t["ok"] for t in trials)
            cells.append(cell(peer) if ok else "FAILED")
        ratios = [
            ratio_text(value("ours"), value(p)) if value and "ours" in peers else "-"
            for p in others
        ]
        lines.append(f"| {title} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    return [*lines, ""]


def _per_gang_table(trials: list[Json]) -> list[str]:
    peers = peer_columns(trials)
    plans = trials[0]["params"]["minimal_plans"]
    lines = [
        "Per high gang, in arrival order: pods evicted in each round / low gangs they came "
        "from (summed over rounds) / median seconds from creation to all bound.",
        "",
        "| high gang | minimal plan | " + " | ".join(peers) + " |",
        "|---|---|" + "---|" * len(peers),
    ]
    for index, plan in enumerate(plans):
        cells = []
        for peer in peers:
            rows = [t["figures"]["per_gang"][index] for t in trials
                    if t["peer"] == peer and t["ok"]]  # fmt: skip
            if not rows:
                cells.append("-")
                continue
            bound = [r["bound_s"] for r in rows if r["bound_s"] is not None]
            time = f"{statistics.median(bound):.2f} s" if bound else "not bound"
            if len(bound) not in (0, len(rows)):
                time += f" ({len(rows) - len(bound)} not bound)"
            evicted = "+".join(str(r["evicted"]) for r in rows)
            cells.append(f"{evicted} / {sum(r['victim_gangs'] for r in rows)} / {time}")
        victims = "+".join(map(str, plan["victim_sizes"])) or "-"
        lines.append(
            f"| {plan['gang']} | {plan['pods']} pods ({victims}) | " + " | ".join(cells) + " |"
        )
    return [*lines, ""]


def _draw(trials: list[Json]) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    peers = [p for p in peer_columns(trials) if any(t["peer"] == p and t["ok"] for t in trials)]
    if not peers:
        return None
    PLOTS_DIR.mkdir(parents=True, exist_ok=True)
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(15, 4))
    for peer in peers:
        values = sorted(r["bound_s"] for r in _rows(trials, peer) if r["bound_s"] is not None)
        if values:
            fractions = [(i + 1) / len(values) for i in range(len(values))]
            ax1.step(values, fractions, where="post", label=peer, color=COLORS.get(peer))
    ax1.set_xscale("log")
    ax1.set_xlabel("high gang: creation to all members bound (s), log scale")
    ax1.set_ylabel("fraction of high gangs")
    ax1.set_title("time to bind the preemptor")
    ax1.legend(fontsize=8)
    evicted = [_total(trials, p, "evicted_pods") or 0 for p in peers]
    ax2.bar(peers, evicted, color=[COLORS.get(p) for p in peers])
    minimal = _total(trials, peers[0], "minimal_pods")
    if minimal is not None:
        ax2.axhline(minimal, color="black", linestyle="--", label="minimal whole-gang plan")
        ax2.legend(fontsize=8)
    ax2.set_ylabel("pods evicted (all rounds)")
    ax2.set_title("pods evicted")
    width = 0.4
    xs = range(len(peers))
    broken = [_total(trials, p, "broken_gangs") or 0 for p in peers]
    partial = [_total(trials, p, "partial_preemptors") or 0 for p in peers]
    ax3.bar([x - width / 2 for x in xs], broken, width, label="victim gangs left broken")
    ax3.bar([x + width / 2 for x in xs], partial, width, label="partially bound preemptors")
    ax3.set_xticks(list(xs))
    ax3.set_xticklabels(peers)
    ax3.set_ylim(0, max([*broken, *partial, 1]) * 1.35)  # room for the legend
    ax3.set_ylabel("gangs (all rounds)")
    ax3.set_title("gangs broken or partly bound")
    ax3.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(PLOTS_DIR / PLOT, dpi=110)
    plt.close(fig)
    return f"results/plots/{PLOT}"
