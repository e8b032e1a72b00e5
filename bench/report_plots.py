"""The report's plots (matplotlib, when installed)."""

from __future__ import annotations

from pathlib import Path

from bench.report_format import PLOTS_DIR, Json, peer_columns


def draw_plots(sources: dict[str, tuple[list[Path], Json]]) -> dict[str, str]:
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
                peers = peer_columns(rows)
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
