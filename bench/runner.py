"""Run a suite: for every trial, a fresh control plane, one peer, one workload; then report.

Everything a trial starts is stopped before the next begins (the peer's processes, the
control plane), also on Ctrl-C or SIGTERM, and every wait is bounded.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import platform
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench import build as bench_build
from bench import identity, import_floor, trial
from bench import idle as bench_idle
from bench import kopf_cost as bench_kopf
from bench import peers as peers_mod
from bench import workloads as wl
from bench.peers import ALL_PEERS, PeerContext, make_peer
from bench.progress import Progress
from bench.runtime_venv import runtime_python
from e2e import nodes as e2e_nodes
from e2e import versions as e2e_versions
from e2e.controlplane import Cluster, ClusterOptions, StartupError

Json = dict[str, Any]
REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "bench" / "results"
OURS_CRD = REPO / "crds" / "podgroups.yaml"
OURS_QUEUE_CRD = REPO / "crds" / "queues.yaml"


@dataclass
class TrialSpec:
    workload: wl.Workload
    peer: str
    regime: wl.Regime


@dataclass
class Suite:
    name: str
    trials: list[TrialSpec] = field(default_factory=list)


CONTENTION_PEERS_EXCLUDED = {"ceiling": "binds with no capacity checks: over-commits by design"}
#: Left out of the smoke's contention trial only, on 1.35. Under contention 1.35's native
#: gang plugin can reserve part of every gang at Permit and hold them all until its Permit
#: timeout (minutes; the contention suite measures it): no 90-second smoke bound fits
#: that, and its throughput trial still keeps its runner path working. 1.36+ places a
#: PodGroup in one cycle of its own, and runs the smoke's contention too.
SMOKE_CONTENTION_PEERS_EXCLUDED = (
    {"native": "may deadlock at Permit until its timeout"} if e2e_versions.minor() <= 35 else {}
)
SCALE_PEERS = ("ceiling", "ours", "default", "native", "reference")
#: From this many nodes on, KWOK renews node Leases less often (``ClusterOptions``).
MANY_NODES = 2_000
#: Fresh interpreters per case of the startup suite's import floor (bench/import_floor.py).
FLOOR_RUNS = 5
#: The shortest node Lease at that size: renewed every minute.
MANY_NODES_LEASE_SECONDS = 240
#: Node health writes a second the fake nodes may ask of the API server, whatever their
#: count: each node renews its Lease 4 times a Lease and heartbeats its status about once.
NODE_HEALTH_WRITES_PER_S = 20


def node_lease_seconds(nodes: int) -> int | None:
    """The node Lease (and the controller manager's grace period) for ``nodes`` KWOK nodes;
    None below ``MANY_NODES`` (KWOK's defaults).

    Long enough that the nodes' own writes stay near ``NODE_HEALTH_WRITES_PER_S``: with a
    240 s Lease, 5,000 nodes asked for 104 writes a second (83 Lease renewals, 21 status
    heartbeats), more than a starved API server accepted in all; KWOK fell behind, Leases
    expired and the node lifecycle controller tainted live nodes unreachable mid-trial.
    """
    if nodes < MANY_NODES:
        return None
    return max(MANY_NODES_LEASE_SECONDS, 5 * nodes // NODE_HEALTH_WRITES_PER_S)


PREEMPTION_PEERS_EXCLUDED = {"ceiling": "binds with no capacity checks: nothing to preempt"}
#: The peers the idle suite compares (ours@REV too, for a before/after).
IDLE_PEERS = ("ours", "default", "native")
#: The peers that allocate DRA claims: ours (ours@REV too, for a before/after) and
#: kube-scheduler (its DynamicResources plugin).
DRA_PEERS = ("ours", "default", "native")
TOPOLOGY_PEERS_EXCLUDED = {
    "ceiling": "binds with no capacity checks",
    "default": "no gangs, so no gang's domain",
    "reference": "Coscheduling has no domain constraint",
}


def build_suite(
    name: str,
    peers: list[str],
    regimes: list[str],
    scale: str,
    sizes: tuple[int, ...] = (1, 8, 64, 512),
    scale_nodes: tuple[int, ...] = (),
    rounds: int | None = None,
    queues: int = 10,
    pods: int | None = None,
    time_limit: float | None = None,
) -> Suite:
    """The trials of a suite; peers inner-most so that machine noise spreads over all.

    ``rounds``: the queues, preemption and the A/B suites run 3 by default; throughput,
    contention and topology once, and with ``rounds`` every round runs every workload
    with the peers' order alternating (side by side, interleaved). ``pods``: the
    throughput and scale suites' pods instead of their default. ``time_limit``: the scale
    suite's bound on each trial's wait for bindings (default: 900 s, or a second per 50
    pods).
    """
    suite = Suite(name)
    big = scale == "full"
    repeat = rounds or 1
    rounds = rounds or 3

    def alternating(round_: int) -> list[str]:
        return peers if round_ % 2 == 0 else peers[::-1]

    def add(
        workloads: list[wl.Workload], regime_names: list[str], peer_names: list[str] = peers
    ) -> None:
        for regime in regime_names:
            for workload in workloads:
                for peer in peer_names:
                    if workload.kind == "contention" and peer in CONTENTION_PEERS_EXCLUDED:
                        continue
                    suite.trials.append(TrialSpec(workload, peer, wl.REGIMES[regime]))

    if name == "smoke":
        add([wl.throughput(12, 4, 4, timeout=90)], regimes)
        contention_peers = [p for p in peers if p not in SMOKE_CONTENTION_PEERS_EXCLUDED]
        add([wl.contention(4, 8, (4,), 2.0, 2, 2.0, timeout=90)], regimes, contention_peers)
        return suite
    if name in ("throughput", "all"):
        for round_ in range(repeat):
            for regime in regimes:
                count = pods or (10_000 if regime == "high" and big else 2_048)
                nodes = 1_000 if big else 100
                add([wl.throughput(count, s, nodes) for s in sizes if s <= count], [regime],
                    alternating(round_))  # fmt: skip
    if name in ("latency", "all"):
        add([wl.latency(20 if big else 5, (1, 8, 64), 1_000 if big else 100)], regimes)
    if name in ("contention", "all"):
        for round_ in range(repeat):
            add([wl.contention(100 if big else 20, 8, (4, 8, 16, 32), 2.5, 2, 15.0)], regimes,
                alternating(round_))  # fmt: skip
    if name == "topology":
        # Issue #29: racks of 4 nodes x 8 cpu; Jobs of 4/8/12 pods x 2 cpu (a quarter, half
        # and three quarters of a rack), each required in one rack, demand 2x the cluster.
        topology_peers = [p for p in peers if p not in TOPOLOGY_PEERS_EXCLUDED]
        for round_ in range(repeat):
            order = topology_peers if round_ % 2 == 0 else topology_peers[::-1]
            add([wl.topology(16 if big else 8, 4, 8, (4, 8, 12), 2.0, 2, 15.0)], regimes, order)
    if name == "dra":
        # Issue #30: 8 GPUs per node in two NVLink domains, Jobs of 2/4/8 pods x 2 GPUs
        # (each member's pair in one domain), GPU demand 2x the cluster, beside
        # kube-scheduler with DRA (default plugins, and its native PodGroups).
        dra_peers = [p for p in peers if p in DRA_PEERS or p.startswith("ours@")]
        for round_ in range(repeat):
            order = dra_peers if round_ % 2 == 0 else dra_peers[::-1]
            add([wl.dra(32 if big else 8, 8, (2, 4, 8), 2, 2.0, 10.0)], regimes, order)
    if name == "idle":
        # Issue #43: work while nothing can be placed, 100 and 400 gangs waiting.
        idle_peers = [p for p in peers if p in IDLE_PEERS or p.startswith("ours@")]
        for round_ in range(repeat):
            order = idle_peers if round_ % 2 == 0 else idle_peers[::-1]
            add([bench_idle.idle(waiting=w) for w in (100, 400)], regimes, order)
    if name == "kopf":
        # Issue #41: Kopf's part with many PodGroups waiting (--pods: their pods, 2 each).
        for round_ in range(repeat):
            add([bench_kopf.kopf_cost(waiting=(pods or (10_000 if big else 1_000)) // 2)],
                regimes, alternating(round_))  # fmt: skip
    if name in ("scale", "all"):
        # Issue #28: the bind-only ceiling and the default scheduler too, in the same run.
        scale_peers = [p for p in peers if p in SCALE_PEERS]
        for nodes in scale_nodes or ((100, 1_000, 5_000) if big else (100, 1_000)):
            # 10,000 pods of 1 cpu do not fit on 100 nodes of 32: fill at most 3/4 of the cpu.
            fits = int(nodes * wl.NodeShape(nodes).cpu_cores * 3 / 4)
            count = min(pods or (10_000 if big else 2_048), fits)
            # A slow peer at 50,000 pods would take hours: its partial rate is the finding.
            limit = time_limit or max(900.0, count / 50)
            mix = tuple(s for s in sizes if s <= count)
            add([wl.scale(count, mix, nodes, timeout=limit)], ["high"], scale_peers)
    if name == "queues":
        # Without and with queues, interleaved round by round (which goes first alternates):
        # the machine's noise weighs on both alike.
        pods, nodes = (10_000, 1_000) if big else (2_048, 100)
        for round_ in range(rounds):
            for size in sizes:
                pair: list[wl.Workload] = [wl.queue_throughput(pods, size, nodes, 0),
                        wl.queue_throughput(pods, size, nodes, queues)]  # fmt: skip
                add(pair if round_ % 2 == 0 else pair[::-1], regimes)
    if name == "preemption-overhead":
        # Issue #18: ours with preemption off and on (its default), interleaved round by
        # round, which goes first alternating; --peers is not read (the pair is the suite).
        # Throughput: everything fits, nothing searches. Contention (one priority for all):
        # every failed attempt may search and must find nothing to preempt.
        pods, nodes = (10_000, 1_000) if big else (2_048, 100)
        on_off = ["ours-preemption-off", "ours"]
        overhead: list[wl.Workload] = [
            *(wl.overhead_throughput(pods, size, nodes) for size in sizes if size <= pods),
            wl.overhead_contention(100 if big else 20, 8, (4, 8, 16, 32), 2.5, 2, 15.0),
        ]
        for round_ in range(rounds):
            for workload in overhead:
                add([workload], regimes, on_off if round_ % 2 == 0 else on_off[::-1])
    if name == "before-after":
        # Issue #27: ours at another revision and ours (--peers ours@REV,ours) on
        # throughput (gangs of 8 and 64) and contention, interleaved round by round, which
        # goes first alternating.
        pods, nodes = (10_000, 1_000) if big else (2_048, 100)
        compared: list[wl.Workload] = [
            *(wl.throughput(pods, size, nodes) for size in (8, 64)),
            wl.contention(100 if big else 20, 8, (4, 8, 16, 32), 2.5, 2, 15.0),
        ]
        for round_ in range(rounds):
            for workload in compared:
                add([workload], regimes, peers if round_ % 2 == 0 else peers[::-1])
    if name == "startup":
        # Issue #28: exec to first Binding with the backlog there first; 2,048 pods of 1 cpu,
        # 1,000 nodes (small: 100). Rounds interleaved, the peers' order alternating, so
        # that before/after (--peers ours@REV,ours) meet the same machine noise.
        nodes = 1_000 if big else 100
        for round_ in range(rounds):
            for size in sizes:
                if size <= 2_048:
                    add([wl.startup(2_048, size, nodes)], regimes,
                        peers if round_ % 2 == 0 else peers[::-1])  # fmt: skip
    if name in ("fairness", "fairness-late", "fairness-equal"):
        # fairness-late: team-b's whole backlog is submitted before team-a's; fairness-equal:
        # both backlogs 3x the cluster (first come would split it evenly).
        tenants = {"team-a": 1, "team-b": 3}
        backlog = (3.0 if name == "fairness-equal" else 1.5) if big else 1.0
        add([wl.fairness_contention(20 if big else 8, 8, (2, 4, 8), tenants, backlog, 2, 20.0,
                                    heaviest_first=name == "fairness-late",
                                    equal_backlogs=name == "fairness-equal")],
            regimes)  # fmt: skip
    if name == "preemption":
        # Issue #18: a full cluster of low gangs (8/4/2 pods), high gangs of 4/3/8/6/2/5
        # arriving one at a time; rounds for spread, peers inner-most.
        preemption_peers = [p for p in peers if p not in PREEMPTION_PEERS_EXCLUDED]
        for round_ in range(1, rounds + 1):
            add([wl.preemption(24, 8, {8: 5, 4: 8, 2: 12}, (4, 3, 8, 6, 2, 5), 2, 3,
                               round_=round_)], regimes, preemption_peers)  # fmt: skip
    if not suite.trials:
        raise SystemExit(f"unknown suite {name!r}")
    return suite


def machine() -> Json:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu_model": model,
        "memory_gib": round(mem / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def run_suite(
    suite: Suite, *, command: str, out_dir: Path, keep_logs: Path | None = None,
    progress: Progress | None = None, profile_dir: Path | None = None,
    keep_all_logs: Path | None = None,
) -> Path:  # fmt: skip
    """Run every trial of the suite, saving the results after each.

    ``keep_logs``: the logs of failed trials are copied there; ``keep_all_logs``: every
    trial's, with ours logging at info and the trial's pod watch written beside them.
    """
    progress = progress or Progress()
    progress.status("building or finding the binaries")
    # The scale suite's backlog is made by the ceiling binary's creator, whoever schedules.
    creator = {"ceiling"} if any(s.workload.kind == "scale" for s in suite.trials) else set()
    binaries, build_seconds = bench_build.ensure_built(
        report=progress.log, peers={spec.peer for spec in suite.trials} | creator
    )
    started = datetime.datetime.now(datetime.UTC)
    results: list[Json] = []
    scratch = Path(tempfile.mkdtemp(prefix="coscheduler-bench-"))
    versions = {
        "kubernetes (control plane, default, native)": e2e_versions.KUBERNETES,
        "etcd": e2e_versions.ETCD,
        "kwok": e2e_versions.KWOK,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{suite.name}-{started.strftime('%Y%m%d-%H%M%S')}.json"

    def save(*, complete: bool) -> None:
        # After every trial, so an interrupted or crashed run keeps the trials it finished.
        document = {
            "suite": suite.name,
            "command": command,
            "started": started.isoformat(timespec="seconds"),
            "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "complete": complete,
            "machine": machine(),
            "versions": versions,
            "build_seconds": build_seconds,
            "trials": results,
        }
        path.write_text(json.dumps(document, indent=1) + "\n")

    try:
        for index, spec in enumerate(suite.trials, 1):
            peer = make_peer(spec.peer)
            versions[peer.name] = peer.versions()
            title = (f"[{index}/{len(suite.trials)}] {spec.workload.kind}: {spec.workload.label}"
                     f" | {peer.name} | QPS {spec.regime.qps:g}/{spec.regime.burst}")  # fmt: skip
            progress.begin(title)
            trial_dir = scratch / f"trial-{index:03d}"
            result = _run_one(
                spec, peer, binaries, trial_dir, progress, profile_dir, index,
                keep_trace=keep_all_logs is not None,
            )  # fmt: skip
            results.append(result.to_json())
            save(complete=index == len(suite.trials))
            progress.end(result)
            kept = keep_all_logs or profile_dir or (keep_logs if not result.ok else None)
            if kept is not None:
                target = kept / f"trial-{index:03d}-{peer.name}"
                for source, name in (
                    (trial_dir / "logs", "logs"),
                    (trial_dir / "state" / "logs", "control-plane"),
                ):
                    if source.is_dir():
                        shutil.copytree(source, target / name, dirs_exist_ok=True)
                progress.log(f"logs of the trial kept in {target}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return path


def _run_one(
    spec: TrialSpec,
    peer: peers_mod.Peer,
    binaries: bench_build.PeerBinaries,
    trial_dir: Path,
    progress: Progress,
    profile_dir: Path | None = None,
    index: int = 0,
    *,
    keep_trace: bool = False,
) -> trial.TrialResult:
    workload = spec.workload
    state_dir = trial_dir / "state"
    cluster: Cluster | None = None
    try:
        progress.status(f"starting a control plane and {workload.nodes.count} KWOK nodes")
        t0 = time.monotonic()
        options = ClusterOptions(
            gang_api=True,
            # Each peer writes its own gang objects: the Job controller makes none (1.36+).
            job_workloads=False,
            startup_timeout_seconds=120,
            audit_policy=identity.AUDIT_POLICY,
            grace_periods=workload.grace_periods,
            node_lease_seconds=node_lease_seconds(workload.nodes.count),
        )
        for attempt in (1, 2, 3):
            try:
                cluster = Cluster.start(state_dir, options)
                break
            except StartupError as error:
                # Ports are picked free, then bound by the component: another process on
                # the machine may take one in between ("address already in use").
                if attempt == 3 or "address already in use" not in str(error):
                    raise
                progress.log("a port was taken under us; starting the control plane again")
        assert cluster is not None  # the loop either started one or raised
        shape = workload.nodes
        specs = [
            e2e_nodes.NodeSpec(name=f"kwok-node-{i}", cpu=shape.cpu, memory=shape.memory,
                               pods=shape.pods, labels=shape.labels(i))
            for i in range(shape.count)
        ]  # fmt: skip
        cluster.add_nodes(specs)
        # The reference's CRDs come with its build: absent when no trial runs it.
        crds = [OURS_CRD, OURS_QUEUE_CRD, *(c for c in binaries.reference_crds if c.is_file())]
        for crd in crds:
            cluster.kubectl("create", "-f", str(crd))
        names = [_crd_name(crd) for crd in crds]
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                        *(f"crd/{name}" for name in names))  # fmt: skip
        _wait_crd_storage(cluster, reference=len(crds) > 2)
        progress.log(f"cluster ready in {time.monotonic() - t0:.0f}s")
        ctx = PeerContext(
            binaries=binaries, work_dir=trial_dir / "peer",
            kubeconfig=identity.peer_kubeconfig(
                cluster.pki_dir, cluster.state.ports["apiserver"], trial_dir / "peer.kubeconfig"
            ),
            audit_log=cluster.logs_dir / "audit.log",
            qps=spec.regime.qps, burst=spec.regime.burst, log_dir=trial_dir / "logs",
            profile_dir=profile_dir,
            log_level="info" if workload.kind == "startup" or keep_trace else None,
            label=f"{index:03d}-{workload.kind}-{workload.params.get('gang_size', '')}-"
                  f"{workload.nodes.count}n-{spec.regime.name}",
        )  # fmt: skip
        result = asyncio.run(
            trial.run_trial(
                workload,
                peer,
                spec.regime,
                ctx,
                cluster.state.ports["apiserver"],
                cluster.pki_dir,
                progress,
                trace_dir=trial_dir / "logs" if keep_trace else None,
            )
        )
        if workload.kind == "startup" and isinstance(peer, peers_mod.Ours) and result.ok:
            # Ours' imports against the libraries' alone (issue #28): its tree, once the
            # trial's peer has stopped, beside the control plane as the trial had it.
            progress.status("measuring the libraries' import floor")
            try:
                result.figures["import_floor"] = import_floor.measure(
                    runtime_python(), peer.package().parent, runs=FLOOR_RUNS
                )
            except RuntimeError as error:  # the trial stands; the floor says why it is missing
                result.figures["import_floor"] = {"error": str(error)}
        return result
    except Exception as error:
        return trial.TrialResult(
            workload=workload.kind, label=workload.label, peer=peer.name, regime=spec.regime.name,
            qps=spec.regime.qps, burst=spec.regime.burst, params=workload.params, ok=False,
            failures=[f"{type(error).__name__}: {error}"],
        )  # fmt: skip
    finally:
        peer.stop()
        if cluster is not None:
            progress.status("stopping the control plane")
            cluster.stop()


def _crd_name(path: Path) -> str:
    """The metadata.name of the CRD in a manifest of one CRD."""
    return str(yaml.safe_load(path.read_text())["metadata"]["name"])


def _wait_crd_storage(cluster: Cluster, *, reference: bool, within: float = 60.0) -> None:
    """Wait until the group and queue kinds (the reference's too, if installed) can be listed.

    A CRD is Established before its storage serves: for a moment a list answers 429
    "storage is (re)initializing". In a real cluster the CRDs were installed long before
    the scheduler starts; so here too.
    """
    paths = [
        "/apis/scheduling.sigs.k8s.io/v1alpha1/podgroups",
        "/apis/scheduling.sigs.k8s.io/v1alpha1/queues",
        peers_mod.native_group_collection(),
    ]
    if reference:
        paths += [
            "/apis/scheduling.x-k8s.io/v1alpha1/podgroups",
            "/apis/scheduling.x-k8s.io/v1alpha1/elasticquotas",
        ]
    deadline = time.monotonic() + within
    for path in paths:
        while True:
            status, body = cluster.api.raw("GET", path + "?limit=1")
            if status == 200:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"GET {path} still answers {status} after {within:.0f}s: {body}")
            time.sleep(0.2)


def command_line() -> str:
    return "python -m bench " + " ".join(shlex.quote(a) for a in sys.argv[1:])


__all__ = ["ALL_PEERS", "RESULTS_DIR", "build_suite", "command_line", "run_suite"]
