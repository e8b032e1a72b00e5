"""Work while nothing can be placed (issue #43): the ``idle`` suite's workload.

KWOK nodes filled by running pods placed directly (``spec.nodeName``, no scheduler),
then the peer, then gangs that no node can take (each member asks more cpu than any
node has free), left waiting. Measured, as the scheduler process's whole CPU (user +
system, ``/proc``):

1. ``quiet_cpu_s``: a quiet stretch (``quiet_seconds``) once the gangs were seen
   (``settle_seconds`` after the last was created): nothing happens at all;
2. ``churn_cpu_s``: a steady stream of other small pods created and deleted on the
   nodes, placed directly too (``churn_per_s`` a second, each deleted a second after),
   for ``churn_seconds``: events that free room, never enough for a member.

Nothing may be bound but the probe: a binding is a failure (a member fitted where it
should not). The fillers and the stream live in a namespace of their own, outside what
the trial records.

    python -m bench run --suite idle --peers ours,default,native --regimes high \\
        --rounds 1 --out bench/results/idle --no-report
    python -m bench.idle bench/results/idle/*.json      # the table, ratios to native
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from bench import analysis, submit
from bench.kube import gather_limited
from bench.peers import Gang
from bench.workloads import NodeShape, TrialRun, Workload, _start_and_probe

Json = dict[str, Any]

#: Where the fillers and the stream of other pods live (not recorded by the trial).
OTHERS_NS = "bench-others"


@dataclass
class Idle(Workload):
    """Gangs waiting that cannot fit on a full cluster; the peer's CPU, quiet then churning."""

    kind: ClassVar[str] = "idle"
    expect_all_bound: ClassVar[bool] = False

    async def drive(self, run: TrialRun) -> Json:
        params = self.params
        kube = run.kube
        await submit.create_namespace(kube, OTHERS_NS)
        filler_cpu = self.nodes.cpu_cores * float(params["fill"])
        run.progress.status(f"filling {len(run.nodes)} nodes to {params['fill']:.0%}")
        await gather_limited(
            [
                kube.create(
                    f"/api/v1/namespaces/{OTHERS_NS}/pods", _placed(f"fill-{n}", n, filler_cpu)
                )
                for n in sorted(run.nodes)
            ],
            submit.CREATE_CONCURRENCY,
        )
        figures = await _start_and_probe(run)
        await submit.create_group_objects(kube, run.peer, run.ns, self.gangs)
        await submit.create_pods(kube, run.recorder, run.peer, run.ns, self.gangs)
        run.progress.status(f"{len(self.gangs)} gangs waiting; settling")
        await asyncio.sleep(float(params["settle_seconds"]))
        scheduler = run.peer.processes[0]
        before = _cpu(scheduler.record.pid)
        run.progress.status(f"quiet for {params['quiet_seconds']:g}s")
        await asyncio.sleep(float(params["quiet_seconds"]))
        quiet = _cpu(scheduler.record.pid)
        run.progress.status(f"churn for {params['churn_seconds']:g}s")
        churned = await _churn(run, float(params["churn_per_s"]), float(params["churn_seconds"]))
        after = _cpu(scheduler.record.pid)
        for process in run.peer.processes:
            process.ensure_running()
        bound = sum(
            1 for p in run.recorder.pods.values() if p.bound is not None and p.gang != "probe"
        )
        if bound:
            raise RuntimeError(f"{bound} pod(s) bound while no member could fit")
        figures.update(
            quiet_cpu_s=round(quiet - before, 3),
            churn_cpu_s=round(after - quiet, 3),
            churn_pods=churned,
            gangs_waiting=len(self.gangs),
        )
        return figures


