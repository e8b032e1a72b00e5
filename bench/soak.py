"""``python -m bench soak``: hours of gang churn under faults, invariants watched throughout.

One control plane (``e2e``), a few hundred KWOK nodes, two ``coscheduler run``
replicas with leader election behind the fault proxy (``e2e/faultproxy.py``),
and one driver loop (this module, single-threaded so that a run is easy to
follow and replay) that, until the time is up:

* submits gangs (a PodGroup and a Job whose pods KWOK completes after a
  while) of mixed sizes and priorities at random, keeping the requested cpu
  under 90 % of the cluster's;
* deletes each gang once all its pods have succeeded (a gang completed);
* alternates quiet spells with faults, each of a kind drawn from
  ``--faults``: the proxy's (``e2e/faultrun.py``), the control plane's, and
  ``scheduler_kill`` (SIGKILL the replica holding the Lease, start it again a
  moment later); a replica that exits on its own (it lost the Lease) is
  started again, as a Deployment would;
* samples the invariants of ``e2e/invariants.py`` every few seconds and each
  replica's RSS.

At the end it stops the faults and arrivals, waits for the work to finish,
checks the quiet invariants, and prints and saves (``bench/results/soak/<date>/``:
``summary.json``, ``summary.md``, ``rss.png``) the gangs completed, the faults
by kind, the violations (expected: none), the longest time a gang stayed
partly bound, the scheduling stalls, and RSS over time. Every random choice
comes from ``--seed``.

A *stall* is a spell of at least ``STALL_SECONDS`` during which pods of ours
were pending and none was bound; it is reported (with whether a fault was
active), not judged: a full cluster also stalls.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import random
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.progress import Progress
from e2e import build, nodes
from e2e import workloads as w
from e2e.api import ApiError, Json
from e2e.controlplane import Cluster, ClusterOptions
from e2e.faultproxy import FaultProxy
from e2e.faultrun import ALL_FAULTS, CONTROL_PLANE_FAULTS, PROXY_FAULTS, control_plane_fault
from e2e.faultrun import sample as sample_invariants
from e2e.invariants import InvariantChecker, RssSampler, double_bindings, rss_growth
from e2e.pki import Pki
from e2e.scheduler import SchedulerProcess
from e2e.waiting import wait_for

REPO = Path(__file__).resolve().parents[1]
CRD = REPO / "crds" / "podgroups.yaml"
SOAK_DIR = REPO / "bench" / "results" / "soak"
NAMESPACE = "soak"
POOL = "soak"
KILL = "scheduler_kill"
SOAK_FAULTS = (*ALL_FAULTS, KILL)

STALL_SECONDS = 30.0
PARTIAL_BOUND_SECONDS = 60.0
SAMPLE_SECONDS = 3.0
QUIET_SECONDS = (20.0, 60.0)
FAULT_SECONDS = (5.0, 15.0)
ARRIVAL_MEAN_SECONDS = 2.0
LOAD_LIMIT = 0.9
GANG_SIZES = (1, 2, 4, 8, 16, 32)
GANG_SIZE_WEIGHTS = (3, 3, 3, 2, 1, 0.5)
POD_CPUS = (1, 2, 4)
PRIORITIES = {"soak-low": 10, "soak-mid": 100, "soak-high": 1000}
RUN_SECONDS = (10.0, 60.0)
DRAIN_SECONDS = 600.0
LEASE_FLAGS = (
    "--lease-namespace",
    NAMESPACE,
    "--lease-duration-seconds",
    "6",
    "--renew-deadline-seconds",
    "4",
    "--retry-period-seconds",
    "1",
)


@dataclass
class SoakOptions:
    minutes: float
    faults: tuple[str, ...]
    seed: int
    nodes: int = 200
    node_cpu: int = 8
    out: Path = SOAK_DIR


@dataclass
class Gang:
    name: str
    size: int
    cpu: int
    priority: str
    submitted: float
    done: bool = False


@dataclass
class Replica:
    """One scheduler replica; started again whenever it is not running (a Deployment's job)."""

    name: str
    process: SchedulerProcess
    kills: int = 0
    exits: int = 0
    held_down: bool = False
    """Killed by a fault and not to be started again yet (the fault starts it)."""

    def ensure_running(self) -> bool:
        """Start it again if it exited on its own; True when it did."""
        if self.held_down or self.process.alive():
            return False
        self.exits += 1
        self.process.start(wait_ready=False)
        return True


@dataclass
class Record:
    """What the soak saw, saved as summary.json."""

    options: dict[str, Any]
    started: str
    command: str
    gangs_submitted: int = 0
    gangs_completed: int = 0
    pods_submitted: int = 0
    arrivals_refused: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    fault_log: list[tuple[float, float, str, str]] = field(default_factory=list)
    """(start, end, kind, what) in seconds since the start."""
    kills: list[tuple[float, str]] = field(default_factory=list)
    replica_exits: int = 0
    stalls: list[tuple[float, float, bool]] = field(default_factory=list)
    """(start, seconds, a fault was active) of each stall."""
    violations: list[str] = field(default_factory=list)
    longest_partial_seconds: float = 0.0
    binding_conflicts: int = 0
    bindings_unknown: int = 0
    proxy: dict[str, Any] = field(default_factory=dict)
    rss: dict[str, list[tuple[float, int, float]]] = field(default_factory=dict)
    samples: int = 0
    drained: bool = False
    wall_seconds: float = 0.0


class Soak:
    def __init__(self, options: SoakOptions, progress: Progress, command: str) -> None:
        self.options = options
        self.progress = progress
        self.rng = random.Random(options.seed)
        self.record = Record(
            options={**options.__dict__, "out": str(options.out)},
            started=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            command=command,
        )
        self.gangs: dict[str, Gang] = {}
        self.replicas: list[Replica] = []
        self.rss = {name: RssSampler() for name in ("r0", "r1")}
        self.t0 = time.monotonic()
        self._bound_uids: set[str] = set()
        self._last_progress = time.monotonic()
        self._stall_started: float | None = None
        self._fault_active = False
        self._stall_had_fault = False

    def now(self) -> float:
        return time.monotonic() - self.t0

    # -- setting up ----------------------------------------------------------------------------

    def prepare(self, cluster: Cluster) -> None:
        cluster.apply(CRD)
        wait_for(
            lambda: cluster.api.get_or_none(f"{w.PODGROUPS.format(ns='default')}") is not None,
            describe="the PodGroup CRD served",
            timeout=60,
        )
        cluster.api.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )
        wait_for(
            lambda: cluster.api.get_or_none(
                f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default"
            ),
            describe="the soak namespace's ServiceAccount",
            timeout=60,
        )
        for name, value in PRIORITIES.items():
            cluster.api.create(
                "/apis/scheduling.k8s.io/v1/priorityclasses",
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                },
            )
        specs = [
            nodes.NodeSpec(
                name=f"soak-{i}", cpu=str(self.options.node_cpu), labels={w.POOL_LABEL: POOL}
            )
            for i in range(self.options.nodes)
        ]
        self.progress.log(f"adding {len(specs)} KWOK nodes")
        cluster.add_nodes(specs)

    def start_replicas(self, kubeconfig: Path, logs: Path) -> None:
        for name in ("r0", "r1"):
            process = SchedulerProcess(
                kubeconfig=kubeconfig,
                log_path=logs / f"coscheduler-{name}.log",
                args=[
                    "--namespace",
                    NAMESPACE,
                    "--identity",
                    name,
                    *LEASE_FLAGS,
                    "--backoff-max-seconds",
                    "5",
                    "--request-timeout-seconds",
                    "5",
                    "--metrics-port",
                    "0",
                ],
            )
            process.start(wait_ready=False)
            self.replicas.append(Replica(name, process))
        wait_for(
            lambda: any('"event": "scheduling"' in r.process.log() for r in self.replicas),
            describe="a replica to lead and schedule",
            timeout=120,
        )

    # -- the workload --------------------------------------------------------------------------

    def capacity(self) -> int:
        return self.options.nodes * self.options.node_cpu

    def outstanding_cpu(self) -> int:
        return sum(g.size * g.cpu for g in self.gangs.values() if not g.done)

    def submit(self, cluster: Cluster) -> None:
        size = self.rng.choices(GANG_SIZES, GANG_SIZE_WEIGHTS)[0]
        cpu = self.rng.choice(POD_CPUS)
        if self.outstanding_cpu() + size * cpu > LOAD_LIMIT * self.capacity():
            return
        priority = self.rng.choice(list(PRIORITIES))
        run = round(self.rng.uniform(*RUN_SECONDS), 1)
        name = f"g{self.record.gangs_submitted:05d}"
        try:
            w.create_podgroup(cluster.api, NAMESPACE, name, size)
            w.create_job(
                cluster.api,
                NAMESPACE,
                name,
                parallelism=size,
                pool=POOL,
                cpu=str(cpu),
                group=name,
                run_seconds=run,
                priority_class=priority,
            )
        except (ApiError, OSError) as error:
            self.record.arrivals_refused += 1
            self.progress.log(f"arrival {name} refused: {error}")
            with contextlib.suppress(ApiError, OSError):
                cluster.api.delete(f"{w.PODGROUPS.format(ns=NAMESPACE)}/{name}")
            return
        self.gangs[name] = Gang(name, size, cpu, priority, self.now())
        self.record.gangs_submitted += 1
        self.record.pods_submitted += size

    def reap(self, cluster: Cluster, pods: list[Json]) -> None:
        """Delete gangs whose every pod succeeded; watch progress for stalls."""
        succeeded: Counter[str] = Counter()
        pending = 0
        for pod in pods:
            group = (pod["metadata"].get("labels") or {}).get(w.GROUP_LABEL)
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Succeeded" and group:
                succeeded[group] += 1
            if (pod.get("spec") or {}).get("nodeName"):
                if pod["metadata"]["uid"] not in self._bound_uids:
                    self._bound_uids.add(pod["metadata"]["uid"])
                    self._last_progress = time.monotonic()
            elif not pod["metadata"].get("deletionTimestamp"):
                pending += 1
        self._track_stall(pending)
        for gang in self.gangs.values():
            if gang.done or succeeded[gang.name] < gang.size:
                continue
            try:
                cluster.api.request(
                    "DELETE",
                    f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{gang.name}"
                    "?propagationPolicy=Background",
                    ok=(200, 202, 404),
                )
                cluster.api.delete(f"{w.PODGROUPS.format(ns=NAMESPACE)}/{gang.name}")
            except (ApiError, OSError):
                continue  # next look
            gang.done = True
            self.record.gangs_completed += 1

    def _track_stall(self, pending: int) -> None:
        now = time.monotonic()
        stalled = pending > 0 and now - self._last_progress >= STALL_SECONDS
        if stalled and self._stall_started is None:
            self._stall_started = self._last_progress
            self._stall_had_fault = self._fault_active
        elif stalled:
            self._stall_had_fault |= self._fault_active
        elif self._stall_started is not None:
            self.record.stalls.append(
                (
                    round(self._stall_started - self.t0, 1),
                    round(now - self._stall_started, 1),
                    self._stall_had_fault,
                )
            )
            self._stall_started = None

    # -- faults --------------------------------------------------------------------------------

    def leader(self, cluster: Cluster) -> Replica | None:
        with contextlib.suppress(ApiError, OSError):
            lease = cluster.api.get(
                f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/coscheduler"
            )
            holder = (lease.get("spec") or {}).get("holderIdentity")
            for replica in self.replicas:
                if replica.name == holder:
                    return replica
        return None

    def fault(
        self, cluster: Cluster, proxy: FaultProxy, checker: InvariantChecker, kind: str
    ) -> None:
        """Do one fault of ``kind``, sampling while it lasts; return when it is over."""
        started = self.now()
        self._fault_active = True
        checker.fault_started()
        what = kind
        try:
            if kind in PROXY_FAULTS:
                seconds = self.rng.uniform(*FAULT_SECONDS)
                proxy.inject(list(PROXY_FAULTS[kind]), seed=self.rng.randrange(2**31))
                what = f"{kind} for {seconds:.0f}s"
                self.idle(cluster, checker, seconds)
                proxy.calm()
            elif kind in CONTROL_PLANE_FAULTS:
                what = control_plane_fault(cluster, kind, self.rng)
            elif kind == KILL:
                victim = self.leader(cluster) or self.rng.choice(self.replicas)
                victim.held_down = True
                victim.process.kill()
                victim.kills += 1
                self.record.kills.append((round(self.now(), 1), victim.name))
                try:
                    self.idle(cluster, checker, self.rng.uniform(0.5, 3.0))
                finally:
                    victim.held_down = False
                if not victim.process.alive():
                    victim.process.start(wait_ready=False)
                what = f"SIGKILL {victim.name} (leader), started again"
        finally:
            self._fault_active = False
            checker.fault_ended()
        self.record.faults[kind] += 1
        self.record.fault_log.append((round(started, 1), round(self.now(), 1), kind, what))
        self.progress.log(f"fault: {what}")

    # -- the loop ------------------------------------------------------------------------------

    def look(self, cluster: Cluster, checker: InvariantChecker) -> None:
        for violation in sample_invariants(checker):
            self.progress.log(f"VIOLATION {violation}")
        for replica in self.replicas:
            if replica.ensure_running():
                self.record.replica_exits += 1
                self.progress.log(f"replica {replica.name} had exited: started again")
            self.rss[replica.name].sample(replica.process.pid)
        with contextlib.suppress(ApiError, OSError):
            self.reap(cluster, w.list_pods(cluster.api, NAMESPACE))

    def idle(self, cluster: Cluster, checker: InvariantChecker, seconds: float) -> None:
        """Submit arrivals and look at the cluster for ``seconds``."""
        deadline = time.monotonic() + seconds
        next_look = 0.0
        while time.monotonic() < deadline:
            if time.monotonic() >= next_look:
                self.look(cluster, checker)
                next_look = time.monotonic() + SAMPLE_SECONDS
            if self.arrivals_open:
                self.submit(cluster)
            time.sleep(min(self.rng.expovariate(1 / ARRIVAL_MEAN_SECONDS), 10.0))

    arrivals_open = True

    def run(self, cluster: Cluster, proxy: FaultProxy, checker: InvariantChecker) -> None:
        end = self.options.minutes * 60
        kinds = self.options.faults
        while self.now() < end:
            self.idle(cluster, checker, min(self.rng.uniform(*QUIET_SECONDS), end - self.now()))
            if self.now() >= end or not kinds:
                break
            self.fault(cluster, proxy, checker, self.rng.choice(kinds))
        self.arrivals_open = False
        self.progress.log("time is up: no more faults or arrivals; draining")
        deadline = time.monotonic() + DRAIN_SECONDS
        while time.monotonic() < deadline and not all(g.done for g in self.gangs.values()):
            self.idle(cluster, checker, SAMPLE_SECONDS)
        self.record.drained = all(g.done for g in self.gangs.values())
        if not self.record.drained:
            left = [g.name for g in self.gangs.values() if not g.done]
            self.record.violations.append(
                f"not drained: {len(left)} gangs unfinished after {DRAIN_SECONDS:.0f}s: {left[:10]}"
            )

    def finish(self, checker: InvariantChecker, proxy: FaultProxy) -> None:
        checker.settle(timeout=60)
        stats = proxy.stats()
        conflicts, unknown, doubles = double_bindings(stats)
        checker.violations += doubles
        samples = [s for sampler in self.rss.values() for s in sampler.samples]
        checker.violations += rss_growth(samples)
        record = self.record
        record.binding_conflicts, record.bindings_unknown = conflicts, unknown
        # The per-pod journal of Bindings is judged above; only pods with a 409 are kept.
        record.proxy = {k: v for k, v in stats.items() if k != "bindings"}
        record.proxy["bindings_with_409"] = {
            path: outcomes
            for path, outcomes in (stats.get("bindings") or {}).items()
            if any(o.startswith("409") for o in outcomes)
        }
        record.violations += [str(v) for v in checker.violations]
        record.longest_partial_seconds = round(checker.longest_partial_seconds, 1)
        record.samples = checker.samples
        record.rss = {name: sampler.samples for name, sampler in self.rss.items()}
        record.wall_seconds = round(self.now(), 1)


