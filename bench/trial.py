"""One trial: a peer, a regime and a workload on a control plane of their own.

The frame is the same for every workload: a namespace and a watch of its pods, the
workload's own drive (:meth:`bench.workloads.Workload.drive`), a few seconds for
trailing writes, then the cost (CPU, RSS, requests), the peer's own metrics, and the
outcome checked from the watch replay.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import admission, analysis, histograms, identity, submit
from bench.analysis import GangInfo
from bench.kube import Kube
from bench.observe import Recorder, Sampler
from bench.peers import GANG_LABEL, Peer, PeerContext
from bench.progress import Progress
from bench.workloads import ALL_BOUND, SERVING, Contention, Regime, TrialRun, Workload
from e2e import gangs

Json = dict[str, Any]
SETTLE_SECONDS = 3.0
"""After the last binding: trailing status and event writes are counted in the cost."""


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


async def run_trial(
    workload: Workload, peer: Peer, regime: Regime, ctx: PeerContext, port: int, pki_dir: Path,
    progress: Progress, trace_dir: Path | None = None,
) -> TrialResult:  # fmt: skip
    """Run one trial; ``trace_dir``: write its pod watch and pod records there too."""
    kube = Kube(port, pki_dir)
    ns = "bench"
    result = TrialResult(
        workload=workload.kind, label=workload.label, peer=peer.name, regime=regime.name,
        qps=regime.qps, burst=regime.burst, params=workload.params, ok=False, failures=[],
    )  # fmt: skip
    wall = time.monotonic()
    # Tenants in namespaces of their own: one watch of every namespace keeps commit order.
    recorder = Recorder(kube, None if workload.namespaces else ns)
    run: TrialRun | None = None
    try:
        await submit.create_namespace(kube, ns)
        nodes = await submit.node_capacities(kube)
        await peer.prepare(ctx, nodes, workload.shares)
        await recorder.start()
        run = TrialRun(
            kube, recorder, peer, ctx, ns, progress, regime, nodes,
            submit.gang_infos(workload.gangs),
        )  # fmt: skip
        figures = await workload.drive(run)
        sampler = run.sampler
        assert sampler is not None, "every workload starts the peer"
        await asyncio.sleep(SETTLE_SECONDS)
        # The peer's CPU is read before its /metrics is: serving the scrape is the bench's doing.
        await sampler.stop()
        after = analysis.parse_request_totals(await kube.text("/metrics"))
        own = await _own_metrics(peer)
        for process in peer.processes:
            process.ensure_running()
        result.cost = _cost(sampler, recorder, run.infos)
        _permit_figures(figures, own, workload)
        planner_sums = [v for k, v in own.items()
                        if k.startswith("coscheduler_planner_duration_seconds_sum")]  # fmt: skip
        if planner_sums:
            planner = sum(planner_sums)
            figures["planner_seconds"] = round(planner, 3)
            if result.cost["cpu_s"]:
                figures["planner_share"] = round(planner / result.cost["cpu_s"], 4)
        decisions = decision_quantiles(own)
        if decisions:
            figures["decision_p99_s"] = decisions
        preemption = _preemption_figures(own)
        if preemption:
            figures["preemption"] = preemption
        connections = {
            name.removeprefix("coscheduler_client_"): value
            for name, value in own.items()
            if name.startswith("coscheduler_client_connections")
        }
        if connections:
            figures["client_connections"] = connections
        attempts = _attempts_by_result(own)
        if attempts:
            figures["attempts_by_result"] = attempts
        result.requests = analysis.request_delta(run.before, after)
        if ctx.audit_log is not None:
            own_requests, _ = identity.count_requests(ctx.audit_log)
            figures["peer_requests"] = own_requests
        failures = analysis.check_outcome(
            recorder, nodes, run.infos, expect_all_bound=workload.expect_all_bound,
            gang_peer=peer.gangs and workload.gangs_whole_at_end,
        )  # fmt: skip
        broken = partial_gangs(recorder, workload, peer, ns)
        figures["gangs_partial_beyond_burst"] = len(broken)
        figures["pods_evicted"] = admission.pods_evicted(
            p for p in recorder.pods.values() if p.gang != "probe"
        )
        if any(g.job for g in workload.gangs):
            figures["admission_to_bound"] = admission.admission_figures(
                recorder.pods.values(), workload.gangs,
                admits_by_creating_pods=peer.admits_by_creating_pods,
            )  # fmt: skip
        if broken and peer.name.startswith("ours"):
            failures.append(
                f"{len(broken)} gang(s) partially bound beyond a bind burst "
                "(e2e/gangs.py), first: " + "; ".join(str(b) for b in broken[:3])
            )
        if figures.get("gangs_split") and peer.name.startswith("ours"):
            failures.append(
                f"{figures['gangs_split']} gang(s) bound across more than one domain of "
                f"their required topology key, first: {figures['gangs_split_names'][:3]}"
            )
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
        if run is not None and run.sampler is not None:
            await run.sampler.stop()
        peer.stop()
        await recorder.stop()
        await kube.close()
        if trace_dir is not None:
            write_trace(recorder, trace_dir)
        result.wall_seconds = round(time.monotonic() - wall, 1)
    return result


def write_trace(recorder: Recorder, directory: Path) -> None:
    """The trial's pod watch (one event a line, as the gang judge reads it) and pod records."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "pod-events.jsonl").open("w") as out:
        for event in recorder.timeline:
            out.write(json.dumps({"at": round(event.at, 4), "type": event.type,
                                  "pod": event.pod}) + "\n")  # fmt: skip
    records = {name: asdict(record) for name, record in recorder.pods.items()}
    (directory / "pods.json").write_text(json.dumps(records, indent=0) + "\n")


