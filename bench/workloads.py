"""The workloads: what is submitted, how it is measured, in one trial on a fresh cluster.

A trial is one peer, one regime (client QPS/burst), one workload on a control plane of
its own (started, filled with KWOK nodes, stopped afterwards), so that every peer finds
the same empty cluster and no peer's leftovers weigh on the next.

- throughput: every group object and pod is created first, then the peer is started; the
  figures are its bind rate (first binding to last) and the time from its start to all
  bound (which includes its own start-up: list and watch of nodes and pods).
- latency: the peer runs first; gangs arrive one at a time, each once the previous one is
  bound; per gang, the time from its last member's creation to its minMember-th binding.
- contention: the peer runs first; Jobs whose total demand is at least twice the cluster
  are all submitted at once, each pod finishing (KWOK) a set time after it runs.
- queue-throughput: throughput with every group in one of N queues (0: none), no quota
  binding: what fair sharing costs end to end.
- fairness: contention between tenants (namespaces), each with a backlog larger than the
  cluster and an intended share; the figures add each tenant's share over time.
- overhead-throughput, overhead-contention: throughput and contention under kinds of their
  own, for ours with preemption on and off (issue #18).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from typing import Any, ClassVar

from bench import analysis, fairness, submit
from bench.analysis import GangInfo, NodeCapacity
from bench.kube import Kube
from bench.observe import Recorder, Sampler
from bench.peers import Gang, Peer, PeerContext, Share
from bench.profiling import start_profiler, stop_profiler
from bench.progress import Progress
from coscheduler.api.quantity import float_quantity

Json = dict[str, Any]


@dataclass(frozen=True)
class Regime:
    name: str
    qps: float
    burst: int


REGIMES = {
    "default": Regime("default", 50, 100),
    "high": Regime("high", 1000, 2000),
}


@dataclass(frozen=True)
class NodeShape:
    count: int
    cpu: str = "32"
    memory: str = "128Gi"
    pods: int = 110

    @property
    def cpu_cores(self) -> float:
        return float_quantity(self.cpu)


@dataclass
class TrialRun:
    """What a workload drives in one trial: the cluster, the peer, and what is measured."""

    kube: Kube
    recorder: Recorder
    peer: Peer
    ctx: PeerContext
    ns: str
    progress: Progress
    regime: Regime
    nodes: dict[str, NodeCapacity]
    infos: dict[str, GangInfo]
    sampler: Sampler | None = None
    before: dict[tuple[str, str, str, str], float] = field(default_factory=dict)

    def start_peer(self) -> None:
        self.peer.start(self.ctx)
        self.sampler = Sampler({p.name: p.record.pid for p in self.peer.processes})
        self.sampler.start()

    async def count_requests_from_now(self) -> None:
        self.before = analysis.parse_request_totals(await self.kube.text("/metrics"))


@dataclass
class Workload:
    """What is submitted and measured; each kind drives its own trial (:meth:`drive`)."""

    kind: ClassVar[str]
    label: str
    nodes: NodeShape
    gangs: list[Gang]
    timeout_seconds: float
    params: Json = field(default_factory=dict)
    shares: list[Share] = field(default_factory=list)
    """The tenants' shares, created (in each peer's terms) before anything else."""

    @property
    def namespaces(self) -> set[str]:
        """The namespaces of its gangs beside the trial's own."""
        return {g.namespace for g in self.gangs if g.namespace is not None}

    @property
    def total_pods(self) -> int:
        return sum(g.size for g in self.gangs)

    @property
    def pod_cpu(self) -> float | None:
        """The cpu every pod asks, when all ask the same (cpu-seconds follow pod-seconds)."""
        return None

    async def drive(self, run: TrialRun) -> Json:
        """Start the peer, submit the work, wait for it; the workload's own figures."""
        raise NotImplementedError


@dataclass
class Throughput(Workload):
    """Every group object and pod first, then the peer: its rate from start to all bound."""

    kind: ClassVar[str] = "throughput"

    async def drive(self, run: TrialRun) -> Json:
        total = self.total_pods
        run.progress.status(f"creating {total} pods")
        await submit.create_shares(run.kube, run.peer, self.shares)
        await submit.create_group_objects(run.kube, run.peer, run.ns, self.gangs)
        await submit.create_pods(run.kube, run.recorder, run.peer, run.ns, self.gangs)
        await run.count_requests_from_now()
        started = run.recorder.now()
        run.start_peer()
        profiler = await start_profiler(run.ctx, run.peer)
        await submit.wait_progress(
            run.recorder,
            run.progress,
            run.peer,
            total,
            self.timeout_seconds,
            lambda r: r.bound_count >= total,
            lambda r: r.bound_count,
        )
        figures = analysis.throughput_figures(run.recorder, started)
        stop_profiler(profiler)
        return figures