def run_soak(options: SoakOptions, *, command: str) -> tuple[Path, Record]:
    """Run one soak; return the directory of its results and what it saw."""
    progress = Progress()
    build.ensure_built()
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    out = options.out / stamp
    out.mkdir(parents=True, exist_ok=True)
    state = Path(tempfile.mkdtemp(prefix="coscheduler-soak-"))
    soak = Soak(options, progress, command)
    progress.log(
        f"soak: {options.minutes:g} min, faults {','.join(options.faults)}, seed {options.seed}"
    )
    cluster = Cluster.start(state, ClusterOptions(), report=progress.log)
    proxy: FaultProxy | None = None
    try:
        soak.prepare(cluster)
        proxy = FaultProxy.start(
            upstream_port=cluster.state.ports["apiserver"],
            pki=Pki(cluster.pki_dir),
            directory=state,
        )
        soak.start_replicas(proxy.kubeconfig, state / "logs")
        checker = InvariantChecker(
            cluster.api, lambda: [NAMESPACE], partial_bound_seconds=PARTIAL_BOUND_SECONDS
        )
        soak.t0 = time.monotonic()
        soak.run(cluster, proxy, checker)
        soak.finish(checker, proxy)
    finally:
        for replica in soak.replicas:
            replica.process.stop()
        if proxy is not None:
            proxy.stop()
        cluster.stop()
        for log in (state / "logs").glob("coscheduler-*.log"):
            shutil.copy(log, out / log.name)
        shutil.rmtree(state, ignore_errors=True)
    write_results(out, soak.record)
    return out, soak.record


