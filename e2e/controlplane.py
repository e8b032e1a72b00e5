"""Start and stop a real control plane as local processes on 127.0.0.1.

Order of start, each step waiting for the previous one to be ready:
1. certificates (``e2e.pki``);
2. etcd, data in a temporary directory, no fsync (a test cluster needs no
   durability), ready when ``/health`` answers;
3. kube-apiserver with TLS, client-certificate authentication and RBAC, ready
   when ``/readyz`` answers 200 (RBAC's bootstrap roles are part of that);
4. the kubeconfig, then kube-controller-manager (ReplicaSets, Jobs, garbage
   collection, namespaces, service accounts and their tokens), ready when the
   ``default`` ServiceAccount exists (pods cannot be created before that);
5. KWOK with the pod stages of ``e2e.kwok_stages``, managing only nodes
   annotated ``kwok.x-k8s.io/node=fake`` (unless ``fake_nodes`` is off).

Stop is the reverse order, each process SIGTERMed, awaited, then killed. A
start that fails part-way stops what it started and says which component
failed, with the tail of its log. Every component logs to
``<state dir>/logs/<component>.log``.

A cluster can be owned (started by this Python process; its processes die with
it, and ``stop`` is called by fixtures) or detached (started by ``e2e.cluster
up``; it outlives the command, and ``state.json`` in its state directory lets
a later command find, use and stop it).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from e2e import build, kwok_stages, nodes, pki, versions
from e2e.api import ApiClient, write_kubeconfig
from e2e.processes import Process, ProcessRecord, StartupError, free_port, wait_until

SERVICE_CIDR = "10.0.0.0/24"
FIRST_SERVICE_IP = "10.0.0.1"
STATE_FILE = "state.json"

Reporter = Callable[[str], None]


def _quiet(message: str) -> None:
    del message


@dataclass(frozen=True)
class ClusterOptions:
    """Choices that change how the control plane is started."""

    gang_api: bool = False
    """Enable Kubernetes' own gang API of the running release (``versions.native_gang_*``)
    on the API server and the controller manager."""

    job_workloads: bool = False
    """With ``gang_api``, from 1.36 on: the Job controller gives each Job a Workload and a
    PodGroup of Kubernetes' own, and its pods ``spec.schedulingGroup`` (``WorkloadWithJob``)."""

    job_duration_seconds: float = 1.0
    """How long a Job's pod runs on a fake node before KWOK marks it Succeeded."""

    fake_nodes: bool = True
    """Run KWOK for fake nodes; off for a cluster that runs no pods (a MultiKueue manager)."""

    grace_periods: bool = False
    """KWOK removes a pod being deleted at its ``deletionTimestamp`` (its grace period
    after the deletion) rather than at once (``e2e.kwok_stages``, pod-delete)."""

    node_lease_seconds: int | None = None
    """KWOK's node Lease duration (renewed every quarter of it), with the controller
    manager's node grace period raised to match, and KWOK's stage and lease workers raised
    from 4 to 16. None: KWOK's 40 s and the controller manager's defaults. At 5,000 nodes
    the default renewals alone are 500 writes a second, which a 2-core API server cannot
    serve beside the work being measured: nodes then go NotReady. Also: KWOK plays our own
    node stages (``e2e.kwok_stages``), and new nodes get no not-ready taint."""

    startup_timeout_seconds: float = 90.0
    """Per component; generous because a loaded 2-core machine is slow to start Go servers."""

    apiserver_feature_gates: tuple[str, ...] = ()
    """More of the API server's feature gates, ``Name=true|false`` each: how a test meets a
    server without a feature (``WatchList=false``: no streaming watch-lists)."""

    audit_policy: str | None = None
    """An audit Policy (YAML); when set, kube-apiserver logs what it selects, as JSON lines,
    to ``<state dir>/logs/audit.log`` (the benchmarks count one client's requests so)."""

    def __post_init__(self) -> None:
        if self.job_workloads and not self.gang_api:
            raise ValueError("job_workloads needs gang_api: the Job's Workload is of that API")


@dataclass
class ClusterState:
    """Everything needed to find a running cluster again: written to ``state.json``."""

    state_dir: str
    data_dir: str
    kubeconfig: str
    ports: dict[str, int]
    options: dict[str, Any]
    processes: list[dict[str, Any]] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)

    def save(self) -> None:
        path = Path(self.state_dir) / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        tmp.rename(path)

    @classmethod
    def load(cls, state_dir: Path) -> ClusterState | None:
        path = state_dir / STATE_FILE
        if not path.is_file():
            return None
        return cls(**json.loads(path.read_text()))