@dataclass
class Scale(Throughput):
    """Throughput as the cluster grows: its own table, one trial per node count."""

    kind: ClassVar[str] = "scale"


@dataclass
class QueueThroughput(Throughput):
    """Throughput with the groups spread over queues (``params["queues"]``; 0: none)."""

    kind: ClassVar[str] = "queue-throughput"


@dataclass
class OverheadThroughput(Throughput):
    """Throughput as a kind of its own: the preemption-overhead suite's (ours, on and off)."""

    kind: ClassVar[str] = "overhead-throughput"


@dataclass
class Latency(Workload):
    """The peer first; gangs one at a time, each once the previous one is bound."""

    kind: ClassVar[str] = "latency"

    async def drive(self, run: TrialRun) -> Json:
        figures = await _start_and_probe(run)
        await self._one_at_a_time(run)
        latencies = analysis.gang_latencies(run.recorder, submit.gang_infos(self.gangs))
        figures.update(_latency_figures(latencies, self.gangs))
        return figures

    async def _one_at_a_time(self, run: TrialRun) -> None:
        deadline = time.monotonic() + self.timeout_seconds
        for index, gang in enumerate(self.gangs):
            await submit.create_group_objects(run.kube, run.peer, run.ns, [gang])
            await submit.create_pods(run.kube, run.recorder, run.peer, run.ns, [gang])
            names = [f"{gang.name}-{i}" for i in range(gang.size)]

            def bound(r: Recorder, names: list[str] = names, need: int = gang.min_member) -> bool:
                return sum(1 for n in names if n in r.pods and r.pods[n].bound is not None) >= need

            remaining = deadline - time.monotonic()
            if remaining <= 0 or not await run.recorder.wait(bound, within=remaining, poll=0.05):
                raise TimeoutError(f"gang {gang.name} not bound within the workload's time limit")
            for process in run.peer.processes:
                process.ensure_running()
            run.progress.update(index + 1, len(self.gangs), "gangs bound")
            await asyncio.sleep(0.2)


@dataclass
class Contention(Workload):
    """The peer first; Jobs of at least twice the cluster's demand, all at once."""

    kind: ClassVar[str] = "contention"

    @property
    def pod_cpu(self) -> float | None:
        return float_quantity(self.gangs[0].cpu) if self.gangs else None

    async def drive(self, run: TrialRun) -> Json:
        figures = await _start_and_probe(run)
        submitted = await submit.submit_jobs(
            run.kube, run.recorder, run.peer, run.ns, self.gangs, run.progress
        )
        total = self.total_pods

        def finished(r: Recorder) -> int:
            return sum(1 for p in r.pods.values() if p.finished is not None and p.gang != "probe")

        await submit.wait_progress(
            run.recorder, run.progress, run.peer, total, self.timeout_seconds,
            lambda r: finished(r) >= total, finished, what="finished",
        )  # fmt: skip
        capacity = sum(n.cpu for n in run.nodes.values())
        figures.update(
            analysis.contention_figures(
                run.recorder, submit.gang_infos(self.gangs), submitted, capacity,
                qps=run.regime.qps,
            )
        )  # fmt: skip
        return figures


@dataclass
class Fairness(Contention):
    """Contention between tenants with intended shares: who gets how much, over time."""

    kind: ClassVar[str] = "fairness"

    async def drive(self, run: TrialRun) -> Json:
        run.ctx.capacity_scheduling = True
        await submit.create_shares(run.kube, run.peer, self.shares)
        figures = await super().drive(run)
        capacity = sum(n.cpu for n in run.nodes.values())
        total = sum(s.weight for s in self.shares)
        intended = {s.namespace: s.weight / total for s in self.shares}
        warmup = float(self.params["run_seconds"])
        figures.update(fairness.share_figures(run.recorder, intended, capacity, warmup=warmup))
        return figures


@dataclass
class OverheadContention(Contention):
    """Contention as a kind of its own: the preemption-overhead suite's (ours, on and off)."""

    kind: ClassVar[str] = "overhead-contention"


async def _start_and_probe(run: TrialRun) -> Json:
    """Start the peer and wait until it binds a probe pod: it is serving."""
    run.progress.status("starting the peer")
    run.start_peer()
    ready = await submit.wait_peer_ready(run.kube, run.recorder, run.peer, run.ns, within=120)
    run.infos["probe"] = GangInfo("probe", 1, 1)
    await run.count_requests_from_now()
    return {"ready_after_s": round(ready, 2)}


