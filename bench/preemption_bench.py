"""Benchmark of the victim search (core/preemption): no API server, no I/O.

The issue's case: 5,000 nodes (32 cpu, 128 Gi each), 20,000 running pods
(8 cpu, 16 Gi) in 2,000 gangs of 10, the cluster full (each node holds 4
pods of 4 different gangs, scattered at random, seed 1); gang priorities 0-9,
start times spread over the last 10 hours. Then a high-priority gang arrives
and does not fit; the time measured is the scheduler's whole preemption
step for it (collecting the running groups from the scheduler's state, then
the search, including every trial), as the scheduling loop would pay it.

Cases (the preemptor, priority 100 unless said):

- ``surplus``: 20% of the gangs run 2 members above minMember; 16 x 8 cpu
  fits by evicting members above the minimum only (no gang broken);
- ``whole``: every gang at its minimum; 16 x 8 cpu needs 2 whole gangs;
- ``paired``: 8 x 16 cpu: each member needs two victims on one node;
- ``none-priority``: the preemptor has priority 0, nothing is lower: no plan;
- ``none-size``: 4 x 64 cpu fits no node at all: no plan.

Figures are medians over ``--repeat`` runs of the step alone (the cluster
is built once per case; the search leaves the snapshot unchanged): wall
time, and the process's CPU time (less sensitive to other work on the machine).

    .venv/bin/python bench/preemption_bench.py --repeat 7
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import time
from typing import Any

from coscheduler.api.labels import POD_GROUP_LABEL
from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.core import GroupKey, GroupPolicy, Scheduler
from coscheduler.core.preemption import (
    DEFAULT_BUDGET,
    PreemptionPlan,
    Preemptor,
    find_plan,
    running_groups,
)

NODES = 5000
GANGS = 2000
GANG_SIZE = 10
PODS_PER_NODE = 4
NOW = 1_800_000_000.0


def make_node(index: int) -> NodeInfo:
    name = f"node-{index:05d}"
    return NodeInfo.from_object(
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}},
        }
    )


def make_pod(
    name: str, group: str, cpu: str, priority: int, node: str | None, started: float | None
) -> PodInfo:
    status: dict[str, Any] = {"phase": "Running" if node else "Pending"}
    if started is not None:
        status["startTime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))
    spec: dict[str, Any] = {
        "schedulerName": "coscheduler",
        "priority": priority,
        "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu, "memory": "16Gi"}}}],
    }
    if node is not None:
        spec["nodeName"] = node
    return PodInfo.from_object(
        {
            "metadata": {
                "name": name,
                "namespace": "bench",
                "uid": f"uid-{name}",
                "labels": {POD_GROUP_LABEL: group},
                "creationTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": spec,
            "status": status,
        }
    )


def full_cluster(surplus: bool, seed: int = 1) -> Scheduler:
    rng = random.Random(seed)
    scheduler = Scheduler(lambda: NOW)
    for index in range(NODES):
        scheduler.upsert_node(make_node(index))
    seats = [f"node-{i // PODS_PER_NODE:05d}" for i in range(NODES * PODS_PER_NODE)]
    rng.shuffle(seats)
    for g in range(GANGS):
        name = f"gang-{g:04d}"
        priority = rng.randrange(10)
        minimum = GANG_SIZE - 2 if surplus and g % 5 == 0 else GANG_SIZE
        scheduler.upsert_group(
            GroupPolicy(namespace="bench", name=name, min_member=minimum, priority=priority)
        )
        started = NOW - rng.uniform(60, 36_000)
        for i in range(GANG_SIZE):
            seat = seats[g * GANG_SIZE + i]
            scheduler.upsert_pod(make_pod(f"{name}-{i}", name, "8", priority, seat, started))
    return scheduler


def preemptor(size: int, cpu: str, priority: int) -> Preemptor:
    policy = GroupPolicy(namespace="bench", name="urgent", min_member=size, priority=priority)
    pending = [make_pod(f"urgent-{i}", "urgent", cpu, priority, None, None) for i in range(size)]
    return Preemptor(policy, pending, [], priority)


def search(
    scheduler: Scheduler, who: Preemptor, budget: int
) -> tuple[PreemptionPlan, float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    running = running_groups(
        scheduler.pods(),  # what the scheduler's own hook reads
        scheduler.snapshot,
        scheduler.group_of,
        scheduler.policy,
        who.key,
    )
    plan = find_plan(scheduler.snapshot, who, running, NOW, budget=budget)
    return plan, time.perf_counter() - started, time.process_time() - cpu


CASES: dict[str, tuple[bool, int, str, int]] = {
    "surplus: 16 x 8 cpu, gangs with members above minMember": (True, 16, "8", 100),
    "whole: 16 x 8 cpu, every gang at its minimum": (False, 16, "8", 100),
    "paired: 8 x 16 cpu, two victims per member on one node": (False, 8, "16", 100),
    "none-priority: 16 x 8 cpu at priority 0": (False, 16, "8", 0),
    "none-size: 4 x 64 cpu, larger than any node": (False, 4, "64", 100),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    args = parser.parse_args()
    print(
        f"python {platform.python_version()} on {platform.machine()}, {NODES} nodes, "
        f"{GANGS * GANG_SIZE} running pods in {GANGS} gangs, budget {args.budget} trials, "
        f"median of {args.repeat}"
    )
    clusters: dict[bool, Scheduler] = {}
    for title, (surplus, size, cpu, priority) in CASES.items():
        scheduler = clusters.get(surplus) or clusters.setdefault(surplus, full_cluster(surplus))
        who = preemptor(size, cpu, priority)
        assert scheduler.try_group(GroupKey("bench", "urgent")).bindings == ()
        runs = [search(scheduler, who, args.budget) for _ in range(args.repeat)]
        plan = runs[0][0]
        times = [round(seconds * 1000, 1) for _, seconds, _ in runs]
        cpu_ms = statistics.median(seconds for _, _, seconds in runs) * 1000
        cost = plan.cost
        outcome = (
            f"plan: {len(plan.pods)} pods, {cost.gangs_broken} gangs broken, "
            f"top priority {cost.top_priority}"
            if plan.found and cost is not None
            else f"no plan ({plan.summary})"
        )
        print(
            f"{title}\n  {statistics.median(times):.1f} ms (runs {times}; cpu {cpu_ms:.1f} ms); "
            f"{plan.trials} trials"
            f"{' (budget spent)' if plan.exhausted else ''}; {outcome}"
        )


if __name__ == "__main__":
    main()
