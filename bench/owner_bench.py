"""What joining a gang by owner costs as pods arrive: the pod handler's ingest, no API server.

A Job's pod carries no group label; the pod handler gives it the group of its
Job by the core's owner rule (``core/owners.py``) before the core files it. This
times ``PodHandler.upsert`` (parse included, as the watch pays it) for
``--pods`` pods in Jobs of ``--job-size``, four ways:

- ``label``: pods with a group label and no owner (the way before #21);
- ``unwatched``: Job pods, Jobs not read (a ClusterRole without ``jobs``);
- ``job-plain``: Job pods, their Jobs known and not annotated (lone pods);
- ``job-gang``: Job pods, their Jobs known, annotated, their PodGroups there;

and ``flip``: the time to refile every pod of one Job of ``--job-size`` when its
annotation is added (its pods move from lone to the gang). Medians of ``--repeat``.

    .venv/bin/python bench/owner_bench.py --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from coscheduler.api.adapters import sigs
from coscheduler.core import Scheduler
from coscheduler.runtime.handlers.base import InvalidObject
from coscheduler.runtime.handlers.registry import Handlers

GANG = "scheduling.sigs.k8s.io/gang"


def job(name: str, size: int, *, annotated: bool) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"uid-{name}",
            "annotations": {GANG: "true"} if annotated else {},
        },
        "spec": {"parallelism": size, "template": {"spec": {"schedulerName": "coscheduler"}}},
    }


def pod(index: int, size: int, *, owned: bool) -> dict[str, Any]:
    name = f"job-{index // size}"
    meta: dict[str, Any] = {
        "name": f"{name}-{index % size}",
        "namespace": "bench",
        "uid": f"pod-{index}",
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    if owned:
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": f"uid-{name}"}
        meta["ownerReferences"] = [{**owner, "controller": True}]
    else:
        meta["labels"] = {"scheduling.sigs.k8s.io/pod-group": name}
    return {
        "metadata": meta,
        "spec": {
            "schedulerName": "coscheduler",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
        "status": {"phase": "Pending"},
    }


def podgroup(name: str, size: int) -> dict[str, Any]:
    meta = {"name": name, "namespace": "bench", "uid": f"pg-{name}", "generation": 1}
    return {"metadata": meta, "spec": {"minMember": size}}


class _Quiet:
    def invalid(self, obj: InvalidObject) -> None:
        pass

    def waiting(self, uid: str, waits: bool) -> None:
        pass


def state_for(case: str, pods: int, size: int) -> Handlers:
    state = Handlers.build(Scheduler(time.monotonic), complaints=_Quiet())
    state.owners.watched = case != "unwatched"
    jobs = range(pods // size)
    if case in ("job-plain", "job-gang"):
        state.jobs.replace([job(f"job-{j}", size, annotated=case == "job-gang") for j in jobs])
    if case in ("label", "job-gang"):
        state.podgroups[sigs.ADAPTER.api].replace([podgroup(f"job-{j}", size) for j in jobs])
    return state


def ingest(case: str, pods: int, size: int) -> float:
    state = state_for(case, pods, size)
    raws = [pod(i, size, owned=case != "label") for i in range(pods)]
    start = time.perf_counter()
    for raw in raws:
        state.pods.upsert(raw)
    return time.perf_counter() - start


def flip(pods: int, size: int) -> float:
    state = state_for("job-plain", pods, size)
    for i in range(pods):
        state.pods.upsert(pod(i, size, owned=True))
    start = time.perf_counter()
    state.jobs.upsert(job("job-0", size, annotated=True))
    return time.perf_counter() - start


def median(run: Callable[[], float], repeat: int) -> float:
    return statistics.median(run() for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--job-size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{args.pods} pods in Jobs of {args.job_size}, median of {args.repeat}")
    print("| case | ingest | per pod |")
    print("|---|---|---|")
    for case in ("label", "unwatched", "job-plain", "job-gang"):
        seconds = median(partial(ingest, case, args.pods, args.job_size), args.repeat)
        print(f"| {case} | {seconds * 1000:.0f} ms | {seconds / args.pods * 1e6:.1f} µs |")
    seconds = median(partial(flip, args.pods, args.job_size), args.repeat)
    print(f"| flip (one Job of {args.job_size} annotated) | {seconds * 1000:.2f} ms | |")


if __name__ == "__main__":
    main()