def partial_gangs(
    recorder: Recorder, workload: Workload, peer: Peer, ns: str
) -> list[gangs.PartialGang]:
    """The gang invariant on the trial's pod watch, the same for every peer.

    Membership by the runner's own gang label, which every peer's pods carry; only
    pods of this peer's scheduler count (the probe is no gang). A gang of ours
    partial beyond the burst fails the trial; another peer's is a finding, reported.
    """
    return gangs.partial_gangs(
        recorder.timeline,
        {(g.namespace or ns, g.name): g.min_member for g in workload.gangs},
        scheduler_names=(peer.scheduler_name,),
        end=recorder.now(),
        group_labels=(GANG_LABEL,),
    )


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
    cpu = workload.pod_cpu
    if isinstance(workload, Contention) and cpu is not None:
        figures["permit_wait_cpu_s"] = round(sum(by_result.values()) * cpu, 2)
        figures["permit_wait_rejected_cpu_s"] = round(
            sum(v for r, v in by_result.items() if r.lower() != "success") * cpu, 2
        )


#: Per peer kind, the histogram of one scheduling decision: ours' planner per group by
#: its members; kube-scheduler's algorithm per pod group (native gangs) and per pod.
DECISION_HISTOGRAMS = {
    "planner (ours), gangs of 65-512": ("coscheduler_planner_duration_seconds",
                                        'members="65-512"'),
    "planner (ours), every group": ("coscheduler_planner_duration_seconds", ""),
    "pod group algorithm (kube-scheduler)": (
        "scheduler_podgroup_scheduling_algorithm_duration_seconds", ""),
    "pod algorithm (kube-scheduler)": ("scheduler_scheduling_algorithm_duration_seconds", ""),
}  # fmt: skip


def decision_quantiles(own: dict[str, float]) -> dict[str, Json]:
    """p99 and count of each decision histogram the peer has (seconds); {} for none."""
    found: dict[str, Json] = {}
    for title, (name, labels) in DECISION_HISTOGRAMS.items():
        observed = histograms.count(own, name, labels)
        p99 = histograms.quantile(own, name, 0.99, labels)
        if observed and p99 is not None:
            found[title] = {"p99": round(p99, 4), "count": observed}
    return found


PREEMPTION_METRICS = {
    "attempts": "coscheduler_preemption_attempts_total",
    "plans_found": 'coscheduler_preemption_plans_total{outcome="found"}',
    "plans_none": 'coscheduler_preemption_plans_total{outcome="none"}',
    "evicted_pods": "coscheduler_preemption_evicted_pods_total",
    "evicted_groups": "coscheduler_preemption_evicted_groups_total",
}


def _preemption_figures(own: dict[str, float]) -> dict[str, int]:
    """Ours' preemption counters at the end of the trial (absent ones: 0; none: {})."""
    if not any(name.startswith("coscheduler_preemption_") for name in own):
        return {}
    return {key: int(own.get(name, 0.0)) for key, name in PREEMPTION_METRICS.items()}


def _attempts_by_result(own: dict[str, float]) -> dict[str, int]:
    """Ours' attempts of a group by result (``coscheduler_scheduling_attempts_total``)."""
    prefix = 'coscheduler_scheduling_attempts_total{result="'
    return {
        name.removeprefix(prefix).partition('"')[0]: int(value)
        for name, value in own.items()
        if name.startswith(prefix)
    }


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
    """CPU and peak RSS of the peer's processes from their exec: to the end of the settle
    (``cpu_s``) and, where every pod was bound, to the last Binding (``cpu_s_to_all_bound``);
    from the probe's Binding to the settle's end (``cpu_s_once_serving``: start-up left out)."""
    bound = max(1, recorder.bound_count)
    at_all_bound = sampler.marks.get(ALL_BOUND, {})
    at_serving = sampler.marks.get(SERVING, {})
    per: dict[str, Json] = {}
    for label, reading in sampler.last.items():
        per[label] = {
            "cpu_s": round(reading["cpu_s"], 2),
            "peak_rss_mib": round(reading["peak_rss_bytes"] / 2**20, 1),
            "cpu_s_per_10k_pods": round(reading["cpu_s"] / bound * 10_000, 2),
        }
        if label in at_all_bound:
            per[label]["cpu_s_to_all_bound"] = round(at_all_bound[label]["cpu_s"], 2)
    total_cpu = sum(r["cpu_s"] for r in sampler.last.values())
    cost: Json = {
        "pods_bound": recorder.bound_count,
        "processes": per,
        "cpu_s": round(total_cpu, 2),
        "cpu_s_per_10k_pods": round(total_cpu / bound * 10_000, 2),
        "peak_rss_mib": round(sum(r["peak_rss_bytes"] for r in sampler.last.values()) / 2**20, 1),
    }
    if at_all_bound:
        cost["cpu_s_to_all_bound"] = round(sum(r["cpu_s"] for r in at_all_bound.values()), 2)
    if at_serving:
        cost["cpu_s_once_serving"] = round(
            total_cpu - sum(r["cpu_s"] for r in at_serving.values()), 2
        )
    return cost
