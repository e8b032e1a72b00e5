"""Synthetic workloads: a pool of equal nodes and gangs arriving at random.

Gangs arrive as a Poisson process (exponential gaps at ``arrival_rate`` gangs
per second); each draws its size, per-pod cpu and memory and priority
uniformly from the given choices and its run time uniformly from a range.
The same settings and seed always give the same file.

The *offered load* printed in the file's header is the cpu-seconds the gangs
ask for over the cpu-seconds the cluster has while they arrive (arrival rate
x mean cpu-seconds per gang / cluster cpu): above 1 a backlog builds up, and
the policies' differences show.
"""

from __future__ import annotations

import math
import random
import shlex
from dataclasses import dataclass
from typing import Any

import yaml

from coscheduler.api.quantity import to_milli

__all__ = ["GeneratorSettings", "command_line", "generate", "offered_load", "render"]


@dataclass(frozen=True, slots=True)
class GeneratorSettings:
    """What to generate; every field has the CLI's default."""

    #: Nodes in the pool, and each node's allocatable.
    nodes: int = 100
    node_cpu: str = "32"
    node_memory: str = "128Gi"
    node_pods: int = 110
    #: Gangs to generate, and the choices each draws from.
    gangs: int = 500
    sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    pod_cpus: tuple[str, ...] = ("500m", "1", "2", "4")
    pod_memories: tuple[str, ...] = ("1Gi", "2Gi", "4Gi", "8Gi")
    priorities: tuple[int, ...] = (0,)
    #: minMember as a fraction of the size, rounded up (1: every pod needed).
    min_member_fraction: float = 1.0
    #: Gangs per second (Poisson arrivals).
    arrival_rate: float = 0.5
    #: Run time range, seconds (uniform).
    run_seconds_min: float = 60.0
    run_seconds_max: float = 900.0
    seed: int = 1


def generate(settings: GeneratorSettings) -> dict[str, Any]:
    """A scenario, as the plain data its YAML holds."""
    rng = random.Random(settings.seed)
    gangs = []
    now = 0.0
    width = len(str(max(settings.gangs - 1, 0)))
    for number in range(settings.gangs):
        if number:
            now += rng.expovariate(settings.arrival_rate)
        size = rng.choice(settings.sizes)
        gangs.append(
            {
                "name": f"g-{number:0{width}d}",
                "size": size,
                "minMember": max(1, math.ceil(size * settings.min_member_fraction)),
                "requests": {
                    "cpu": rng.choice(settings.pod_cpus),
                    "memory": rng.choice(settings.pod_memories),
                },
                "priority": rng.choice(settings.priorities),
                "arrivalSeconds": round(now, 3),
                "runSeconds": round(
                    rng.uniform(settings.run_seconds_min, settings.run_seconds_max), 1
                ),
            }
        )
    return {
        "cluster": {
            "nodes": [
                {
                    "name": "node",
                    "count": settings.nodes,
                    "allocatable": {
                        "cpu": settings.node_cpu,
                        "memory": settings.node_memory,
                        "pods": settings.node_pods,
                    },
                }
            ]
        },
        "workload": {"gangs": gangs},
    }


def command_line(settings: GeneratorSettings) -> str:
    """The command that generates exactly this scenario."""

    def joined(values: tuple[object, ...]) -> str:
        return ",".join(str(v) for v in values)

    return shlex.join(
        [
            "coscheduler", "simulate", "generate",
            "--nodes", str(settings.nodes),
            "--node-cpu", settings.node_cpu,
            "--node-memory", settings.node_memory,
            "--gangs", str(settings.gangs),
            "--sizes", joined(settings.sizes),
            "--pod-cpu", joined(settings.pod_cpus),
            "--pod-memory", joined(settings.pod_memories),
            "--priorities", joined(settings.priorities),
            "--min-member-fraction", f"{settings.min_member_fraction:g}",
            "--arrival-rate", f"{settings.arrival_rate:g}",
            "--run-seconds", f"{settings.run_seconds_min:g}-{settings.run_seconds_max:g}",
            "--seed", str(settings.seed),
        ]
    )  # fmt: skip


def offered_load(scenario: dict[str, Any]) -> float:
    """Cpu-seconds asked over cpu-seconds available while gangs arrive (see above)."""
    gangs = scenario["workload"]["gangs"]
    capacity = sum(
        to_milli(pool["allocatable"]["cpu"]) * pool.get("count", 1)
        for pool in scenario["cluster"]["nodes"]
    )
    asked = sum(to_milli(g["requests"]["cpu"]) * g["minMember"] * g["runSeconds"] for g in gangs)
    span = max(g["arrivalSeconds"] for g in gangs) - min(g["arrivalSeconds"] for g in gangs)
    return asked / (capacity * span) if capacity and span else math.inf


def render(scenario: dict[str, Any], command: str) -> str:
    """The scenario as YAML, one line per gang, with a header saying how it was made."""
    cluster = yaml.safe_dump({"cluster": scenario["cluster"]}, sort_keys=False)
    lines = [
        f"# Generated by: {command}",
        f"# Offered load: {offered_load(scenario):.2f}x the cluster's cpu while gangs arrive.",
        cluster.rstrip(),
        "workload:",
        "  gangs:",
    ]
    for gang in scenario["workload"]["gangs"]:
        flow = yaml.safe_dump(gang, default_flow_style=True, sort_keys=False, width=10_000)
        lines.append(f"    - {flow.strip()}")
    return "\n".join(lines) + "\n"
