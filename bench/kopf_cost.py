"""What Kopf's part of ours costs with many PodGroups waiting (issue #41): the ``kopf`` suite.

Goal: with 5,000 PodGroups waiting, Kopf's part costs at most 100 MiB more peak RSS and
10 % more CPU than without it, and status writes per gang stay the same.

The trial: KWOK nodes of 32 cpu, the peer started, then ``waiting`` gangs of 2 pods of
64 cpu (no node can take a member, so each PodGroup waits), created at once; a settle;
then ``bound`` gangs of 4 pods of 1 cpu, which fit, each bound whole. The waiting gangs
come *with* their pods: that is how a PodGroup waits in a cluster (its Job made its
members), and the pods give each group a status with counts and a place in line,
which the controller writes; gangs of 2 keep the pods' share of the cost (the same with
and without Kopf) small. Measured per trial (the runner's cost: each process's
``/proc`` from its exec to the settle's end):

- peak RSS (VmHWM) and CPU seconds of the process;
- the peer's PodGroup status writes (the API server's audit log): in the whole trial
  per PodGroup, and from the bound gangs' creation to their last Binding and settle,
  per bound gang.

Compared (alternate order round by round): ``ours-kopf-off`` (this tree with Kopf not
started and our own status rounds writing every status, as before issue #41: the same
code otherwise) and ``ours``; ``ours@REV`` for a change's before/after.

    python -m bench run --suite kopf --peers ours-kopf-off,ours --regimes high \\
        --pods 10000 --rounds 3 --out bench/results/kopf --no-report
    python -m bench.kopf_cost bench/results/kopf/*.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from statistics import median_high
from typing import Any, ClassVar

from bench import identity, submit
from bench.peers import Gang
from bench.workloads import NodeShape, TrialRun, Workload, _start_and_probe

Json = dict[str, Any]

#: The audit log's name for our PodGroups' status writes (any verb).
STATUS_WRITES = "podgroups/status.scheduling.sigs.k8s.io"


@dataclass
class KopfCost(Workload):
    """Gangs that cannot fit, left waiting; then a few that fit, bound."""

    kind: ClassVar[str] = "kopf"
    expect_all_bound: ClassVar[bool] = False

    async def drive(self, run: TrialRun) -> Json:
        params = self.params
        figures = await _start_and_probe(run)
        waiting = [g for g in self.gangs if g.name.startswith("w")]
        fitting = [g for g in self.gangs if g.name.startswith("b")]
        run.progress.status(f"creating {len(waiting)} waiting gangs")
        await submit.create_group_objects(run.kube, run.peer, run.ns, waiting)
        await submit.create_pods(run.kube, run.recorder, run.peer, run.ns, waiting)
        run.progress.status(f"{len(waiting)} gangs waiting; settling")
        await asyncio.sleep(float(params["settle_seconds"]))
        audit = run.ctx.audit_log
        _, offset = identity.count_requests(audit) if audit is not None else ({}, 0)
        await submit.create_group_objects(run.kube, run.peer, run.ns, fitting)
        await submit.create_pods(run.kube, run.recorder, run.peer, run.ns, fitting)
        total = sum(g.size for g in fitting)

        def bound(recorder: Any) -> int:
            return sum(
                1 for p in recorder.pods.values() if p.bound is not None and p.gang != "probe"
            )

        await submit.wait_progress(
            run.recorder, run.progress, run.peer, total, 300.0,
            lambda r: bound(r) >= total, bound,
        )  # fmt: skip
        await asyncio.sleep(float(params["settle_seconds"]))
        if audit is not None:
            after, _ = identity.count_requests(audit, offset)
            writes = sum(n for name, n in after.items() if name.endswith(" " + STATUS_WRITES))
            figures["status_writes_per_bound_gang"] = round(writes / len(fitting), 2)
        waiting_bound = bound(run.recorder) - total
        if waiting_bound:
            raise RuntimeError(f"{waiting_bound} pod(s) of waiting gangs bound: none fits")
        figures.update(gangs_waiting=len(waiting), gangs_bound=len(fitting))
        return figures


def kopf_cost(
    waiting: int = 500, bound: int = 20, nodes: int = 8, settle_seconds: float = 20.0
) -> KopfCost:
    """``waiting`` gangs of 2 x 64 cpu (no node of 32 takes one) and ``bound`` of 4 x 1 cpu."""
    gangs = [Gang(f"w{i:05d}", 2, 2, cpu="64", memory="1Gi") for i in range(waiting)]
    gangs += [Gang(f"b{i:03d}", 4, 4) for i in range(bound)]
    return KopfCost(
        f"{waiting} gangs of 2 waiting, then {bound} gangs of 4 bound, on {nodes} nodes",
        NodeShape(nodes, cpu="32", memory="128Gi"),
        gangs,
        settle_seconds * 2 + 600 + waiting / 10,
        {"waiting": waiting, "bound": bound, "nodes": nodes, "settle_seconds": settle_seconds},
    )


def report(paths: list[Path]) -> str:
    """Per (waiting, peer): medians over rounds of peak RSS, CPU and status writes, and the
    differences to ``ours-kopf-off`` (Kopf's part)."""
    runs: dict[tuple[int, str], list[Json]] = defaultdict(list)
    for path in paths:
        for trial in json.loads(path.read_text())["trials"]:
            if trial.get("workload") == KopfCost.kind and trial.get("ok"):
                figures = dict(trial["figures"])
                figures["cpu_s"] = trial["cost"]["cpu_s"]
                figures["peak_rss_mib"] = trial["cost"]["peak_rss_mib"]
                requests = figures.get("peer_requests", {})
                groups = figures["gangs_waiting"] + figures["gangs_bound"]
                figures["status_writes_per_group"] = (
                    sum(n for k, n in requests.items() if k.endswith(" " + STATUS_WRITES)) / groups
                )
                runs[(trial["params"]["waiting"], trial["peer"])].append(figures)

    lines = [
        "| groups waiting | peer | rounds | peak RSS MiB | CPU s | status writes / group "
        "| / bound gang | RSS - off | CPU / off |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keys = ("peak_rss_mib", "cpu_s", "status_writes_per_group", "status_writes_per_bound_gang")
    for waiting, peer in sorted(runs):
        med = {k: median_high([f.get(k, 0.0) for f in runs[(waiting, peer)]]) for k in keys}
        off = runs.get((waiting, "ours-kopf-off"))
        versus = ["", ""]
        if off and peer != "ours-kopf-off":
            base = {k: median_high([f.get(k, 0.0) for f in off]) for k in keys}
            versus = [
                f"{med['peak_rss_mib'] - base['peak_rss_mib']:+.0f}",
                f"{med['cpu_s'] / base['cpu_s']:.2f}x" if base["cpu_s"] else "",
            ]
        lines.append(
            f"| {waiting} | {peer} | {len(runs[(waiting, peer)])} | {med['peak_rss_mib']:.0f} "
            f"| {med['cpu_s']:.1f} | {med['status_writes_per_group']:.2f} "
            f"| {med['status_writes_per_bound_gang']:.2f} | {versus[0]} | {versus[1]} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="The kopf suite's results as a table.")
    parser.add_argument("results", nargs="+", type=Path)
    print(report(parser.parse_args().results))


if __name__ == "__main__":
    main()