def _jsonable(record: Record) -> dict[str, Any]:
    return {k: dict(v) if isinstance(v, Counter) else v for k, v in record.__dict__.items()}


def summary_lines(record: Record) -> list[str]:
    stalls = record.stalls
    quiet_stalls = [s for s in stalls if not s[2]]
    rss_end = {
        name: f"{series[0][2]:.0f} -> {max(s[2] for s in series):.0f} -> {series[-1][2]:.0f} MiB"
        for name, series in record.rss.items()
        if series
    }
    return [
        f"- command: `{record.command}`",
        f"- wall time: {record.wall_seconds / 60:.1f} min; invariant samples: {record.samples}",
        f"- gangs submitted / completed: {record.gangs_submitted} / {record.gangs_completed} "
        f"({record.pods_submitted} pods); arrivals refused by the API server: "
        f"{record.arrivals_refused}; drained at the end: {record.drained}",
        "- faults by kind: "
        + ", ".join(f"{k} {v}" for k, v in sorted(record.faults.items()))
        + f" (scheduler SIGKILLs: {len(record.kills)}; replicas that exited on their own, "
        f"e.g. on losing the Lease, and were started again: {record.replica_exits})",
        f"- **violations: {len(record.violations)}**"
        + "".join(f"\n  - {v}" for v in record.violations),
        f"- longest time a gang stayed partly bound: {record.longest_partial_seconds:.1f} s",
        f"- 409s on Bindings: {record.binding_conflicts}, Bindings whose outcome the scheduler "
        f"could not know (lost answers, clients or servers gone): {record.bindings_unknown}",
        f"- scheduling stalls (>= {STALL_SECONDS:.0f} s with pods pending and none bound): "
        f"{len(stalls)}, of which without any fault during it: {len(quiet_stalls)}"
        + (f"; longest {max(s[1] for s in stalls):.0f} s" if stalls else ""),
        "- RSS (first -> max -> last, per replica name, across restarts): "
        + ", ".join(f"{k} {v}" for k, v in rss_end.items()),
    ]


