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
- preemption: the peer runs first; long-running low-priority gangs (Jobs) fill the
  cluster, then high-priority gangs arrive one at a time: how long each takes to bind,
  what is evicted for it and what is left broken (``bench.preemption_analysis``).
- overhead-throughput, overhead-contention: throughput and contention under kinds of their
  own, for ours with preemption on and off (issue #18).
- topology: contention on racks (a node label), every gang required in one rack: the
  contention figures and the gangs whose members ended up in more than one rack.
- dra: contention for GPUs claimed through DRA (a fake driver's ResourceSlices): the
  contention figures in GPUs (GPU-seconds held by partial gangs: devices idle while
  held) and the claims left allocated at the end.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from pathlib import Path
from typing import Any, ClassVar

from bench import analysis, fairness, identity, submit
from bench import preemption_analysis as pre
from bench.analysis import GangInfo, NodeCapacity
from bench.kube import Kube
from bench.observe import Recorder, Sampler
from bench.peers import Gang, Peer, PeerContext, Share
from bench.profiling import start_profiler, stop_profiler
from bench.progress import Progress
from coscheduler.api.quantity import float_quantity
from e2e import dra_driver

Json = dict[str, Any]


ALL_BOUND = "all_bound"
"""The sampler's mark (:meth:`bench.observe.Sampler.mark`) at the backlog's last Binding."""
SERVING = "serving"
"""The sampler's mark once the peer bound its probe: what it spends after is the workload's,
not its start-up's."""


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
    domain_key: str | None = None
    """A node label key; node ``i`` gets the value ``d<i // domain_nodes>``."""
    domain_nodes: int = 0

    @property
    def cpu_cores(self) -> float:
        return float_quantity(self.cpu)

    def labels(self, index: int) -> dict[str, str]:
        """The labels of node ``index`` beside KWOK's own."""
        if self.domain_key is None or self.domain_nodes <= 0:
            return {}
        return {self.domain_key: self.domain(index)}

    def domain(self, index: int) -> str:
        return f"d{index // self.domain_nodes}"


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
    backlog_created_per_s: float | None = None
    """Pods created a second before the peer starts, group objects included."""
    peer_started: float | None = None
    """When the peer was started (the recorder's clock): "from start" counts from here."""
    requests_from: float | None = None
    """When the API server's request counts were read (monotonic; the ``requests`` baseline)."""

    def start_peer(self) -> None:
        self.peer.start(self.ctx)
        self.sampler = Sampler({p.name: p.record.pid for p in self.peer.processes})
        self.sampler.start()

    async def count_requests_from_now(self) -> None:
        self.before = analysis.parse_request_totals(await self.kube.text("/metrics"))
        self.requests_from = time.monotonic()

    def requests_window(self) -> float | None:
        """Seconds since the request baseline (the trial adds its settle after the drive)."""
        return (
            None if self.requests_from is None else round(time.monotonic() - self.requests_from, 1)
        )


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

    expect_all_bound: ClassVar[bool] = True
    """The outcome check: every pod that fits is bound by the end."""
    gangs_whole_at_end: ClassVar[bool] = True
    """The outcome check: no gang of a gang scheduler is left partially bound at the end."""
    grace_periods: ClassVar[bool] = False
    """KWOK removes a deleted pod after its grace period, not at once."""

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
    bulk_create: ClassVar[bool] = False
    """The pods are created by the Go creator (:func:`submit.create_pods_in_bulk`)."""

    async def drive(self, run: TrialRun) -> Json:
        total = self.total_pods
        run.progress.status(f"creating {total} pods")
        created = time.monotonic()
        await submit.create_shares(run.kube, run.peer, self.shares)
        await submit.create_group_objects(run.kube, run.peer, run.ns, self.gangs)
        if self.bulk_create:
            await submit.create_pods_in_bulk(
                run.kube, run.recorder, run.peer, run.ns, self.gangs,
                run.ctx.binaries.ceiling, run.ctx.work_dir / "backlog",
            )  # fmt: skip
        else:
            await submit.create_pods(run.kube, run.recorder, run.peer, run.ns, self.gangs)
        backlog_seconds = time.monotonic() - created
        run.backlog_created_per_s = round(total / backlog_seconds, 1)
        run.progress.log(
            f"backlog of {total} pods created in {backlog_seconds:.0f}s "
            f"({run.backlog_created_per_s:g} pods/s, group objects included)"
        )
        await run.count_requests_from_now()
        started = run.peer_started = run.recorder.now()
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
        if run.sampler is not None:
            run.sampler.mark(ALL_BOUND)
        figures = analysis.throughput_figures(run.recorder, started)
        figures["backlog_created_per_s"] = run.backlog_created_per_s
        figures["requests_window_s"] = run.requests_window()
        stop_profiler(profiler)
        return figures


@dataclass
class Scale(Throughput):
    """Throughput as the cluster grows: its own table, one trial per node count.

    A trial that runs out of time still reports what it bound (the outcome check then
    fails it for the pods left pending): at 5,000 nodes a slow peer's partial rate is
    the finding, and waiting it out would take hours of a shared machine.
    """

    kind: ClassVar[str] = "scale"
    bulk_create: ClassVar[bool] = True

    async def drive(self, run: TrialRun) -> Json:
        try:
            return await super().drive(run)
        except TimeoutError as error:
            if run.peer_started is None:  # not the wait for bindings: a real failure
                raise
            # From the peer's start, as a trial that finishes: not from before the backlog.
            figures = analysis.throughput_figures(run.recorder, run.peer_started)
            figures["backlog_created_per_s"] = run.backlog_created_per_s
            figures["requests_window_s"] = run.requests_window()
            figures["stopped"] = str(error)
            return figures


@dataclass
class QueueThroughput(Throughput):
    """Throughput with the groups spread over queues (``params["queues"]``; 0: none)."""

    kind: ClassVar[str] = "queue-throughput"


@dataclass
class OverheadThroughput(Throughput):
    """Throughput as a kind of its own: the preemption-overhead suite's (ours, on and off)."""

    kind: ClassVar[str] = "overhead-throughput"


@dataclass
class StartupThroughput(Throughput):
    """Throughput read for its start: exec to first Binding, and ours' phases (issue #28).

    The backlog exists before the peer starts (as :class:`Throughput`). The runner's own
    watch gives ``first_bind_after_start_s`` (from the exec); ours' ``started`` log line
    (:mod:`coscheduler.runtime.startup`, seconds since its process began) gives the phases.
    """

    kind: ClassVar[str] = "startup"

    async def drive(self, run: TrialRun) -> Json:
        figures = await super().drive(run)
        if run.peer.processes:
            line = started_line(Path(run.peer.processes[0].record.log))
            if line is not None:
                figures["startup"] = line
        return figures


def started_line(log: Path) -> Json | None:
    """Ours' ``started`` line (JSON logs), without the logger's own fields; None if absent."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    for raw in text.splitlines():
        if not raw.startswith("{") or '"started"' not in raw:
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if entry.get("event") == "started":
            return {k: v for k, v in entry.items() if k not in ("event", "level", "timestamp")}
    return None


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
    gangs_whole_at_end: ClassVar[bool] = False

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
                qps=run.regime.qps, committed=identity.binding_commits(run.ctx.audit_log),
                peer_started=run.peer_started,
            )
        )  # fmt: skip
        return figures


@dataclass
class Topology(Contention):
    """Contention where every gang must sit in one domain (rack) of a node label."""

    kind: ClassVar[str] = "topology"

    async def drive(self, run: TrialRun) -> Json:
        figures = await super().drive(run)
        figures.update(split_gangs(run.recorder, self.nodes))
        return figures


def split_gangs(recorder: Recorder, shape: NodeShape) -> Json:
    """Gangs whose members were bound in more than one domain (over the whole run)."""
    domain_of = {f"kwok-node-{i}": shape.domain(i) for i in range(shape.count)}
    domains: dict[str, set[str]] = {}
    for pod in recorder.pods.values():
        if pod.gang == "probe":
            continue
        for node in pod.nodes_seen or ([pod.node] if pod.node else []):
            domains.setdefault(pod.gang, set()).add(domain_of.get(node, "?"))
    split = sorted(gang for gang, seen in domains.items() if len(seen) > 1)
    return {"gangs_split": len(split), "gangs_split_names": split[:10]}


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


LOW_CLASS = "bench-low"
HIGH_CLASS = "bench-high"
PRIORITY_CLASSES = {LOW_CLASS: 100, HIGH_CLASS: 1000}


@dataclass
class Preemption(Workload):
    """The peer first; low gangs fill the cluster; high gangs arrive one at a time.

    Every peer gets the same PriorityClasses and Jobs (each a gang in the peer's own terms,
    its pods' ``priorityClassName`` set); a low Job's podFailurePolicy ignores disruptions,
    so its preempted members are made again and wait, as a real batch Job's would. KWOK
    removes a deleted pod at the end of its grace period. Each high gang is sent once the
    previous one is bound (or its ``per_gang_seconds`` ran out), ``gap_seconds`` later.
    """

    kind: ClassVar[str] = "preemption"
    expect_all_bound: ClassVar[bool] = False
    gangs_whole_at_end: ClassVar[bool] = False
    grace_periods: ClassVar[bool] = True

    @property
    def pod_cpu(self) -> float | None:
        return float_quantity(self.gangs[0].cpu) if self.gangs else None

    @property
    def low(self) -> list[Gang]:
        return [g for g in self.gangs if g.priority_class == LOW_CLASS]

    @property
    def high(self) -> list[Gang]:
        return [g for g in self.gangs if g.priority_class == HIGH_CLASS]

    async def drive(self, run: TrialRun) -> Json:
        await submit.create_priority_classes(run.kube, PRIORITY_CLASSES)
        figures = await _start_and_probe(run)
        # The probe's 10m would keep one node from holding a whole number of members.
        await run.kube.request("DELETE", f"/api/v1/namespaces/{run.ns}/pods/probe-0")
        await run.recorder.wait(lambda r: r.pods["probe-0"].deleted is not None, within=30)
        low, high = self.low, self.high
        names = {g.name for g in low}
        total = sum(g.size for g in low)

        def running(r: Recorder) -> int:
            return sum(1 for p in r.pods.values() if p.gang in names and p.bound is not None)

        started = run.recorder.now()
        await submit.submit_jobs(run.kube, run.recorder, run.peer, run.ns, low, run.progress)
        await submit.wait_progress(
            run.recorder, run.progress, run.peer, total, float(self.params["fill_seconds"]),
            lambda r: running(r) >= total, running, what="low pods bound (filling)",
        )  # fmt: skip
        figures["fill_s"] = round(run.recorder.now() - started, 2)
        run.progress.status(f"cluster full; {self.params['settle_seconds']:g}s before the first")
        await asyncio.sleep(float(self.params["settle_seconds"]))
        arrivals = await self._send_high(run, high)
        plans = pre.minimal_plans([g.size for g in low], [(g.name, g.size) for g in high])
        figures.update(
            pre.preemption_figures(
                run.recorder.pods.values(), arrivals, {g.name: g.min_member for g in low},
                plans, end=run.recorder.now(), qps=run.regime.qps,
            )
        )  # fmt: skip
        return figures

    async def _send_high(self, run: TrialRun, high: list[Gang]) -> list[pre.Arrival]:
        arrivals: list[pre.Arrival] = []
        limit = float(self.params["per_gang_seconds"])
        for index, gang in enumerate(high):
            submitted = await submit.submit_jobs(
                run.kube, run.recorder, run.peer, run.ns, [gang], run.progress
            )
            arrivals.append(pre.Arrival(gang.name, gang.size, submitted[gang.name]))

            def bound(r: Recorder, name: str = gang.name, size: int = gang.size) -> bool:
                return sum(1 for p in r.pods.values()
                           if p.gang == name and p.bound is not None) >= size  # fmt: skip

            run.progress.status(f"high gang {index + 1}/{len(high)}: {gang.name}")
            if not await run.recorder.wait(bound, within=limit, poll=0.1):
                run.progress.log(f"{gang.name} not bound within {limit:g}s; the next one goes")
            for process in run.peer.processes:
                process.ensure_running()
            run.progress.update(index + 1, len(high), "high gangs sent")
            await asyncio.sleep(float(self.params["gap_seconds"]))
        return arrivals


@dataclass
class Dra(Contention):
    """Contention for GPUs through DRA: the runner plays a fake driver (``e2e/dra_driver.py``).

    Before the peer starts, each node gets a ResourceSlice of ``gpus_per_node`` GPUs in
    two NVLink domains, a DeviceClass picks them by CEL and a ResourceClaimTemplate per
    member size asks that many GPUs in one domain; every member of every Job claims its
    own from the template (kube-controller-manager makes the claim), for every peer alike.
    A peer writes a claim's allocation just before the pod's Binding and
    kube-controller-manager frees it once the pod is done, so a member holds its GPUs
    from its binding to its end: the held and utilization figures are in GPUs.
    """

    kind: ClassVar[str] = "dra"

    async def drive(self, run: TrialRun) -> Json:
        per_node = int(self.params["gpus_per_node"])
        run.progress.status("publishing the fake driver's GPUs")
        for node in sorted(run.nodes):
            await run.kube.create(dra_driver.SLICES, dra_driver.gpu_slice(node, per_node))
        await run.kube.create(dra_driver.CLASSES, dra_driver.gpu_class(DRA_CLASS))
        for count in sorted({g.gpus for g in self.gangs if g.gpus}):
            template = dra_driver.gpu_template(
                submit.gpu_template_name(count), DRA_CLASS, count, one_domain=True
            )
            path = f"{dra_driver.RESOURCE_API}/namespaces/{run.ns}/resourceclaimtemplates"
            await run.kube.create(path, template)
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
        gpus_of = {g.name: float(g.gpus) for g in self.gangs}
        held = analysis.contention_figures(
            run.recorder, submit.gang_infos(self.gangs), submitted,
            float(per_node * len(run.nodes)), qps=run.regime.qps,
            amount=lambda pod: gpus_of.get(pod.gang, 0.0),
            committed=identity.binding_commits(run.ctx.audit_log), peer_started=run.peer_started,
        )  # fmt: skip
        for cpu_name, gpu_name in (
            ("held_by_incomplete_gangs_cpu_s", "gpu_s_held_by_partial_gangs"),
            ("bind_burst_cpu_s", "bind_burst_gpu_s"),
            ("utilization_mean", "gpu_utilization_mean"),
            ("utilization_series", "gpu_utilization_series"),
        ):
            held[gpu_name] = held.pop(cpu_name)
        figures.update(held)
        figures["claims_left_allocated"] = await _claims_left_allocated(run)
        return figures


DRA_CLASS = "bench-gpu"


async def _claims_left_allocated(run: TrialRun, within: float = 30.0) -> int:
    """Claims still allocated once every pod finished (kube-controller-manager frees each
    when its pod is done; waited for up to ``within``): a leak when it stays above 0."""
    path = f"{dra_driver.RESOURCE_API}/namespaces/{run.ns}/resourceclaims"
    deadline = time.monotonic() + within
    while True:
        listed = await run.kube.get(path)
        left = sum(1 for c in listed["items"] if (c.get("status") or {}).get("allocation"))
        if left == 0 or time.monotonic() > deadline:
            return left
        await asyncio.sleep(1.0)


@dataclass
class OverheadContention(Contention):
    """Contention as a kind of its own: the preemption-overhead suite's (ours, on and off)."""

    kind: ClassVar[str] = "overhead-contention"


async def _start_and_probe(run: TrialRun) -> Json:
    """Start the peer and wait until it binds a probe pod: it is serving."""
    run.progress.status("starting the peer")
    run.peer_started = run.recorder.now()
    run.start_peer()
    ready = await submit.wait_peer_ready(run.kube, run.recorder, run.peer, run.ns, within=120)
    if run.sampler is not None:
        run.sampler.mark(SERVING)
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


def startup(pods: int, gang_size: int, nodes: int) -> StartupThroughput:
    """:func:`throughput`, read for its start (its own kind, tabled by ``bench.startup_report``)."""
    base = throughput(pods, gang_size, nodes)
    return StartupThroughput(base.label, base.nodes, base.gangs, base.timeout_seconds, base.params)


def scale(pods: int, sizes: tuple[int, ...], nodes: int, *, timeout: float = 900) -> Scale:
    """``pods`` of 1 cpu in gangs of ``sizes``, an equal share of the pods per size (what
    rounding leaves goes to the smallest), interleaved in creation order."""
    shares = [pods // len(sizes) // size for size in sizes]
    shares[sizes.index(min(sizes))] += (
        pods - sum(n * s for n, s in zip(shares, sizes, strict=True))
    ) // min(sizes)
    gangs: list[Gang] = []
    for round_ in range(max(shares)):
        gangs += [
            Gang(f"g{size}-{round_:05d}", size, size)
            for size, count in zip(sizes, shares, strict=True)
            if round_ < count
        ]
    total = sum(g.size for g in gangs)
    shape = NodeShape(nodes)
    if total > nodes * shape.cpu_cores or total > nodes * shape.pods:
        raise ValueError(f"{total} pods of 1 cpu do not fit {nodes} nodes")
    mix = "/".join(map(str, sizes))
    return Scale(
        f"{total} pods in gangs of {mix}, {nodes} nodes", shape, gangs, timeout,
        {"pods": total, "gang_size": mix, "gang_sizes": list(sizes), "nodes": nodes},
    )  # fmt: skip


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


def dra(
    nodes: int, gpus_per_node: int, sizes: tuple[int, ...], gpus_per_member: int,
    demand_factor: float, run_seconds: float, *, seed: int = 17, timeout: float = 900,
) -> Dra:  # fmt: skip
    """Jobs of ``sizes`` members claiming ``gpus_per_member`` GPUs each (DRA), all at once,
    their GPU demand ``demand_factor`` times the cluster's; cpu is never short (32 per node)."""
    rng = random.Random(seed)
    capacity = nodes * gpus_per_node
    gangs: list[Gang] = []
    demand = 0
    while demand < demand_factor * capacity:
        size = rng.choice(sizes)
        gangs.append(
            Gang(f"j{len(gangs):04d}-{size}", size, size, cpu="1", memory="1Gi",
                 run_seconds=run_seconds, job=True, gpus=gpus_per_member)
        )  # fmt: skip
        demand += size * gpus_per_member
    return Dra(
        f"{len(gangs)} Jobs of {'/'.join(map(str, sizes))} pods x {gpus_per_member} GPUs, "
        f"demand {demand / capacity:.1f}x of {nodes} nodes x {gpus_per_node} GPUs, "
        f"{run_seconds:g}s each",
        NodeShape(nodes), gangs, timeout,
        {"nodes": nodes, "gpus_per_node": gpus_per_node, "sizes": list(sizes),
         "gpus_per_member": gpus_per_member, "jobs": len(gangs),
         "demand_over_capacity": round(demand / capacity, 2), "run_seconds": run_seconds,
         "seed": seed},
    )  # fmt: skip


TOPOLOGY_KEY = "bench.coscheduler.dev/rack"


def topology(
    racks: int, rack_nodes: int, node_cpu: int, sizes: tuple[int, ...], demand_factor: float,
    pod_cpu: int, run_seconds: float, *, seed: int = 13, timeout: float = 900,
) -> Topology:  # fmt: skip
    """:func:`contention` on ``racks`` x ``rack_nodes`` nodes, each Job required in one rack."""
    nodes = racks * rack_nodes
    base = contention(nodes, node_cpu, sizes, demand_factor, pod_cpu, run_seconds, seed=seed,
                      timeout=timeout)  # fmt: skip
    rack_cpu = rack_nodes * node_cpu
    if max(sizes) * pod_cpu > rack_cpu:
        raise ValueError(f"a gang of {max(sizes)} x {pod_cpu} cpu exceeds a rack of {rack_cpu}")
    gangs = [replace(g, topology_key=TOPOLOGY_KEY) for g in base.gangs]
    shape = replace(base.nodes, domain_key=TOPOLOGY_KEY, domain_nodes=rack_nodes)
    label = base.label.replace(f"of {nodes} nodes", f"of {racks} racks x {rack_nodes} nodes")
    return Topology(
        f"{label}, each in one rack",
        shape,
        gangs,
        timeout,
        {**base.params, "racks": racks, "rack_nodes": rack_nodes, "topology_key": TOPOLOGY_KEY},
    )


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


def preemption(
    nodes: int, node_cpu: int, low_sizes: dict[int, int], high_sizes: tuple[int, ...],
    pod_cpu: int, grace_seconds: int, *, round_: int = 1, seed: int = 5,
    settle_seconds: float = 8.0, per_gang_seconds: float = 45.0, gap_seconds: float = 1.0,
    fill_seconds: float = 180.0,
) -> Preemption:  # fmt: skip
    """Low gangs (``low_sizes``: size -> count, minMember = size) that fill ``nodes`` of
    ``node_cpu`` exactly with pods of ``pod_cpu``, in an order shuffled by ``seed``; then
    high gangs of ``high_sizes`` (minMember = size), in that order. Every pod runs an hour
    and takes ``grace_seconds`` to go once deleted."""
    if node_cpu % pod_cpu:
        raise ValueError(f"nodes of {node_cpu} cpu do not hold a whole number of {pod_cpu}")
    slots = nodes * node_cpu // pod_cpu
    filled = sum(size * count for size, count in low_sizes.items())
    if filled != slots:
        raise ValueError(f"low gangs of {filled} pods do not fill {slots} slots exactly")
    sizes = [size for size, count in sorted(low_sizes.items()) for _ in range(count)]
    random.Random(seed).shuffle(sizes)

    def gang(name: str, size: int, priority_class: str) -> Gang:
        return Gang(name, size, size, cpu=str(pod_cpu), memory="1Gi", run_seconds=3600.0,
                    job=True, priority_class=priority_class, grace_seconds=grace_seconds,
                    ignore_disruptions=priority_class == LOW_CLASS)  # fmt: skip

    low = [gang(f"low-{i:03d}-{size}", size, LOW_CLASS) for i, size in enumerate(sizes)]
    high = [gang(f"high-{i}-{size}", size, HIGH_CLASS) for i, size in enumerate(high_sizes)]
    plans = pre.minimal_plans(sizes, [(g.name, g.size) for g in high])
    mix = ", ".join(f"{count}x{size}" for size, count in sorted(low_sizes.items(), reverse=True))
    return Preemption(
        f"{len(high)} high gangs of {'/'.join(map(str, high_sizes))} into {len(low)} low "
        f"gangs ({mix}) x {pod_cpu} cpu filling {nodes} nodes x {node_cpu} cpu, grace "
        f"{grace_seconds}s, round {round_}",
        NodeShape(nodes, cpu=str(node_cpu), memory=f"{node_cpu * 4}Gi"), [*low, *high],
        fill_seconds + settle_seconds + len(high) * (per_gang_seconds + gap_seconds),
        {"nodes": nodes, "node_cpu": node_cpu, "pod_cpu": pod_cpu,
         "low_sizes": {str(k): v for k, v in sorted(low_sizes.items())},
         "high_sizes": list(high_sizes), "grace_seconds": grace_seconds, "round": round_,
         "seed": seed, "settle_seconds": settle_seconds, "per_gang_seconds": per_gang_seconds,
         "gap_seconds": gap_seconds, "fill_seconds": fill_seconds,
         "priorities": PRIORITY_CLASSES, "minimal_plans": pre.plans_json(plans)},
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
