"""The idle suite's cluster for the core alone, in simulated time: what waiting costs it.

    .venv/bin/python -m bench.idle_core --tree before=/tmp/before-tree --tree this=. \\
        [--waiting 100,400] [--runs 3]

The cluster of ``bench/idle.py`` fed straight to :class:`Scheduler` (no API server, no
runtime): 50 nodes of 32 cpu filled to 80 % by pods placed directly, gangs of 8 x 8
cpu waiting that no node can take. Then, as the runtime's loop would, the core is asked
for decisions until none is ready, at every event and whenever it says a group becomes
ready (:meth:`Scheduler.ready_at`):

1. a quiet minute of simulated time: nothing happens;
2. a minute of churn: 5 small pods a second placed directly on the nodes in turn,
   each deleted a second later.

Printed per tree: the process CPU of each phase and the attempts made (decisions
returned), median over ``--runs`` fresh interpreters, the trees alternating. What the
core costs, not the process: the runtime adds its own per attempt (pod conditions,
events, the log line) and per watch event.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

NODES, NODE_CPU, FILL, SIZE, MEMBER_CPU = 50, 32, 0.8, 8, 8
CHURN_PER_S, SECONDS = 5, 60.0


def _run(waiting: int) -> dict[str, Any]:
    from coscheduler.api.node import NodeInfo
    from coscheduler.api.pod import PodInfo
    from coscheduler.core.group import GroupPolicy
    from coscheduler.core.scheduler import Scheduler

    clock = [0.0]
    scheduler = Scheduler(lambda: clock[0])

    def pod(name: str, cpu_milli: int, node: str | None, group: str | None = None) -> PodInfo:
        raw: dict[str, Any] = {
            "metadata": {"name": name, "namespace": "bench", "uid": f"u-{name}", "labels": {}},
            "spec": {
                "schedulerName": "coscheduler" if node is None else "other",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{cpu_milli}m"}}}],
            },
            "status": {"phase": "Running" if node else "Pending"},
        }
        if node is not None:
            raw["spec"]["nodeName"] = node
        if group is not None:
            raw["metadata"]["labels"]["scheduling.sigs.k8s.io/pod-group"] = group
        return PodInfo.from_object(raw)

    names = [f"n{i:03}" for i in range(NODES)]
    for name in names:
        node = {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": str(NODE_CPU), "memory": "128Gi", "pods": "110"}},
        }
        scheduler.upsert_node(NodeInfo.from_object(node))
        scheduler.upsert_pod(pod(f"fill-{name}", int(NODE_CPU * FILL * 1000), name))
    for index in range(waiting):
        group = f"w{index:04}"
        scheduler.upsert_group(
            GroupPolicy(queue="default", namespace="bench", name=group, min_member=SIZE)
        )
        for member in range(SIZE):
            scheduler.upsert_pod(pod(f"{group}-{member}", MEMBER_CPU * 1000, None, group))
    attempts = 0

    def settle() -> None:
        nonlocal attempts
        while (decision := scheduler.next_decision()) is not None:
            attempts += 1
            if decision.bindings:
                raise RuntimeError(f"{decision.group} was placed: nothing should fit")

    def run_until(end: float, events: list[tuple[float, Any]]) -> None:
        """Settle at every event and every time the core says a group is ready."""
        while True:
            ready = scheduler.ready_at()
            moments = [t for t in (ready, events[0][0] if events else None) if t is not None]
            moment = min(moments) if moments else end
            if moment > end:
                clock[0] = end
                return
            clock[0] = max(clock[0], moment)
            while events and events[0][0] <= clock[0]:
                events.pop(0)[1]()
            settle()

    settle()  # the first attempt of every gang: before the quiet minute, as in the suite
    first = attempts
    start, cpu = clock[0], time.process_time()
    run_until(start + SECONDS, [])
    quiet_cpu, quiet_attempts = time.process_time() - cpu, attempts - first
    churn: list[tuple[float, Any]] = []
    for index in range(int(CHURN_PER_S * SECONDS)):
        at = clock[0] + index / CHURN_PER_S
        other = pod(f"churn-{index}", 100, names[index % NODES])
        churn.append((at, lambda p=other: scheduler.upsert_pod(p)))
        churn.append((at + 1.0, lambda uid=other.uid: scheduler.remove_pod(uid)))
    churn.sort(key=lambda event: event[0])
    counted, cpu = attempts, time.process_time()
    run_until(clock[0] + SECONDS + 1.0, churn)
    return {
        "quiet_cpu_s": quiet_cpu,
        "quiet_attempts": quiet_attempts,
        "churn_cpu_s": time.process_time() - cpu,
        "churn_attempts": attempts - counted,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH")
    parser.add_argument("--waiting", default="100,400")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: one run
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(_run(args.one)))
        return
    trees = [tuple(t.split("=", 1)) for t in args.tree] or [("this", ".")]
    for waiting in (int(w) for w in args.waiting.split(",")):
        results: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in trees}
        for run in range(args.runs):
            for name, path in trees if run % 2 == 0 else trees[::-1]:
                out = subprocess.run(
                    [sys.executable, "-P", __file__, "--one", str(waiting)],
                    env={**os.environ, "PYTHONPATH": str(Path(path).resolve())},
                    check=True, capture_output=True, text=True,
                ).stdout  # fmt: skip
                results[name].append(json.loads(out))
        for name, runs in results.items():
            figures = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print(
                f"{waiting} waiting, {name}: quiet {figures['quiet_cpu_s']:.3f} CPU-s "
                f"({figures['quiet_attempts']:.0f} attempts), churn "
                f"{figures['churn_cpu_s']:.3f} CPU-s ({figures['churn_attempts']:.0f} attempts)"
            )


if __name__ == "__main__":
    main()
