"""``make demo``: a sandbox cluster with coscheduler placing real gangs.

``python -m e2e.demo`` (or ``up``):

1. builds the local control plane the first time (minutes, with progress),
   else takes it from the cache;
2. starts the sandbox (or reuses the running one) with Kubernetes' own gang
   API on (``ClusterOptions(gang_api=True)``), 5 general nodes of 8 cpu and
   2 GPU nodes (4 ``nvidia.com/gpu`` each, tainted);
3. installs the PodGroup and Queue CRDs and starts ``coscheduler run`` in the
   background (its log in ``.e2e/logs/coscheduler.log``) with its dashboard,
   whose address it prints;
4. applies examples from ``manifests/examples/`` in namespace ``demo``: the
   seed gang, a GPU gang, two contending Jobs of which only one fits, and a
   gang made with Kubernetes' own PodGroup (``native-gang.yaml``);
5. shows ``kubectl get pg,podgroups.scheduling.k8s.io,pods -o wide`` as they
   change (``pg`` is ours: the plural ``podgroups`` names Kubernetes' own
   kind on a cluster serving it), then ``kubectl describe pg`` of a waiting
   gang and of a running one, and ``kubectl describe podgroup`` of the
   native gang (the status coscheduler writes there);
5b. adds 3 nodes and applies ``teams.yaml`` (two teams' Queues and their
   Jobs), then shows ``kubectl get queues`` and ``kubectl describe queue``;
6. leaves everything running and says how to explore and how to stop.

``python -m e2e.demo down`` stops coscheduler and the sandbox.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from e2e import build, nodes
from e2e.cluster import default_state_dir
from e2e.controlplane import Cluster, ClusterOptions
from e2e.scheduler import SchedulerProcess
from e2e.waiting import wait_for

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "manifests" / "examples"
NAMESPACE = "demo"
SHOWN = ("seed-gang.yaml", "gpu-gang.yaml", "contention-pair.yaml")
#: Applied where Kubernetes' own PodGroup v1beta1 is served (1.37 with the gang API).
NATIVE_EXAMPLE = "native-gang.yaml"
#: Ours are ``pg`` (or ``podgroups.scheduling.sigs.k8s.io``): on a cluster serving
#: Kubernetes' own PodGroup, ``podgroup`` names that kind.
OURS = "pg"
NATIVE = "podgroups.scheduling.k8s.io"
NATIVE_GANG = "native-train"
#: The condition coscheduler writes on Kubernetes' own PodGroup once it is placed.
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"


def _say(message: str) -> None:
    print(f"\n\033[1m==> {message}\033[0m", flush=True)


def _sandbox(state_dir: Path) -> Cluster:
    cluster = Cluster.attach(state_dir)
    if cluster is not None and cluster.is_running():
        if cluster.state.options.get("gang_api"):
            _say(f"reusing the running sandbox at {cluster.server}")
            return cluster
        _say("the running sandbox lacks Kubernetes' own gang API: starting it again")
    if cluster is not None:
        _stop_scheduler(state_dir)
        cluster.stop()
    _say("building (first time only) and starting the sandbox control plane")
    build.ensure_built()
    # The gang API of the release (scheduling.k8s.io PodGroups) for native-gang.yaml.
    cluster = Cluster.start(state_dir, ClusterOptions(gang_api=True), detached=True,
                            report=lambda m: print(f"    {m}", flush=True))  # fmt: skip
    general = [nodes.NodeSpec(name=f"general-{i}", cpu="8", memory="32Gi") for i in range(5)]
    gpu = [
        nodes.NodeSpec(
            name=f"gpu-{i}", cpu="16", memory="64Gi", gpus=4,
            labels={"accelerator": "nvidia"},
            taints=(nodes.Taint.parse("nvidia.com/gpu=present:NoSchedule"),),
        )
        for i in range(2)
    ]  # fmt: skip
    print("    adding 5 general nodes (8 cpu) and 2 GPU nodes (4 nvidia.com/gpu, tainted)")
    cluster.add_nodes([*general, *gpu])
    return cluster


def _pid_file(state_dir: Path) -> Path:
    return state_dir / "coscheduler.pid"


def _stop_scheduler(state_dir: Path) -> None:
    pid_file = _pid_file(state_dir)
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.2)
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    pid_file.unlink(missing_ok=True)


def _scheduler(cluster: Cluster, state_dir: Path) -> SchedulerProcess:
    _stop_scheduler(state_dir)
    log = cluster.logs_dir / "coscheduler.log"
    log.unlink(missing_ok=True)
    process = SchedulerProcess(
        kubeconfig=cluster.kubeconfig,
        log_path=log,
        args=["--no-leader-elect", "--metrics-port", "0", "--dashboard", "--dashboard-port", "0"],
    ).start()
    _pid_file(state_dir).write_text(str(process.pid))
    return process


def _dashboard(process: SchedulerProcess) -> str:
    return f"http://127.0.0.1:{process.dashboard_port}/"


def _kubectl(cluster: Cluster, *args: str) -> str:
    return cluster.kubectl(*args, check=False).stdout


def _native_served(cluster: Cluster) -> bool:
    return cluster.api.get_or_none(f"/apis/{NATIVE.split('.', 1)[1]}/v1beta1") is not None


def _show(cluster: Cluster, title: str) -> None:
    kinds = f"{OURS},{NATIVE},pods" if _native_served(cluster) else f"{OURS},pods"
    print(f"\n--- {title}: kubectl get {kinds} -n {NAMESPACE} -o wide", flush=True)
    print(_kubectl(cluster, "get", kinds, "-n", NAMESPACE, "-o", "wide"), flush=True)


def _phase(cluster: Cluster, group: str) -> str:
    return _kubectl(cluster, "get", OURS, group, "-n", NAMESPACE,
                    "-o", "jsonpath={.status.phase}").strip()  # fmt: skip


def _native_placed(cluster: Cluster, group: str) -> bool:
    jsonpath = f"jsonpath={{.status.conditions[?(@.type=='{INITIALLY_SCHEDULED}')].status}}"
    status = _kubectl(cluster, "get", NATIVE, group, "-n", NAMESPACE, "-o", jsonpath)
    return status.strip() == "True"


def up(state_dir: Path, *, watch_seconds: float) -> int:
    cluster = _sandbox(state_dir)
    _say("installing the CRDs: kubectl apply -f crds/podgroups.yaml -f crds/queues.yaml")
    print(_kubectl(cluster, "apply", "-f", str(REPO / "crds" / "podgroups.yaml"),
                   "-f", str(REPO / "crds" / "queues.yaml")), end="")  # fmt: skip
    for crd in ("podgroups.scheduling.sigs.k8s.io", "queues.scheduling.sigs.k8s.io"):
        wait_for(
            partial(_kubectl, cluster, "get", "crd", crd, "-o",
                    "jsonpath={.status.conditions[?(@.type=='Established')].status}"),
            lambda status: status.strip() == "True",
            describe=f"the CRD {crd} to be established",
        )  # fmt: skip
    _say("starting coscheduler run in the background")
    process = _scheduler(cluster, state_dir)
    print(f"    pid {process.pid}, log {process.log_path}")
    print(f"    the dashboard (read-only, live): {_dashboard(process)}")

    native = _native_served(cluster)
    shown = (*SHOWN, NATIVE_EXAMPLE) if native else SHOWN
    _say(f"applying examples in namespace {NAMESPACE}: {', '.join(shown)}")
    _kubectl(cluster, "create", "namespace", NAMESPACE)
    wait_for(lambda: _kubectl(cluster, "get", "serviceaccount", "default", "-n", NAMESPACE),
             describe="the demo namespace's default ServiceAccount")  # fmt: skip
    for name in shown:
        print(f"\n$ kubectl apply -n {NAMESPACE} -f manifests/examples/{name}")
        print(_kubectl(cluster, "apply", "-n", NAMESPACE, "-f", str(EXAMPLES / name)), end="")
        if name == "seed-gang.yaml":
            # The contenders are sized for the room the seed gang leaves.
            wait_for(lambda: _phase(cluster, "seed"), lambda phase: phase == "Running",
                     describe="the seed gang Running")  # fmt: skip
            _show(cluster, "the seed gang placed")

    _say("watching the gangs being placed")
    deadline = time.monotonic() + watch_seconds
    shown_at = 0.0
    while time.monotonic() < deadline:
        phases = {g: _phase(cluster, g) for g in ("seed", "llm", "contender-a", "contender-b")}
        settled = (
            phases["seed"] == "Running" and phases["llm"] == "Running"
            and sorted([phases["contender-a"], phases["contender-b"]]) == ["Pending", "Running"]
            and (not native or _native_placed(cluster, NATIVE_GANG))
        )  # fmt: skip
        if time.monotonic() - shown_at > 5 or settled:
            _show(cluster, f"after {watch_seconds - (deadline - time.monotonic()):.0f}s")
            shown_at = time.monotonic()
        if settled:
            break
        time.sleep(1)

    waiting = next(
        (g for g in ("contender-a", "contender-b") if _phase(cluster, g) == "Pending"),
        "contender-b",
    )
    _say(f"a waiting gang: kubectl describe {OURS} {waiting} -n {NAMESPACE}")
    print(_kubectl(cluster, "describe", OURS, waiting, "-n", NAMESPACE))
    _say(f"a running gang: kubectl describe {OURS} seed -n {NAMESPACE}")
    print(_kubectl(cluster, "describe", OURS, "seed", "-n", NAMESPACE))
    if native:
        _say(
            f"Kubernetes' own PodGroup, placed by coscheduler: "
            f"kubectl describe podgroup {NATIVE_GANG} -n {NAMESPACE}"
        )
        print(_kubectl(cluster, "describe", "podgroup", NATIVE_GANG, "-n", NAMESPACE))

    _teams(cluster)

    _say("the sandbox stays up; explore it")
    print(
        f"""    python -m e2e.cluster kubectl get pg,podgroups -A   (any kubectl; pg is ours)
    python -m e2e.cluster kubectl apply -n {NAMESPACE} -f manifests/examples/roles-gang.yaml
    python -m e2e.cluster nodes add --count 2 --cpu 8 --memory 32Gi
    curl -s http://127.0.0.1:{process.port}/metrics | grep ^coscheduler_
    open {_dashboard(process)}   the dashboard: queues, the line and why, the room
    tail -f {process.log_path}
    export KUBECONFIG={cluster.kubeconfig}   (then plain kubectl, if you have one)

    In about 30 s the running contender's Jobs finish and the waiting one runs.
    Stop everything with: make demo-down   (or: python -m e2e.demo down)"""
    )
    return 0


def _teams(cluster: Cluster) -> None:
    """Two teams' Queues: one capped gang waits whole while the others run."""
    _say("two teams share the cluster through Queues: 3 more nodes, then teams.yaml")
    if cluster.api.get_or_none("/api/v1/nodes/team-0") is None:
        cluster.add_nodes([nodes.NodeSpec(name=f"team-{i}", cpu="8", memory="32Gi")
                           for i in range(3)])  # fmt: skip
    print(f"\n$ kubectl apply -n {NAMESPACE} -f manifests/examples/teams.yaml")
    print(_kubectl(cluster, "apply", "-n", NAMESPACE, "-f", str(EXAMPLES / "teams.yaml")), end="")
    # team-b's two gangs do not both fit its max: whichever the queue took first
    # runs (train-b by priority, unless its pods came later), the other waits whole.
    team_b = ("train-b", "etl-b")
    phases = wait_for(
        lambda: {g: _phase(cluster, g) for g in ("train-a", *team_b)},
        lambda seen: (
            seen["train-a"] == "Running"
            and sorted(seen[g] for g in team_b) == ["Pending", "Running"]
        ),
        describe="train-a Running, one of team-b's gangs Running and the other Pending",
        timeout=60,
    )
    waiting = next(g for g in team_b if phases[g] == "Pending")
    wait_for(
        partial(_kubectl, cluster, "get", "queue", "team-b", "-o",
                "jsonpath={.status.pendingGroups}"),
        lambda pending: pending.strip() == "1",
        describe=f"queue team-b's status to count {waiting} as pending",
        timeout=30,
    )  # fmt: skip
    _say("kubectl get queues")
    print(_kubectl(cluster, "get", "queues"))
    _say("kubectl describe queue team-b")
    print(_kubectl(cluster, "describe", "queue", "team-b"))
    _say(f"the gang the queue holds back: kubectl describe {OURS} {waiting} -n {NAMESPACE}")
    print(_kubectl(cluster, "describe", OURS, waiting, "-n", NAMESPACE))


def down(state_dir: Path) -> int:
    _stop_scheduler(state_dir)
    return subprocess.call([sys.executable, "-m", "e2e.cluster", "--state-dir", str(state_dir),
                            "down"])  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.demo", description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="?", default="up", choices=["up", "down"])
    parser.add_argument("--state-dir", type=Path, default=default_state_dir())
    parser.add_argument("--watch-seconds", type=float, default=90.0)
    args = parser.parse_args(argv)
    if args.command == "down":
        return down(args.state_dir)
    return up(args.state_dir, watch_seconds=args.watch_seconds)


if __name__ == "__main__":
    sys.exit(main())
