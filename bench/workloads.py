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
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import analysis, identity
from bench.analysis import GangInfo, NodeCapacity
from bench.kube import ApiError, Kube, gather_limited
from bench.observe import Recorder
from bench.peers import GANG_LABEL, Gang, Peer, PeerContext
from bench.progress import Progress
from coscheduler.api.quantity import float_quantity
from e2e.kwok_stages import COMPLETE_AFTER_ANNOTATION

Json = dict[str, Any]
CREATE_CONCURRENCY = 32
SETTLE_SECONDS = 3.0
"""After the last binding: trailing status and event writes are counted in the cost."""


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
class Workload:
    kind: str  # throughput | latency | contention
    label: str
    nodes: NodeShape
    gangs: list[Gang]
    timeout_seconds: float
    params: Json = field(default_factory=dict)


# --- workload builders ------------------------------------------------------------------------


def throughput(pods: int, gang_size: int, nodes: int, *, timeout: float = 900) -> Workload:
    count = max(1, pods // gang_size)
    gangs = [Gang(f"g{gang_size}-{i:05d}", gang_size, gang_size) for i in range(count)]
    shape = NodeShape(nodes)
    cpu = count * gang_size * float_quantity(gangs[0].cpu)
    if cpu > nodes * shape.cpu_cores or count * gang_size > nodes * shape.pods:
        # Throughput waits for every pod: one that cannot fit only runs out the clock.
        raise ValueError(f"{count * gang_size} pods of {gangs[0].cpu} cpu do not fit {nodes} nodes")
    return Workload(
        "throughput", f"{count * gang_size} pods in gangs of {gang_size}, {nodes} nodes",
        shape, gangs, timeout,
        {"pods": count * gang_size, "gang_size": gang_size, "nodes": nodes},
    )  # fmt: skip


def latency(rounds: int, sizes: tuple[int, ...], nodes: int, *, timeout: float = 900) -> Workload:
    gangs = [Gang(f"l{size}-{r:04d}", size, size) for r in range(rounds) for size in sizes]
    return Workload(
        "latency", f"{len(gangs)} gangs of {'/'.join(map(str, sizes))} one at a time, "
        f"{nodes} nodes", NodeShape(nodes), gangs, timeout,
        {"gangs": len(gangs), "sizes": list(sizes), "nodes": nodes},
    )  # fmt: skip


def contention(
    nodes: int, node_cpu: int, sizes: tuple[int, ...], demand_factor: float,
    pod_cpu: int, run_seconds: float, *, seed: int = 7, timeout: float = 900,
) -> Workload:  # fmt: skip
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
    return Workload(
        "contention",
        f"{len(gangs)} Jobs of {'/'.join(map(str, sizes))} pods x {pod_cpu} cpu, "
        f"demand {demand / capacity:.1f}x of {nodes} nodes x {node_cpu} cpu, {run_seconds:g}s each",
        NodeShape(nodes, cpu=str(node_cpu), memory=f"{node_cpu * 4}Gi"), gangs, timeout,
        {"nodes": nodes, "node_cpu": node_cpu, "sizes": list(sizes), "jobs": len(gangs),
         "demand_over_capacity": round(demand / capacity, 2), "pod_cpu": pod_cpu,
         "run_seconds": run_seconds, "seed": seed},
    )  # fmt: skip


# --- manifests ----------------------------------------------------------------------------------


def pod_template(peer: Peer, gang: Gang) -> Json:
    annotations = {}
    if gang.run_seconds is not None:
        annotations[COMPLETE_AFTER_ANNOTATION] = f"{gang.run_seconds:g}s"
    pod: Json = {
        "metadata": {"labels": {GANG_LABEL: gang.name}, "annotations": annotations},
        "spec": {
            "schedulerName": peer.scheduler_name,
            "restartPolicy": "Never" if gang.job else "Always",
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "containers": [{
                "name": "main", "image": "registry.invalid/bench:1",
                "resources": {"requests": {"cpu": gang.cpu, "memory": gang.memory}},
            }],
        },
    }  # fmt: skip
    peer.decorate_pod(pod, gang)
    return pod


def pod_manifest(peer: Peer, gang: Gang, index: int) -> Json:
    pod = pod_template(peer, gang)
    pod["apiVersion"] = "v1"
    pod["kind"] = "Pod"
    pod["metadata"]["name"] = f"{gang.name}-{index}"
    return pod


def job_manifest(peer: Peer, gang: Gang) -> Json:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": gang.name, "labels": {GANG_LABEL: gang.name}},
        "spec": {
            "parallelism": gang.size,
            "completions": gang.size,
            "backoffLimit": 0,
            "template": pod_template(peer, gang),
        },
    }