def write_results(out: Path, record: Record) -> None:
    (out / "summary.json").write_text(json.dumps(_jsonable(record), indent=1) + "\n")
    lines = summary_lines(record)
    plot = _plot_rss(out, record)
    if plot:
        lines.append(f"- RSS over time: `{plot.name}` beside this summary")
    (out / "summary.md").write_text("\n".join(lines) + "\n")


def _plot_rss(out: Path, record: Record) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(10, 4))
    for start, end, _, _ in record.fault_log:
        ax.axvspan(start / 60, end / 60, color="tab:red", alpha=0.08, linewidth=0)
    for at, _ in record.kills:
        ax.axvline(at / 60, color="black", linewidth=0.6, linestyle=":")
    for name, series in record.rss.items():
        # One line per process: a restarted replica starts a new line.
        by_pid: dict[int, list[tuple[float, float]]] = {}
        for at, pid, mib in series:
            by_pid.setdefault(pid, []).append((at / 60, mib))
        for index, points in enumerate(by_pid.values()):
            ax.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                color="tab:blue" if name == "r0" else "tab:orange",
                label=name if index == 0 else None,
                linewidth=1,
            )
    ax.set_xlabel("minutes (shaded: a fault; dotted: a scheduler SIGKILLed)")
    ax.set_ylabel("RSS (MiB)")
    ax.set_title("coscheduler replicas' resident memory during the soak")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "rss.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def parse_faults(text: str) -> tuple[str, ...]:
    if text == "all":
        return SOAK_FAULTS
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in SOAK_FAULTS]
    if unknown:
        raise ValueError(
            f"unknown fault kinds {unknown}; choose from all, {', '.join(SOAK_FAULTS)}"
        )
    return kinds
