"""Benchmark of the pure scheduling core: no API server, no I/O.

Two cases, as the issue asks:

- ``large``: a 5,000-node snapshot placing 10,000 pods in gangs of 8..512;
- ``gang512``: a 100-node snapshot placing one 512-pod gang.

Nodes sit in racks of 100 (label ``rack``), so 50 racks at 5,000 nodes.
``--queues N`` runs the first case twice per round, interleaved: without
queues, and with every gang in one of N Queues (weights 1..4; every third
queue with a nominal and a max that do not bind), then prints both medians
and their ratio: what fair sharing costs the loop.

``--rules`` gives every pod of a gang the same inter-pod rule: ``none`` (the
plain pods of the first cases), ``one-per-node`` (required anti-affinity to
its own gang by hostname), ``same-rack`` (required affinity to its own gang
by rack: the whole gang in one rack) or ``group-rack`` (no pod rule; the
PodGroup's ``spec.topology.required: rack``).

Each case builds its pods and nodes as raw API objects, parses them (timed
apart as "ingest"), then times the scheduling loop alone: ``next_decision``
until the queue is empty ("place"). Figures are medians over ``--repeat``
runs. Placements per second = pods bound / place time, on one core (the core
is single-threaded).

    .venv/bin/python bench/core_bench.py --repeat 5
    .venv/bin/python bench/core_bench.py --repeat 7 --queues 20
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from coscheduler.api.labels import POD_GROUP_LABEL
from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.core import GroupPolicy, Scheduler, SchedulerSettings, Strategy
from coscheduler.core.quota import QueuePolicy

#: (cpu, memory, labels, taints) of each kind of node.
POOLS: tuple[tuple[str, str, dict[str, str], list[dict[str, str]]], ...] = (
    ("32", "128Gi", {"pool": "cpu"}, []),
    ("64", "256Gi", {"pool": "big"}, []),
    ("16", "64Gi", {"pool": "small"}, []),
    ("32", "128Gi", {"pool": "gpu"}, [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
)


def make_nodes(count: int, rng: random.Random) -> list[NodeInfo]:
    nodes = []
    for i in range(count):
        cpu, memory, labels, taints = POOLS[rng.randrange(len(POOLS))]
        name = f"node-{i:05d}"
        nodes.append(
            NodeInfo.from_object(
                {
                    "metadata": {
                        "name": name,
                        "labels": {
                            **labels,
                            "kubernetes.io/hostname": name,
                            "rack": f"r{i // RACK_SIZE:02d}",
                        },
                    },
                    "spec": {"taints": taints},
                    "status": {
                        "allocatable": {
                            "cpu": cpu,
                            "memory": memory,
                            "pods": "110",
                            "ephemeral-storage": "100Gi",
                        }
                    },
                }
            )
        )
    return nodes


#: Nodes per rack.
RACK_SIZE = 100
#: The topology key of each ``--rules`` choice (None: no rule).
RULES: dict[str, tuple[str, str] | None] = {
    "none": None,
    "one-per-node": ("podAntiAffinity", "kubernetes.io/hostname"),
    "same-rack": ("podAffinity", "rack"),
    "group-rack": None,
}


def _rule(rules: str, group: str) -> dict[str, Any]:
    chosen = RULES[rules]
    if chosen is None:
        return {}
    kind, key = chosen
    term = {"labelSelector": {"matchLabels": {POD_GROUP_LABEL: group}}, "topologyKey": key}
    return {"affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


def make_pod(
    name: str, group: str, cpu: str, memory: str, created: int, rules: str = "none"
) -> PodInfo:
    return PodInfo.from_object(
        {
            "metadata": {
                "name": name,
                "namespace": "bench",
                "uid": f"u-{name}",
                "labels": {POD_GROUP_LABEL: group},
                "creationTimestamp": f"2024-01-01T{created // 3600:02d}:"
                f"{created // 60 % 60:02d}:{created % 60:02d}Z",
            },
            "spec": {
                "schedulerName": "coscheduler",
                "containers": [
                    {"name": "main", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
                ],
                **_rule(rules, group),
            },
            "status": {"phase": "Pending"},
        }
    )


def make_queues(count: int) -> list[QueuePolicy]:
    """``count`` queues open to namespace ``bench``, weights 1..4; every third one with a
    nominal and a max far above what it can use (checked on every admission, never binding)."""
    queues = []
    for i in range(count):
        quota: dict[str, int] = {}
        if i % 3 == 0:
            # 100,000 cpu and 1 PiB of memory, in the core's integers (millicores, bytes).
            quota = {"cpu": 100_000_000, "memory": 2**50}
        queues.append(
            QueuePolicy(
                f"q{i:02d}",
                nominal=quota,
                max={r: 2 * a for r, a in quota.items()},
                weight=1 + i % 4,
                namespaces=frozenset({"bench"}),
            )
        )
    return queues


def make_gangs(
    total: int, low: int, high: int, rng: random.Random, rules: str = "none", queues: int = 0
) -> list[tuple[GroupPolicy, list[PodInfo]]]:
    gangs = []
    made = 0
    index = 0
    while made < total:
        size = min(rng.randint(low, high), total - made)
        name = f"gang-{index:04d}"
        cpu = rng.choice(["500m", "1", "2", "4"])
        memory = rng.choice(["1Gi", "2Gi", "4Gi", "8Gi"])
        policy = GroupPolicy(
            namespace="bench",
            name=name,
            min_member=size,
            created=float(index),
            priority=rng.choice([0, 0, 0, 10]),
        )
        if queues:
            policy = dataclasses.replace(policy, queue=f"q{index % queues:02d}")
        if rules == "group-rack":
            # Set apart, so this script also runs against trees older than the field.
            policy = dataclasses.replace(policy, topology_levels=("rack",))
        pods = [make_pod(f"{name}-{i:03d}", name, cpu, memory, index, rules) for i in range(size)]
        gangs.append((policy, pods))
        made += size
        index += 1
    return gangs


def run_case(
    nodes: int,
    pods: int,
    low: int,
    high: int,
    seed: int,
    strategy: Strategy,
    rules: str = "none",
    queues: int = 0,
) -> dict[str, Any]:
    rng = random.Random(seed)
    started = time.perf_counter()
    node_infos = make_nodes(nodes, rng)
    gangs = make_gangs(pods, low, high, rng, rules, queues)
    parsed = time.perf_counter() - started

    scheduler = Scheduler(lambda: 0.0, SchedulerSettings(strategy=strategy))
    started = time.perf_counter()
    for queue in make_queues(queues):
        scheduler.upsert_queue(queue)
    for node in node_infos:
        scheduler.upsert_node(node)
    for policy, members in gangs:
        scheduler.upsert_group(policy)
        for pod in members:
            scheduler.upsert_pod(pod)
    ingest = time.perf_counter() - started

    started = time.perf_counter()
    cpu_started = time.process_time()
    bound = 0
    decisions = 0
    while (decision := scheduler.next_decision()) is not None:
        decisions += 1
        bound += len(decision.bindings)
    place = time.perf_counter() - started
    place_cpu = time.process_time() - cpu_started
    return {
        "parse": parsed,
        "ingest": ingest,
        "place": place,
        "place_cpu": place_cpu,
        "bound": bound,
        "decisions": decisions,
        "gangs": len(gangs),
    }


def median_of(repeat: int, case: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    runs = [case() for _ in range(repeat)]
    result = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    result["place_runs"] = [round(run["place"] * 1000, 1) for run in runs]
    result["place_cpu_runs"] = [round(run["place_cpu"] * 1000, 1) for run in runs]
    return result


def report(title: str, result: dict[str, Any]) -> float:
    """Print one case's medians; return its placements per CPU-second (a shared machine's
    noise stretches the wall-clock time while the process waits for a core, not its CPU time)."""
    rate = result["bound"] / result["place"] if result["place"] else float("inf")
    per_cpu = result["bound"] / result["place_cpu"] if result["place_cpu"] else float("inf")
    print(
        f"{title}\n  bound {result['bound']:.0f} pods in {result['decisions']:.0f} "
        f"decisions ({result['gangs']:.0f} gangs); place {result['place'] * 1000:.1f} ms "
        f"(runs {result['place_runs']}) = {rate:,.0f} placements/s; "
        f"ingest {result['ingest'] * 1000:.1f} ms; parse {result['parse'] * 1000:.1f} ms\n"
        f"  place CPU time {result['place_cpu'] * 1000:.1f} ms "
        f"(runs {result['place_cpu_runs']}) = {per_cpu:,.0f} placements per CPU-second"
    )
    return per_cpu


def compare_queues(repeat: int, queues: int, strategy: Strategy, rules: str) -> None:
    """Each case without and with queues, interleaved round by round (alternating which
    goes first), so that a noisy neighbour weighs on both alike."""
    shapes = {
        "5,000 nodes, 10,000 pods in gangs of 8..512": (5000, 10000, 8, 512, 1),
        "5,000 nodes, 10,000 pods in gangs of 8..64": (5000, 10000, 8, 64, 3),
    }
    for title, (nodes, pods, low, high, seed) in shapes.items():
        runs: dict[int, list[dict[str, Any]]] = {0: [], queues: []}
        for round_ in range(repeat):
            order = (0, queues) if round_ % 2 == 0 else (queues, 0)
            for count in order:
                runs[count].append(run_case(nodes, pods, low, high, seed, strategy, rules, count))
        rates = {}
        for count, results in runs.items():
            median = {key: statistics.median(r[key] for r in results) for key in results[0]}
            median["place_runs"] = [round(r["place"] * 1000, 1) for r in results]
            median["place_cpu_runs"] = [round(r["place_cpu"] * 1000, 1) for r in results]
            label = f"{title}, {f'{count} queues' if count else 'no queues'}"
            rates[count] = report(label, median)
        print(
            f"  with / without queues (placements per CPU-second): {rates[queues] / rates[0]:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--strategy", choices=[s.name for s in Strategy], default=Strategy.MOST_ALLOCATED.name
    )
    parser.add_argument("--rules", choices=list(RULES), default="none")
    parser.add_argument(
        "--queues", type=int, default=0, help="compare with gangs spread over this many queues"
    )
    args = parser.parse_args()
    strategy = Strategy[args.strategy]
    rules = args.rules
    print(
        f"python {platform.python_version()} on {platform.machine()}, "
        f"strategy {strategy.value}, rules {rules}, median of {args.repeat}"
    )
    if args.queues:
        compare_queues(args.repeat, args.queues, strategy, rules)
        return
    cases = {
        "large: 5,000 nodes, 10,000 pods in gangs of 8..512": lambda: run_case(
            5000, 10000, 8, 512, 1, strategy, rules
        ),
        "gang512: 100 nodes, one 512-pod gang": lambda: run_case(
            100, 512, 512, 512, 2, strategy, rules
        ),
    }
    for title, case in cases.items():
        report(title, median_of(args.repeat, case))


if __name__ == "__main__":
    main()