# --- one trial -------------------------------------------------------------------------------


@dataclass
class TrialResult:
    workload: str
    label: str
    peer: str
    regime: str
    qps: float
    burst: int
    params: Json
    ok: bool
    failures: list[str]
    figures: Json = field(default_factory=dict)
    cost: Json = field(default_factory=dict)
    requests: Json = field(default_factory=dict)
    wall_seconds: float = 0.0

    def to_json(self) -> Json:
        return asdict(self)


class Sampler:
    """Samples /proc of the peer's processes: CPU seconds and peak RSS, the last seen kept."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.last: dict[str, Json] = {}
        self.at_first_bind: dict[str, Json] = {}
        self._task: asyncio.Task[None] | None = None

    def sample(self) -> None:
        for label, pid in self.pids.items():
            reading = analysis.read_proc(pid)
            if reading is not None:
                self.last[label] = reading

    async def _loop(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(0.5)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.sample()


async def create_namespace(kube: Kube, name: str) -> None:
    await kube.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            await kube.get(f"/api/v1/namespaces/{name}/serviceaccounts/default")
            return
        except ApiError as error:
            if error.status != 404:
                raise
        await asyncio.sleep(0.2)
    raise RuntimeError(f"namespace {name}: no default ServiceAccount after 60s")


async def node_capacities(kube: Kube) -> dict[str, NodeCapacity]:
    listed = await kube.get("/api/v1/nodes")
    result = {}
    for node in listed["items"]:
        alloc = node["status"].get("allocatable", {})
        result[node["metadata"]["name"]] = NodeCapacity(
            cpu=float_quantity(alloc.get("cpu", "0")),
            memory=float_quantity(alloc.get("memory", "0")),
            pods=int(alloc.get("pods", "0")),
        )
    return result


async def create_group_objects(kube: Kube, peer: Peer, ns: str, gangs: list[Gang]) -> None:
    calls: list[Awaitable[Any]] = []
    for gang in gangs:
        group = peer.group_object(gang)
        if group is not None:
            path, body = group
            calls.append(kube.create(path.format(ns=ns), body))
    await gather_limited(calls, CREATE_CONCURRENCY)


async def create_pods(
    kube: Kube, recorder: Recorder, peer: Peer, ns: str, gangs: list[Gang]
) -> None:
    async def one(gang: Gang, index: int) -> None:
        body = pod_manifest(peer, gang, index)
        await kube.create(f"/api/v1/namespaces/{ns}/pods", body)
        recorder.mark_created(
            body["metadata"]["name"],
            gang.name,
            float_quantity(gang.cpu),
            float_quantity(gang.memory),
        )

    await gather_limited([one(g, i) for g in gangs for i in range(g.size)], CREATE_CONCURRENCY)


async def wait_peer_ready(
    kube: Kube, recorder: Recorder, peer: Peer, ns: str, within: float
) -> float:
    """Create one plain probe pod and wait until the peer binds it: the peer is serving."""
    probe = Gang("probe", 1, 1, cpu="10m", memory="16Mi")
    started = time.monotonic()
    await create_pods(kube, recorder, peer, ns, [probe])
    ok = await recorder.wait(lambda r: r.pods.get("probe-0") is not None
                             and r.pods["probe-0"].bound is not None, within=within,
                             poll=0.1)  # fmt: skip
    for process in peer.processes:
        process.ensure_running()
    if not ok:
        raise RuntimeError(f"{peer.name} did not bind a probe pod within {within:.0f}s")
    return time.monotonic() - started


def gang_infos(gangs: list[Gang]) -> dict[str, GangInfo]:
    return {g.name: GangInfo(g.name, g.size, g.min_member) for g in gangs}


async def run_trial(
    workload: Workload, peer: Peer, regime: Regime, ctx: PeerContext, port: int, pki_dir: Path,
    progress: Progress,
) -> TrialResult:  # fmt: skip
    kube = Kube(port, pki_dir)
    ns = "bench"
    result = TrialResult(
        workload=workload.kind, label=workload.label, peer=peer.name, regime=regime.name,
        qps=regime.qps, burst=regime.burst, params=workload.params, ok=False, failures=[],
    )  # fmt: skip
    wall = time.monotonic()
    recorder = Recorder(kube, ns)
    sampler: Sampler | None = None
    try:
        await create_namespace(kube, ns)
        nodes = await node_capacities(kube)
        await recorder.start()
        gangs = workload.gangs
        infos = gang_infos(gangs)
        total = sum(g.size for g in gangs)
        figures: Json = {}
        if workload.kind in ("throughput", "scale"):
            progress.status(f"creating {total} pods")
            await create_group_objects(kube, peer, ns, gangs)
            await create_pods(kube, recorder, peer, ns, gangs)
            before = analysis.parse_request_totals(await kube.text("/metrics"))
            started = recorder.now()
            peer.start(ctx)
            sampler = Sampler({p.name: p.record.pid for p in peer.processes})
            sampler.start()
            profiler = await _start_profiler(ctx, peer)
            await _wait_progress(
                recorder,
                progress,
                peer,
                total,
                workload.timeout_seconds,
                lambda r: r.bound_count >= total,
                lambda r: r.bound_count,
            )
            figures = analysis.throughput_figures(recorder, started)
            _stop_profiler(profiler)
        elif workload.kind in ("latency", "contention"):
            progress.status("starting the peer")
            peer.start(ctx)
            sampler = Sampler({p.name: p.record.pid for p in peer.processes})
            sampler.start()
            figures["ready_after_s"] = round(
                await wait_peer_ready(kube, recorder, peer, ns, within=120), 2
            )
            infos = {**infos, "probe": GangInfo("probe", 1, 1)}
            before = analysis.parse_request_totals(await kube.text("/metrics"))
            if workload.kind == "latency":
                await _latency_loop(kube, recorder, peer, ns, gangs, progress, workload)
                lat = analysis.gang_latencies(recorder, gang_infos(gangs))
                figures.update(_latency_figures(lat, gangs))
            else:
                submitted = await _submit_jobs(kube, recorder, peer, ns, gangs, progress)
                await _wait_progress(
                    recorder, progress, peer, total, workload.timeout_seconds,
                    lambda r: sum(1 for p in r.pods.values()
                                  if p.finished is not None and p.gang != "probe") >= total,
                    lambda r: sum(1 for p in r.pods.values()
                                  if p.finished is not None and p.gang != "probe"),
                    what="finished")  # fmt: skip
                capacity = sum(n.cpu for n in nodes.values())
                figures.update(
                    analysis.contention_figures(
                        recorder, gang_infos(gangs), submitted, capacity, qps=regime.qps
                    )
                )
        else:
            raise ValueError(workload.kind)
        await asyncio.sleep(SETTLE_SECONDS)
        after = analysis.parse_request_totals(await kube.text("/metrics"))
        own = await _own_metrics(peer)
        await sampler.stop()
        for process in peer.processes:
            process.ensure_running()
        result.cost = _cost(sampler, recorder, infos)
        _permit_figures(figures, own, workload)
        if "coscheduler_planner_duration_seconds_sum" in own:
            planner = own["coscheduler_planner_duration_seconds_sum"]
            figures["planner_seconds"] = round(planner, 3)
            if result.cost["cpu_s"]:
                figures["planner_share"] = round(planner / result.cost["cpu_s"], 4)
        result.requests = analysis.request_delta(before, after)
        if ctx.audit_log is not None:
            own_requests, _ = identity.count_requests(ctx.audit_log)
            figures["peer_requests"] = own_requests
        failures = analysis.check_outcome(
            recorder, nodes, infos, expect_all_bound=True,
            gang_peer=peer.gangs and workload.kind != "contention",
        )  # fmt: skip
        if not peer.capacity_checks:
            # The ceiling checks nothing by design; an over-commit is noted, not a failure.
            figures["notes"] = [f for f in failures if "over-commit" in f]
            failures = [f for f in failures if "over-commit" not in f]
        result.failures = failures
        result.ok = not failures
        result.figures = figures
    except Exception as error:
        result.failures.append(f"{type(error).__name__}: {error}")
        for process in peer.processes:
            if not process.is_running():
                result.failures.append(
                    f"{process.name} exited; last lines of its log:\n{process.record.log_tail(15)}"
                )
    finally:
        if sampler is not None:
            await sampler.stop()
        peer.stop()
        await recorder.stop()
        await kube.close()
        result.wall_seconds = round(time.monotonic() - wall, 1)
    return result


async def _start_profiler(ctx: PeerContext, peer: Peer) -> subprocess.Popen[bytes] | None:
    """py-spy on ours for the scheduling phase, when the run asks for it (--profile DIR)."""
    if ctx.profile_dir is None or peer.name != "ours" or not peer.processes:
        return None
    import shutil
    import sys

    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    ctx.profile_dir.mkdir(parents=True, exist_ok=True)
    out = ctx.profile_dir / f"{ctx.label}.txt"
    # py-spy cannot attach before the interpreter is up ("Failed to find python version").
    await asyncio.sleep(0.7)
    with (ctx.profile_dir / f"{ctx.label}.py-spy.log").open("w") as log:
        return subprocess.Popen(  # noqa: ASYNC220 - starting it is instant
            [spy, "record", "--pid", str(peer.processes[0].record.pid), "--rate", "100",
             "--format", "raw", "--output", str(out), "--nonblocking"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip


def _stop_profiler(profiler: subprocess.Popen[bytes] | None) -> None:
    if profiler is None:
        return
    import signal

    profiler.send_signal(signal.SIGINT)
    try:
        profiler.wait(timeout=30)
    except subprocess.TimeoutExpired:
        profiler.kill()
        profiler.wait()


def _all_running(recorder: Recorder) -> bool:
    return all(p.phase != "Pending" for p in recorder.pods.values() if p.bound is not None)


def _permit_figures(figures: Json, own: dict[str, float], workload: Workload) -> None:
    """Pod-seconds the peer's pods waited at Permit, reserved on a node but unbound.

    kube-scheduler's ``scheduler_permit_wait_duration_seconds`` (by result) is where a
    Permit-based gang scheduler (the reference, native) holds a gang's members until
    minMember of them have a node: resources held by an incomplete gang, invisible to the
    API. Every pod of the contention workload asks the same cpu, so cpu-seconds follow.
    """
    waits = {k: v for k, v in own.items()
             if k.startswith("scheduler_permit_wait_duration_seconds_sum")}  # fmt: skip
    if not waits:
        return
    by_result: dict[str, float] = {}
    for key, value in waits.items():
        result = key.partition('result="')[2].partition('"')[0] or "all"
        by_result[result] = round(by_result.get(result, 0.0) + value, 2)
    figures["permit_wait_pod_seconds"] = by_result
    if workload.kind == "contention" and workload.gangs:
        cpu = float_quantity(workload.gangs[0].cpu)
        figures["permit_wait_cpu_s"] = round(sum(by_result.values()) * cpu, 2)
        figures["permit_wait_rejected_cpu_s"] = round(
            sum(v for r, v in by_result.items() if r.lower() != "success") * cpu, 2
        )


async def _own_metrics(peer: Peer) -> dict[str, float]:
    """The peer's own Prometheus metrics (ours; kube-scheduler's), samples by name+labels."""
    port = peer.metrics_port
    if not port or not peer.processes:
        return {}
    import aiohttp

    url = f"{peer.metrics_scheme}://127.0.0.1:{port}/metrics"
    try:
        async with (
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as session,
            session.get(url, timeout=aiohttp.ClientTimeout(10)) as r,
        ):
            text = await r.text()
    except (aiohttp.ClientError, TimeoutError):
        return {}
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            try:
                values[name] = float(value)
            except ValueError:
                continue
    return values


def _cost(sampler: Sampler, recorder: Recorder, infos: dict[str, GangInfo]) -> Json:
    bound = max(1, recorder.bound_count)
    per = {}
    for label, reading in sampler.last.items():
        per[label] = {
            "cpu_s": round(reading["cpu_s"], 2),
            "peak_rss_mib": round(reading["peak_rss_bytes"] / 2**20, 1),
            "cpu_s_per_10k_pods": round(reading["cpu_s"] / bound * 10_000, 2),
        }
    total_cpu = sum(r["cpu_s"] for r in sampler.last.values())
    return {
        "pods_bound": recorder.bound_count,
        "processes": per,
        "cpu_s": round(total_cpu, 2),
        "cpu_s_per_10k_pods": round(total_cpu / bound * 10_000, 2),
        "peak_rss_mib": round(sum(r["peak_rss_bytes"] for r in sampler.last.values()) / 2**20, 1),
    }


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


async def _wait_progress(
    recorder: Recorder,
    progress: Progress,
    peer: Peer,
    total: int,
    limit: float,
    done: Callable[[Recorder], bool],
    count: Callable[[Recorder], int],
    what: str = "bound",
) -> None:
    deadline = time.monotonic() + limit
    while not done(recorder):
        for process in peer.processes:
            process.ensure_running()
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {count(recorder)}/{total} pods {what} after {limit:.0f}s")
        progress.update(count(recorder), total, what)
        await recorder.wait(done, within=1.0, poll=0.5)
    progress.update(count(recorder), total, what)


async def _latency_loop(
    kube: Kube,
    recorder: Recorder,
    peer: Peer,
    ns: str,
    gangs: list[Gang],
    progress: Progress,
    workload: Workload,
) -> None:
    deadline = time.monotonic() + workload.timeout_seconds
    for index, gang in enumerate(gangs):
        await create_group_objects(kube, peer, ns, [gang])
        await create_pods(kube, recorder, peer, ns, [gang])
        names = [f"{gang.name}-{i}" for i in range(gang.size)]

        def bound(r: Recorder, names: list[str] = names, need: int = gang.min_member) -> bool:
            return sum(1 for n in names if n in r.pods and r.pods[n].bound is not None) >= need

        remaining = deadline - time.monotonic()
        if remaining <= 0 or not await recorder.wait(bound, within=remaining, poll=0.05):
            raise TimeoutError(f"gang {gang.name} not bound within the workload's time limit")
        for process in peer.processes:
            process.ensure_running()
        progress.update(index + 1, len(gangs), "gangs bound")
        await asyncio.sleep(0.2)


async def _submit_jobs(
    kube: Kube, recorder: Recorder, peer: Peer, ns: str, gangs: list[Gang], progress: Progress
) -> dict[str, float]:
    progress.status(f"submitting {len(gangs)} Jobs")
    await create_group_objects(kube, peer, ns, gangs)
    submitted: dict[str, float] = {}

    async def one(gang: Gang) -> None:
        await kube.create(f"/apis/batch/v1/namespaces/{ns}/jobs", job_manifest(peer, gang))
        submitted[gang.name] = recorder.now()

    await gather_limited([one(g) for g in gangs], CREATE_CONCURRENCY)
    return submitted