def _placed(name: str, node: str, cpu: float) -> Json:
    """A pod placed directly on ``node`` (no scheduler), running until deleted."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "containers": [{
                "name": "main", "image": "registry.invalid/bench:1",
                "resources": {"requests": {"cpu": f"{round(cpu * 1000)}m", "memory": "64Mi"}},
            }],
        },
    }  # fmt: skip


async def _churn(run: TrialRun, per_second: float, seconds: float) -> int:
    """Create a small pod on the nodes in turn every ``1/per_second`` s, delete each a
    second later; how many were made."""
    kube, nodes = run.kube, sorted(run.nodes)
    path = f"/api/v1/namespaces/{OTHERS_NS}/pods"
    deletes: set[asyncio.Task[Any]] = set()

    async def delete_later(name: str) -> None:
        await asyncio.sleep(1.0)
        await kube.request("DELETE", f"{path}/{name}")

    started = time.monotonic()
    made = 0
    while (due := started + made / per_second) < started + seconds:
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        name = f"churn-{made}"
        await kube.create(path, _placed(name, nodes[made % len(nodes)], 0.1))
        task = asyncio.create_task(delete_later(name))
        deletes.add(task)
        task.add_done_callback(deletes.discard)
        made += 1
    await asyncio.gather(*deletes)
    return made


def _cpu(pid: int) -> float:
    reading = analysis.read_proc(pid)
    if reading is None:
        raise RuntimeError(f"the scheduler (pid {pid}) is gone")
    return float(reading["cpu_s"])


def idle(
    nodes: int = 50, waiting: int = 100, size: int = 8, member_cpu: int = 8, fill: float = 0.8,
    churn_per_s: float = 5.0, quiet_seconds: float = 60.0, churn_seconds: float = 60.0,
    settle_seconds: float = 30.0,
) -> Idle:  # fmt: skip
    """Nodes of 32 cpu filled to ``fill``; ``waiting`` gangs of ``size`` x ``member_cpu``
    (more than a node has free, so none can fit)."""
    shape = NodeShape(nodes, cpu="32", memory="128Gi")
    if shape.cpu_cores * (1 - fill) >= member_cpu:
        raise ValueError("a member would fit on a filled node: nothing would wait")
    gangs = [
        Gang(f"w{i:04d}", size, size, cpu=str(member_cpu), memory="1Gi") for i in range(waiting)
    ]
    return Idle(
        f"{waiting} gangs of {size} x {member_cpu} cpu waiting on {nodes} nodes filled to "
        f"{fill:.0%}; {churn_per_s:g} pods/s churn",
        shape, gangs, settle_seconds + quiet_seconds + churn_seconds + 300,
        {"nodes": nodes, "waiting": waiting, "size": size, "member_cpu": member_cpu,
         "fill": fill, "churn_per_s": churn_per_s, "quiet_seconds": quiet_seconds,
         "churn_seconds": churn_seconds, "settle_seconds": settle_seconds},
    )  # fmt: skip


def report(paths: list[Path]) -> str:
    """Medians over rounds per (waiting, peer), with ratios to native's, as a Markdown table."""
    runs: dict[tuple[int, str], list[Json]] = defaultdict(list)
    for path in paths:
        for trial in json.loads(path.read_text())["trials"]:
            if trial.get("workload") == Idle.kind and trial.get("ok"):
                runs[(trial["params"]["waiting"], trial["peer"])].append(trial["figures"])
    lines = [
        "| gangs waiting | peer | quiet CPU-s | churn CPU-s | quiet / native | churn / native |",
        "|---:|---|---:|---:|---:|---:|",
    ]

    def median(values: list[float]) -> float:
        ordered = sorted(values)
        return ordered[len(ordered) // 2]

    for waiting, peer in sorted(runs):
        figures = runs[(waiting, peer)]
        quiet = median([f["quiet_cpu_s"] for f in figures])
        churn = median([f["churn_cpu_s"] for f in figures])
        native = runs.get((waiting, "native"))
        ratios = ["", ""]
        if native:
            base = (
                median([f["quiet_cpu_s"] for f in native]),
                median([f["churn_cpu_s"] for f in native]),
            )
            ratios = [
                f"{mine / theirs:.2f}x" if theirs else ""
                for mine, theirs in zip((quiet, churn), base, strict=True)
            ]
        lines.append(
            f"| {waiting} | {peer} | {quiet:.2f} | {churn:.2f} | {ratios[0]} | {ratios[1]} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="The idle suite's results as a table.")
    parser.add_argument("results", nargs="+", type=Path)
    print(report(parser.parse_args().results))


if __name__ == "__main__":
    main()