class KubectlError(subprocess.CalledProcessError):
    """kubectl failed; unlike its base class, the message includes what kubectl said."""

    def __str__(self) -> str:
        command = " ".join(str(a) for a in self.cmd[2:])
        return f"kubectl {command} failed (exit {self.returncode}): {str(self.stderr).strip()}"


class Cluster:
    """A running local control plane; use ``Cluster.start`` or ``Cluster.attach``."""

    def __init__(self, state: ClusterState, processes: list[Process], *, owned: bool) -> None:
        self.state = state
        self.processes = processes
        self.owned = owned
        self.api = ApiClient(port=state.ports["apiserver"], pki=pki.Pki(self.pki_dir))
        # How each component was started, so that a fault can start it again (owned clusters).
        self._commands: dict[str, tuple[list[str], dict[str, str] | None, bool]] = {}

    # --- where things are ---------------------------------------------------------------------

    @property
    def state_dir(self) -> Path:
        return Path(self.state.state_dir)

    @property
    def pki_dir(self) -> Path:
        return self.state_dir / "pki"

    @property
    def logs_dir(self) -> Path:
        return self.state_dir / "logs"

    @property
    def kubeconfig(self) -> Path:
        return Path(self.state.kubeconfig)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.state.ports['apiserver']}"

    # --- life cycle ---------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        state_dir: Path,
        options: ClusterOptions = ClusterOptions(),
        *,
        detached: bool = False,
        report: Reporter = _quiet,
    ) -> Cluster:
        """Start every component (see the module docstring); stop them all if one fails."""
        binaries = build.binaries()
        state_dir.mkdir(parents=True, exist_ok=True)
        for stale in ("pki", "logs", STATE_FILE, "kwok.yaml", "kwok"):
            _remove(state_dir / stale)
        data_dir = Path(tempfile.mkdtemp(prefix="coscheduler-etcd-"))
        ports = {
            name: free_port()
            for name in ("etcd_client", "etcd_peer", "apiserver", "controller_manager", "kwok")
        }
        state = ClusterState(
            state_dir=str(state_dir),
            data_dir=str(data_dir),
            kubeconfig=str(state_dir / "kubeconfig"),
            ports=ports,
            options=asdict(options),
        )
        cluster = cls(state, [], owned=not detached)
        try:
            cluster._launch(binaries, options, detached=detached, report=report)
        except BaseException:
            cluster.stop()
            raise
        if not detached:
            atexit.register(cluster.stop)
        return cluster

    @classmethod
    def attach(cls, state_dir: Path) -> Cluster | None:
        """Find the detached cluster recorded in ``state_dir``, or None if there is none."""
        state = ClusterState.load(state_dir)
        if state is None:
            return None
        records = [ProcessRecord(**p) for p in state.processes]
        return cls(state, [Process.adopt(r) for r in records], owned=False)

    def is_running(self) -> bool:
        """True when every component still runs and the API server answers /readyz."""
        return all(p.is_running() for p in self.processes) and self.api.healthy()

    def stop(self) -> None:
        """Stop the components in reverse order, then remove the etcd data and credentials."""
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()
        _remove(Path(self.state.data_dir))
        for leftover in ("pki", "kwok", "kwok.yaml", STATE_FILE):
            _remove(self.state_dir / leftover)
        _remove(self.kubeconfig)
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- using it -----------------------------------------------------------------------------

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 60.0,
    ) -> subprocess.CompletedProcess[str]:
        """Run the built kubectl against this cluster and capture its output."""
        argv = [str(build.binaries().kubectl), f"--kubeconfig={self.kubeconfig}", *args]
        result = subprocess.run(
            argv, input=input, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and result.returncode != 0:
            raise KubectlError(result.returncode, argv, output=result.stdout, stderr=result.stderr)
        return result

    def apply(self, manifest: str | Path, *, namespace: str | None = None) -> str:
        """``kubectl apply`` YAML text or a file (server-side validation, as a user would)."""
        args = ["apply", "-f", str(manifest) if isinstance(manifest, Path) else "-"]
        if namespace:
            args += ["-n", namespace]
        text = None if isinstance(manifest, Path) else manifest
        return self.kubectl(*args, input=text).stdout

    def add_nodes(self, specs: Sequence[nodes.NodeSpec], *, wait_ready: bool = True) -> list[str]:
        return nodes.add_nodes(self.api, specs, wait_ready=wait_ready)

    def remove_nodes(self, names: Sequence[str], *, wait_gone: bool = True) -> None:
        nodes.remove_nodes(self.api, names, wait_gone=wait_gone)

    # --- faults of the control plane (only processes this harness started, by PID) ------------

    def component(self, name: str) -> Process:
        for process in self.processes:
            if process.name == name:
                return process
        raise KeyError(f"no component {name!r} in this cluster")

    def restart(self, name: str, *, down_seconds: float = 0.0, timeout: float = 90.0) -> None:
        """Stop a component (SIGTERM, then SIGKILL), wait ``down_seconds``, start it again.

        Returns once it is ready again (etcd: ``/health``; the API server: ``/readyz``).
        """
        if name not in self._commands:
            raise RuntimeError(f"{name} was not started by this process: it cannot be restarted")
        old = self.component(name)
        old.stop()
        time.sleep(down_seconds)
        new = self._spawn(name)
        self.processes[self.processes.index(old)] = new
        self._record_processes()
        wait_until(
            self._ready_check(name), timeout=timeout, what=f"{name} ready again", watch=[new]
        )

    @contextlib.contextmanager
    def paused(self, name: str) -> Iterator[None]:
        """SIGSTOP a component for the duration of the block, SIGCONT it after (also on error)."""
        process = self.component(name)
        process.pause()
        try:
            yield
        finally:
            process.resume()

    def pause(self, name: str, seconds: float) -> None:
        """SIGSTOP a component for ``seconds`` (bounded to a minute), then SIGCONT it."""
        with self.paused(name):
            time.sleep(min(seconds, 60.0))

    def _ready_check(self, name: str) -> Callable[[], bool]:
        if name == "etcd":
            return lambda: _http_ok(f"http://127.0.0.1:{self.state.ports['etcd_client']}/health")
        if name == "kube-apiserver":
            return self.api.healthy
        return self.component(name).is_running

    # --- starting the components --------------------------------------------------------------

    def _spawn(self, name: str) -> Process:
        argv, env, detached = self._commands[name]
        return Process.start(
            name, argv, log=self.logs_dir / f"{name}.log", env=env, die_with_parent=not detached
        )

    def _record_processes(self) -> None:
        self.state.processes = [asdict(p.record) for p in self.processes]
        self.state.save()

    def _launch(
        self,
        binaries: build.Binaries,
        options: ClusterOptions,
        *,
        detached: bool,
        report: Reporter,
    ) -> None:
        ports = self.state.ports
        timeout = options.startup_timeout_seconds
        material = pki.generate(self.pki_dir, service_ip=FIRST_SERVICE_IP)

        def launch(name: str, argv: list[str], env: dict[str, str] | None = None) -> Process:
            report(f"starting {name}")
            self._commands[name] = (argv, env, detached)
            process = self._spawn(name)
            self.processes.append(process)
            self._record_processes()
            return process

        started = time.monotonic()
        etcd = launch("etcd", _etcd_args(binaries.etcd, self.state))
        wait_until(
            lambda: _http_ok(f"http://127.0.0.1:{ports['etcd_client']}/health"),
            timeout=timeout,
            what="etcd to answer /health",
            watch=[etcd],
        )
        apiserver = launch(
            "kube-apiserver", _apiserver_args(binaries, self.state, material, options)
        )
        wait_until(
            self.api.healthy,
            timeout=timeout,
            what="kube-apiserver to answer /readyz with 200",
            watch=[etcd, apiserver],
        )
        write_kubeconfig(self.kubeconfig, port=ports["apiserver"], pki=material)
        manager = launch(
            "kube-controller-manager", _manager_args(binaries, self.state, material, options)
        )
        wait_until(
            lambda: (
                self.api.get_or_none("/api/v1/namespaces/default/serviceaccounts/default")
                is not None
            ),
            timeout=timeout,
            what="kube-controller-manager to create the default ServiceAccount",
            watch=[apiserver, manager],
        )
        if options.fake_nodes:
            config = self.state_dir / "kwok.yaml"
            config.write_text(
                kwok_stages.config_yaml(
                    job_duration_seconds=options.job_duration_seconds,
                    grace_periods=options.grace_periods,
                    node_lease_seconds=options.node_lease_seconds,
                )
            )
            # KWOK_WORKDIR: kwok would otherwise also read the user's ~/.kwok/kwok.yaml.
            workdir = self.state_dir / "kwok"
            kwok = launch(
                "kwok", _kwok_args(binaries, self.state, config), env={"KWOK_WORKDIR": str(workdir)}
            )
            wait_until(
                lambda: _http_ok(f"http://127.0.0.1:{ports['kwok']}/healthz"),
                timeout=timeout,
                what="kwok to answer /healthz",
                watch=[apiserver, kwok],
            )
        report(f"control plane ready in {time.monotonic() - started:.1f}s at {self.server}")


# --- command lines ----------------------------------------------------------------------------


def _etcd_args(binary: Path, state: ClusterState) -> list[str]:
    client = f"http://127.0.0.1:{state.ports['etcd_client']}"
    peer = f"http://127.0.0.1:{state.ports['etcd_peer']}"
    return [
        str(binary),
        "--name=e2e",
        f"--data-dir={state.data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=e2e={peer}",
        "--initial-cluster-state=new",
        "--unsafe-no-fsync=true",
        "--log-level=warn",
    ]


def _gang_gates(options: ClusterOptions) -> str:
    return versions.native_gang_feature_gates(job_workloads=options.job_workloads)


def _apiserver_args(
    binaries: build.Binaries, state: ClusterState, material: pki.Pki, options: ClusterOptions
) -> list[str]:
    args = [
        str(binaries.kube_apiserver),
        f"--etcd-servers=http://127.0.0.1:{state.ports['etcd_client']}",
        "--bind-address=127.0.0.1",
        f"--secure-port={state.ports['apiserver']}",
        "--advertise-address=127.0.0.1",
        "--endpoint-reconciler-type=none",
        f"--cert-dir={material.directory}",
        f"--tls-cert-file={material.serving_cert}",
        f"--tls-private-key-file={material.serving_key}",
        f"--client-ca-file={material.ca_cert}",
        "--authorization-mode=RBAC",
        "--anonymous-auth=false",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={material.service_account_public_key}",
        f"--service-account-signing-key-file={material.service_account_key}",
        "--allow-privileged=true",
        "--profiling=false",
        "--v=1",
    ]
    gates = [_gang_gates(options)] if options.gang_api else []
    gates += options.apiserver_feature_gates
    if gates:
        args.append(f"--feature-gates={','.join(gates)}")
    if options.gang_api:
        args.append(f"--runtime-config={versions.native_gang_runtime_config()}")
    if options.node_lease_seconds is not None:
        # Its not-ready taint on every new node is lifted by the node lifecycle controller
        # a node at a time (7 a second here at 5,000 nodes); KWOK makes them Ready at once.
        args.append("--disable-admission-plugins=TaintNodesByCondition")
    if options.audit_policy:
        policy = Path(state.state_dir) / "audit-policy.yaml"
        policy.write_text(options.audit_policy)
        log = Path(state.state_dir) / "logs" / "audit.log"
        args += [
            f"--audit-policy-file={policy}",
            f"--audit-log-path={log}",
            "--audit-log-format=json",
        ]
    return args


def _manager_args(
    binaries: build.Binaries, state: ClusterState, material: pki.Pki, options: ClusterOptions
) -> list[str]:
    kubeconfig = state.kubeconfig
    gates = [f"--feature-gates={_gang_gates(options)}"] if options.gang_api else []
    return [
        str(binaries.kube_controller_manager),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={state.ports['controller_manager']}",
        "--leader-elect=false",
        f"--service-account-private-key-file={material.service_account_key}",
        f"--root-ca-file={material.ca_cert}",
        f"--cluster-signing-cert-file={material.ca_cert}",
        f"--cluster-signing-key-file={material.ca_key}",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        "--profiling=false",
        "--v=1",
        *gates,
        *_node_grace_args(options),
    ]


def _node_grace_args(options: ClusterOptions) -> list[str]:
    """A node is judged unhealthy only well after its Lease's renewal is due."""
    if options.node_lease_seconds is None:
        return []
    return [f"--node-monitor-grace-period={options.node_lease_seconds}s"]


def _kwok_args(binaries: build.Binaries, state: ClusterState, config: Path) -> list[str]:
    return [
        str(binaries.kwok),
        f"--kubeconfig={state.kubeconfig}",
        f"--config={config}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={nodes.KWOK_SELECTOR}",
        f"--server-address=127.0.0.1:{state.ports['kwok']}",
        "--node-ip=127.0.0.1",
    ]


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


__all__ = ["Cluster", "ClusterOptions", "ClusterState", "KubectlError", "StartupError"]