def _latency_figures(latencies: dict[str, float], gangs: list[Gang]) -> Json:
    figures: Json = {"gangs_measured": len(latencies)}
    values = list(latencies.values())
    figures["p50_s"] = _round(analysis.percentile(values, 50))
    figures["p99_s"] = _round(analysis.percentile(values, 99))
    by_size: dict[int, list[float]] = {}
    for gang in gangs:
        if gang.name in latencies:
            by_size.setdefault(gang.size, []).append(latencies[gang.name])
    figures["by_size"] = {
        str(size): {"p50_s": _round(analysis.percentile(v, 50)),
                    "p99_s": _round(analysis.percentile(v, 99)), "n": len(v)}
        for size, v in sorted(by_size.items())
    }  # fmt: skip
    figures["latencies"] = {k: round(v, 4) for k, v in latencies.items()}
    return figures


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


# --- the workloads the suites use ------------------------------------------------------------


def throughput(pods: int, gang_size: int, nodes: int, *, timeout: float = 900) -> Throughput:
    count = max(1, pods // gang_size)
    gangs = [Gang(f"g{gang_size}-{i:05d}", gang_size, gang_size) for i in range(count)]
    shape = NodeShape(nodes)
    cpu = count * gang_size * float_quantity(gangs[0].cpu)
    if cpu > nodes * shape.cpu_cores or count * gang_size > nodes * shape.pods:
        # Throughput waits for every pod: one that cannot fit only runs out the clock.
        raise ValueError(f"{count * gang_size} pods of {gangs[0].cpu} cpu do not fit {nodes} nodes")
    return Throughput(
        f"{count * gang_size} pods in gangs of {gang_size}, {nodes} nodes",
        shape, gangs, timeout,
        {"pods": count * gang_size, "gang_size": gang_size, "nodes": nodes},
    )  # fmt: skip


def scale(pods: int, gang_size: int, nodes: int) -> Scale:
    base = throughput(pods, gang_size, nodes)
    return Scale(base.label, base.nodes, base.gangs, base.timeout_seconds, base.params)


def latency(rounds: int, sizes: tuple[int, ...], nodes: int, *, timeout: float = 900) -> Latency:
    gangs = [Gang(f"l{size}-{r:04d}", size, size) for r in range(rounds) for size in sizes]
    return Latency(
        f"{len(gangs)} gangs of {'/'.join(map(str, sizes))} one at a time, "
        f"{nodes} nodes", NodeShape(nodes), gangs, timeout,
        {"gangs": len(gangs), "sizes": list(sizes), "nodes": nodes},
    )  # fmt: skip


def contention(
    nodes: int, node_cpu: int, sizes: tuple[int, ...], demand_factor: float,
    pod_cpu: int, run_seconds: float, *, seed: int = 7, timeout: float = 900,
) -> Contention:  # fmt: skip
    rng = random.Random(seed)
    capacity = nodes * node_cpu
    gangs: list[Gang] = []
    demand = 0
    while demand < demand_factor * capacity:
        size = rng.choice(sizes)
        gangs.append(
            Gang(f"j{len(gangs):04d}-{size}", size, size, cpu=str(pod_cpu), memory="1Gi",
                 run_seconds=run_seconds, job=True)
        )  # fmt: skip
        demand += size * pod_cpu
    return Contention(
        f"{len(gangs)} Jobs of {'/'.join(map(str, sizes))} pods x {pod_cpu} cpu, "
        f"demand {demand / capacity:.1f}x of {nodes} nodes x {node_cpu} cpu, {run_seconds:g}s each",
        NodeShape(nodes, cpu=str(node_cpu), memory=f"{node_cpu * 4}Gi"), gangs, timeout,
        {"nodes": nodes, "node_cpu": node_cpu, "sizes": list(sizes), "jobs": len(gangs),
         "demand_over_capacity": round(demand / capacity, 2), "pod_cpu": pod_cpu,
         "run_seconds": run_seconds, "seed": seed},
    )  # fmt: skip


def queue_throughput(pods: int, gang_size: int, nodes: int, queues: int) -> QueueThroughput:
    """Throughput with each group in queue ``q<i mod queues>`` (weights 1..4, no quota)."""
    base = throughput(pods, gang_size, nodes)
    gangs = base.gangs
    shares: list[Share] = []
    if queues:
        shares = [Share(f"q{i:02d}", "bench", weight=1 + i % 4) for i in range(queues)]
        gangs = [replace(g, queue=f"q{i % queues:02d}") for i, g in enumerate(gangs)]
    label = f"{base.label}, {f'{queues} queues' if queues else 'no queues'}"
    return QueueThroughput(
        label, base.nodes, gangs, base.timeout_seconds, {**base.params, "queues": queues}, shares
    )


def fairness_contention(
    nodes: int, node_cpu: int, sizes: tuple[int, ...], tenants: dict[str, int],
    backlog: float, pod_cpu: int, run_seconds: float, *, seed: int = 11, timeout: float = 900,
    heaviest_first: bool = False, equal_backlogs: bool = False,
) -> Fairness:  # fmt: skip
    """Tenants (namespace = queue = quota name) of these weights, each with a backlog of Jobs
    of ``backlog`` times the cluster's cpu times its weight over the smallest weight, so
    that all would drain together at the intended shares. Submitted round-robin across the
    tenants (all at once, no tenant first), or with ``heaviest_first`` the heaviest tenant's
    whole backlog, then the next one's. ``equal_backlogs``: every tenant's backlog is
    ``backlog`` times the cluster (first come then splits it evenly, not by weight)."""
    rng = random.Random(seed)
    capacity = nodes * node_cpu
    lightest = min(tenants.values())
    total_weight = sum(tenants.values())
    backlogs: dict[str, list[Gang]] = {}
    for tenant, weight in tenants.items():
        jobs: list[Gang] = []
        demand = 0
        scale = 1.0 if equal_backlogs else weight / lightest
        while demand < backlog * capacity * scale:
            size = rng.choice(sizes)
            jobs.append(
                Gang(f"{tenant}-j{len(jobs):03d}-{size}", size, size, cpu=str(pod_cpu),
                     memory="1Gi", run_seconds=run_seconds, job=True, namespace=tenant,
                     queue=tenant)
            )  # fmt: skip
            demand += size * pod_cpu
        backlogs[tenant] = jobs
    if heaviest_first:
        # The heaviest tenant's whole backlog first: first come gives it the cluster.
        order = sorted(backlogs, key=lambda t: -tenants[t])
        gangs = [job for tenant in order for job in backlogs[tenant]]
    else:
        gangs = [job for row in zip_longest(*backlogs.values()) for job in row if job is not None]
    shares = [
        Share(tenant, tenant, weight=weight, min_cpu=capacity * weight / total_weight,
              max_cpu=capacity, memory_per_cpu=4 * 2**30)
        for tenant, weight in tenants.items()
    ]  # fmt: skip
    demand = sum(g.size for g in gangs) * pod_cpu
    return Fairness(
        f"{len(tenants)} tenants, weights {':'.join(map(str, tenants.values()))}"
        f"{', heaviest first' if heaviest_first else ''}"
        f"{', equal backlogs' if equal_backlogs else ''}, "
        f"{len(gangs)} Jobs of {'/'.join(map(str, sizes))} pods x {pod_cpu} cpu, demand "
        f"{demand / capacity:.1f}x of {nodes} nodes x {node_cpu} cpu, {run_seconds:g}s each",
        NodeShape(nodes, cpu=str(node_cpu), memory=f"{node_cpu * 4}Gi"), gangs, timeout,
        {"nodes": nodes, "node_cpu": node_cpu, "sizes": list(sizes), "jobs": len(gangs),
         "tenants": tenants, "demand_over_capacity": round(demand / capacity, 2),
         "pod_cpu": pod_cpu, "run_seconds": run_seconds, "seed": seed,
         "heaviest_first": heaviest_first, "equal_backlogs": equal_backlogs},
        shares,
    )  # fmt: skip


def overhead_throughput(pods: int, gang_size: int, nodes: int) -> OverheadThroughput:
    """:func:`throughput`, tabled apart (``bench.overhead_report``, not ``report``)."""
    base = throughput(pods, gang_size, nodes)
    return OverheadThroughput(base.label, base.nodes, base.gangs, base.timeout_seconds, base.params)


def overhead_contention(
    nodes: int, node_cpu: int, sizes: tuple[int, ...], demand_factor: float,
    pod_cpu: int, run_seconds: float,
) -> OverheadContention:  # fmt: skip
    """:func:`contention` (every pod of one priority), tabled apart like the above."""
    base = contention(nodes, node_cpu, sizes, demand_factor, pod_cpu, run_seconds)
    return OverheadContention(base.label, base.nodes, base.gangs, base.timeout_seconds, base.params)
