"""Benchmark of the core placing gangs with DRA claims: no API server, no I/O.

1,000 nodes with 8 GPUs each (a ResourceSlice per node: model and NVLink
domain attributes) and a DeviceClass with a CEL selector; gangs of 4 members,
each claiming 2 GPUs from one template (its claim made, as
kube-controller-manager would, before the attempt), with ``matchAttribute``
on the NVLink domain. Times the scheduling loop alone: ``next_decision``
until the queue is empty, after the objects are parsed and fed. Placements
per second = pods bound / place time, on one core, by the wall clock and by
the process's CPU time (steadier on a shared machine). The first evaluation
of a selector on a device is in the time (verdicts are then cached per
device). ``bench/dra_ab.py`` runs it on two trees, interleaved.

    .venv/bin/python bench/dra_bench.py --nodes 1000 --gangs 1800 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from coscheduler.api.devices import (
    DeviceClassInfo,
    ResourceClaimInfo,
    ResourceClaimTemplateInfo,
    ResourceSliceInfo,
)
from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.core.group import GroupPolicy
from coscheduler.core.scheduler import Scheduler

DRIVER = "gpu.bench.example.com"


def _slice(node: str, per_node: int) -> dict[str, Any]:
    devices = [
        {
            "name": f"gpu-{index}",
            "attributes": {
                "model": {"string": "H100"},
                "nvlink": {"string": f"{node}-nvl{index * 2 // per_node}"},
            },
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for index in range(per_node)
    ]
    return {
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _claim_spec() -> dict[str, Any]:
    return {
        "devices": {
            "requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu", "count": 2}}],
            "constraints": [{"matchAttribute": f"{DRIVER}/nvlink"}],
        }
    }


def build(nodes: int, per_node: int, gangs: int, size: int) -> Scheduler:
    clock = [0.0]
    scheduler = Scheduler(lambda: clock[0])
    for index in range(nodes):
        name = f"n{index:05}"
        raw = {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"}},
        }
        scheduler.upsert_node(NodeInfo.from_object(raw))
        scheduler.upsert_resource_slice(ResourceSliceInfo.from_object(_slice(name, per_node)))
    selector = f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].model == "H100"'
    scheduler.upsert_device_class(
        DeviceClassInfo.from_object(
            {
                "metadata": {"name": "gpu"},
                "spec": {"selectors": [{"cel": {"expression": selector}}]},
            }
        )
    )
    template = {"metadata": {"name": "pair", "namespace": "bench"}, "spec": {"spec": _claim_spec()}}
    scheduler.upsert_claim_template(ResourceClaimTemplateInfo.from_object(template))
    for gang in range(gangs):
        group = f"g{gang:05}"
        scheduler.upsert_group(
            GroupPolicy(queue="default", namespace="bench", name=group, min_member=size)
        )
        for member in range(size):
            name = f"{group}-{member}"
            claim = {
                "metadata": {"name": name, "namespace": "bench", "uid": f"c-{name}"},
                "spec": _claim_spec(),
            }
            scheduler.upsert_resource_claim(ResourceClaimInfo.from_object(claim))
            raw = {
                "metadata": {
                    "name": name,
                    "namespace": "bench",
                    "uid": f"u-{name}",
                    "labels": {"scheduling.sigs.k8s.io/pod-group": group},
                },
                "spec": {
                    "schedulerName": "coscheduler",
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                    "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "pair"}],
                },
                "status": {"resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": name}]},
            }
            scheduler.upsert_pod(PodInfo.from_object(raw))
    return scheduler


def run(nodes: int, per_node: int, gangs: int, size: int) -> tuple[int, float, float]:
    """Pods bound, and the place time in seconds: wall, CPU."""
    scheduler = build(nodes, per_node, gangs, size)
    bound = 0
    start, cpu = time.perf_counter(), time.process_time()
    while (decision := scheduler.next_decision()) is not None:
        bound += len(decision.bindings)
    return bound, time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--per-node", type=int, default=8)
    parser.add_argument("--gangs", type=int, default=1800)
    parser.add_argument("--size", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rates, cpu_rates = [], []
    for _ in range(args.repeat):
        bound, seconds, cpu = run(args.nodes, args.per_node, args.gangs, args.size)
        rates.append(bound / seconds)
        cpu_rates.append(bound / cpu)
        print(
            f"{bound} placements in {seconds:.2f} s: {bound / seconds:,.0f} placements/s "
            f"({bound / cpu:,.0f} per CPU second)"
        )
    print(
        f"median: {statistics.median(rates):,.0f} placements/s "
        f"({statistics.median(cpu_rates):,.0f} per CPU second)"
    )


if __name__ == "__main__":
    main()
