"""The core at the scale suite's size, in process: 5,000 nodes, 50,000 pending pods.

Issue #28 asks for 5,000 nodes and 50,000 pending pods with gangs of 512 among them.
This builds that snapshot from raw API objects shaped like the benchmark's (the bench
suite's pods of 1 cpu on KWOK nodes of 32 cpu / 110 pods), in a process of its own, and
reports what the end-to-end run cannot separate:

- memory: resident set after parsing, after ingesting into the scheduler and at the
  end (VmRSS / VmHWM from ``/proc/self/status``; the raw objects are dropped once
  parsed, as the handlers drop them);
- time: parse, ingest, and placing every group (``next_decision`` until none is
  ready), with each decision's time by gang size: p50 / p99 / max per size, wall clock
  and CPU time (a shared machine's wall clock counts the waits for a core).

    .venv/bin/python -m bench.scale_core                      # 5,000 nodes, 50,000 pods
    .venv/bin/python -m bench.scale_core --nodes 1000 --pods 10000
    .venv/bin/python -m bench.scale_core --profile /tmp/scale.prof   # cProfile of placing
    .venv/bin/python -m bench.scale_core --list accumulate   # peak RSS of the initial list

The mix (``--mix``): equal shares of the pods in gangs of 1, 8, 64 and 512.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import platform
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

from coscheduler.api.labels import POD_GROUP_LABEL
from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.core import GroupPolicy, Scheduler, SchedulerSettings

Json = dict[str, Any]
MIX = (1, 8, 64, 512)


def proc_status() -> dict[str, int]:
    """VmRSS and VmHWM of this process, in bytes."""
    values = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) * 1024
    return values


def node_object(index: int) -> Json:
    """A node as KWOK's would be listed: the bench's shape, its labels and conditions."""
    name = f"kwok-node-{index}"
    resources = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {
        "metadata": {
            "name": name,
            "uid": f"n-{index}",
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_object(gang: str, index: int, created: int) -> Json:
    """A pending pod as the bench creates it (1 cpu, 1Gi), with the fields the API adds."""
    name = f"{gang}-{index}"
    return {
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"u-{name}",
            "resourceVersion": str(1000 + created),
            "labels": {POD_GROUP_LABEL: gang, "bench.coscheduler.dev/gang": gang},
            "creationTimestamp": f"2026-01-01T{created // 3600 % 24:02d}:"
            f"{created // 60 % 60:02d}:{created % 60:02d}Z",
        },
        "spec": {
            "schedulerName": "coscheduler",
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "automountServiceAccountToken": False,
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "containers": [
                {
                    "name": "main",
                    "image": "registry.invalid/bench:1",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                }
            ],
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }  # fmt: skip


def listed_pod(gang: str, index: int, created: int) -> Json:
    """:func:`pod_object` as a list answer carries it: uid, managedFields, defaults."""
    pod = pod_object(gang, index, created)
    pod["metadata"]["managedFields"] = [
        {
            "manager": "python-aiohttp",
            "operation": "Update",
            "apiVersion": "v1",
            "time": pod["metadata"]["creationTimestamp"],
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:bench.coscheduler.dev/gang": {},
                                            f"f:{POD_GROUP_LABEL}": {}}},
                "f:spec": {
                    "f:automountServiceAccountToken": {},
                    "f:containers": {'k:{"name":"main"}': {
                        ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                        "f:resources": {".": {}, "f:requests": {".": {}, "f:cpu": {},
                                                                "f:memory": {}}},
                        "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {},
                    }},
                    "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {},
                    "f:schedulerName": {}, "f:securityContext": {},
                    "f:terminationGracePeriodSeconds": {},
                },
            },
        }
    ]  # fmt: skip
    spec = pod["spec"]
    spec["containers"][0].update(
        imagePullPolicy="IfNotPresent",
        terminationMessagePath="/dev/termination-log",
        terminationMessagePolicy="File",
    )
    spec.update(dnsPolicy="ClusterFirst", securityContext={})
    return pod


def list_peak(pods: int, per_page: bool) -> Json:
    """Peak RSS of listing ``pods`` pending pods in pages of 500 and parsing them.

    As the handlers do (``per_page`` False): every page's items kept until the last
    page, then parsed; or (True) each page parsed as it comes and its raw items dropped.
    """
    names = [(f"g{size}-{i:05d}", size, i) for i, size in enumerate(gang_sizes(pods, MIX))]
    members = [(name, j, i) for name, size, i in names for j in range(size)]
    base = proc_status()
    started = time.perf_counter()
    parsed: list[PodInfo] = []
    kept: list[Json] = []
    for start in range(0, len(members), 500):
        # The page as the API server sends it: bytes, decoded here as the client does.
        page = orjson.dumps({"items": [listed_pod(*m) for m in members[start : start + 500]]})
        items = orjson.loads(page)["items"]
        del page
        if per_page:
            parsed += [PodInfo.from_object(raw) for raw in items]
        else:
            kept += items
    parsed += [PodInfo.from_object(raw) for raw in kept]
    kept.clear()
    elapsed = time.perf_counter() - started
    gc.collect()
    status = proc_status()
    return {
        "pods": len(parsed),
        "seconds": elapsed,
        "base_mib": base["VmRSS"] / 2**20,
        "end_mib": status["VmRSS"] / 2**20,
        "hwm_mib": status["VmHWM"] / 2**20,
        "bytes_per_raw_pod": len(orjson.dumps(listed_pod("g1-00000", 0, 0))),
    }


def gang_sizes(pods: int, mix: tuple[int, ...]) -> list[int]:
    """Gang sizes with an equal share of ``pods`` per size, interleaved in creation order."""
    share = pods // len(mix)
    counts = [max(1, share // size) for size in mix]
    sizes: list[int] = []
    for round_ in range(max(counts)):
        sizes += [size for size, count in zip(mix, counts, strict=True) if round_ < count]
    # What the shares' rounding leaves, as plain pods (gangs of one).
    return sizes + [1] * max(0, pods - sum(sizes))


def run(nodes: int, pods: int, mix: tuple[int, ...], profile: Path | None) -> Json:
    gc.collect()
    base = proc_status()["VmRSS"]
    started = time.perf_counter()
    node_infos = [NodeInfo.from_object(node_object(i)) for i in range(nodes)]
    groups: list[tuple[GroupPolicy, list[PodInfo]]] = []
    for index, size in enumerate(gang_sizes(pods, mix)):
        name = f"g{size}-{index:05d}"
        policy = GroupPolicy(namespace="bench", name=name, min_member=size, created=float(index))
        members = [PodInfo.from_object(pod_object(name, i, index)) for i in range(size)]
        groups.append((policy, members))
    parse = time.perf_counter() - started
    gc.collect()
    parsed = proc_status()["VmRSS"]

    scheduler = Scheduler(lambda: 0.0, SchedulerSettings())
    started = time.perf_counter()
    for node in node_infos:
        scheduler.upsert_node(node)
    for policy, members in groups:
        scheduler.upsert_group(policy)
        for pod in members:
            scheduler.upsert_pod(pod)
    ingest = time.perf_counter() - started
    size_of = {policy.key: policy.min_member for policy, _ in groups}
    del node_infos, groups
    gc.collect()
    ingested = proc_status()["VmRSS"]

    by_size: dict[int, list[float]] = defaultdict(list)
    cpu_by_size: dict[int, list[float]] = defaultdict(list)
    bound = decisions = 0
    digest = hashlib.sha256()
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    started = time.perf_counter()
    cpu_started = time.process_time()
    while True:
        before, cpu_before = time.perf_counter(), time.process_time()
        decision = scheduler.next_decision()
        if decision is None:
            break
        size = size_of.get(decision.group, 0)
        by_size[size].append(time.perf_counter() - before)
        cpu_by_size[size].append(time.process_time() - cpu_before)
        decisions += 1
        bound += len(decision.bindings)
        for binding in decision.bindings:
            digest.update(f"{binding!r}\n".encode())
    place = time.perf_counter() - started
    place_cpu = time.process_time() - cpu_started
    if profiler and profile:
        profiler.disable()
        profiler.dump_stats(profile)
    status = proc_status()
    return {
        "nodes": nodes,
        "pods": sum(len(v) * k for k, v in by_size.items()),
        "bound": bound,
        "decisions": decisions,
        "parse_s": parse,
        "ingest_s": ingest,
        "place_s": place,
        "place_cpu_s": place_cpu,
        "rss_parsed_mib": (parsed - base) / 2**20,
        "rss_ingested_mib": (ingested - base) / 2**20,
        "rss_end_mib": status["VmRSS"] / 2**20,
        "hwm_mib": status["VmHWM"] / 2**20,
        "digest": digest.hexdigest()[:16],
        "decision_ms": {size: percentiles(times) for size, times in sorted(by_size.items())},
        "decision_cpu_ms": {
            size: percentiles(times) for size, times in sorted(cpu_by_size.items())
        },
    }


def percentiles(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered) * 1000, 3),
        "p99": round(at(0.99), 3),
        "max": round(ordered[-1] * 1000, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--mix", default=",".join(map(str, MIX)), help="gang sizes, equal shares")
    parser.add_argument("--profile", type=Path, default=None, help="cProfile of placing, to FILE")
    parser.add_argument(
        "--list",
        choices=["accumulate", "per-page"],
        default=None,
        help="only the list: peak RSS of listing the pods in pages of 500 and parsing them, "
        "every page kept until the last (as the handlers do) or parsed page by page",
    )
    args = parser.parse_args()
    if args.list:
        listed = list_peak(args.pods, per_page=args.list == "per-page")
        print(
            f"list of {listed['pods']:,} pods ({listed['bytes_per_raw_pod']:,} bytes of JSON "
            f"each), {args.list}: {listed['seconds']:.1f} s; RSS {listed['base_mib']:.0f} MiB "
            f"before, {listed['end_mib']:.0f} MiB after, peak (VmHWM) {listed['hwm_mib']:.0f} MiB"
        )
        return
    mix = tuple(int(x) for x in args.mix.split(","))
    result = run(args.nodes, args.pods, mix, args.profile)
    print(
        f"python {platform.python_version()}: {result['nodes']:,} nodes, "
        f"{result['pods']:,} pending pods in gangs of {'/'.join(map(str, mix))}\n"
        f"  parse {result['parse_s']:.2f} s, ingest {result['ingest_s']:.2f} s, "
        f"place {result['place_s']:.2f} s (CPU {result['place_cpu_s']:.2f} s): "
        f"{result['bound']:,} bound in {result['decisions']:,} decisions, "
        f"{result['bound'] / result['place_s']:,.0f} placements/s\n"
        f"  RSS over the bare process: parsed {result['rss_parsed_mib']:.0f} MiB, "
        f"ingested {result['rss_ingested_mib']:.0f} MiB; "
        f"end {result['rss_end_mib']:.0f} MiB, peak (VmHWM) {result['hwm_mib']:.0f} MiB\n"
        f"  bindings digest {result['digest']} (equal digests: the same placements)"
    )
    # CPU time as well: on a shared machine the wall clock counts the waits for a core.
    for size, figures in result["decision_ms"].items():
        cpu = result["decision_cpu_ms"][size]
        print(
            f"  gang of {size:>3}: {figures['n']:>6} decisions, wall p50 {figures['p50']:.2f} "
            f"p99 {figures['p99']:.2f} max {figures['max']:.2f} ms; CPU p50 {cpu['p50']:.2f} "
            f"p99 {cpu['p99']:.2f} max {cpu['max']:.2f} ms"
        )


if __name__ == "__main__":
    main()
