"""Command line of the local control plane: ``python -m e2e.cluster COMMAND``.

Commands:
  build                 build (or find cached) etcd, kube-*, kubectl, kwok and helm
                        (Kubernetes: the release $COSCHEDULER_KUBERNETES names, else the newest)
  up [options]          start a detached cluster with N fake nodes; prints the kubeconfig path
  down                  stop it (only the processes it recorded)
  status                say whether it runs, where, and with which nodes
  kubectl ARGS...       run the built kubectl against it
  nodes add [options]   add fake nodes (same resource options as `up`)
  nodes remove NAME...  delete nodes

Why detached: a sandbox for ``make demo`` or manual debugging must outlive
the command that started it; its PIDs, ports and directories are recorded in
``.e2e/state.json`` of the repository (``$COSCHEDULER_E2E_STATE`` overrides),
and ``down`` stops exactly those.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from e2e import build, nodes
from e2e.api import ApiError
from e2e.controlplane import Cluster, ClusterOptions, StartupError
from e2e.processes import interrupt_on_sigterm


def default_state_dir() -> Path:
    """``$COSCHEDULER_E2E_STATE``, else ``.e2e/`` at the root of this repository."""
    override = os.environ.get("COSCHEDULER_E2E_STATE")
    if override:
        return Path(override).expanduser().resolve()
    return Path(__file__).resolve().parent.parent / ".e2e"


def _say(message: str) -> None:
    print(f"[e2e] {message}", file=sys.stderr, flush=True)


def _node_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cpu", default="8", help="allocatable cpu per node (default 8)")
    parser.add_argument("--memory", default="32Gi", help="allocatable memory (default 32Gi)")
    parser.add_argument("--gpus", type=int, default=0, help="nvidia.com/gpu per node (default 0)")
    parser.add_argument("--pods", type=int, default=nodes.DEFAULT_PODS, help="max pods per node")
    parser.add_argument(
        "--label", action="append", default=[], metavar="K=V", help="node label (repeatable)"
    )
    parser.add_argument(
        "--taint",
        action="append",
        default=[],
        metavar="K=V:EFFECT",
        help="node taint, e.g. gpu=true:NoSchedule (repeatable)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m e2e.cluster", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--state-dir", type=Path, default=None, help="where the cluster's state lives (.e2e/)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="build or find the cached binaries")
    up = commands.add_parser("up", help="start a detached cluster")
    up.add_argument("--nodes", type=int, default=3, help="number of fake nodes (default 3)")
    _node_options(up)
    up.add_argument(
        "--gang-api",
        action="store_true",
        help="enable the release's native gang API (its gates and scheduling.k8s.io versions)",
    )
    up.add_argument(
        "--job-workloads",
        action="store_true",
        help="with --gang-api (1.36 on): the Job controller makes each Job a native gang",
    )
    up.add_argument(
        "--job-duration",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="how long Job pods run before KWOK completes them (default 1)",
    )
    commands.add_parser("down", help="stop the cluster")
    commands.add_parser("status", help="show whether a cluster runs")
    commands.add_parser("kubectl", help="run kubectl against the cluster (all arguments passed)")
    node_cmd = commands.add_parser("nodes", help="add or remove fake nodes")
    node_actions = node_cmd.add_subparsers(dest="action", required=True)
    add = node_actions.add_parser("add", help="add fake nodes")
    add.add_argument("names", nargs="*", help="node names (default: the next kwok-node-<i>)")
    add.add_argument("--count", type=int, default=1, help="how many, when no names are given")
    _node_options(add)
    remove = node_actions.add_parser("remove", help="delete nodes")
    remove.add_argument("names", nargs="+")
    return parser


def _specs(args: argparse.Namespace, names: Sequence[str]) -> list[nodes.NodeSpec]:
    labels = dict(nodes.parse_label(text) for text in args.label)
    taints = tuple(nodes.Taint.parse(text) for text in args.taint)
    return [
        nodes.NodeSpec(
            name=name,
            cpu=args.cpu,
            memory=args.memory,
            gpus=args.gpus,
            pods=args.pods,
            labels=labels,
            taints=taints,
        )
        for name in names
    ]


@contextlib.contextmanager
def _state_lock(state_dir: Path) -> Iterator[None]:
    """Serialise up/down so that two `up`s never start two clusters."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with (state_dir / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _running(state_dir: Path) -> Cluster:
    cluster = Cluster.attach(state_dir)
    if cluster is None or not cluster.is_running():
        raise SystemExit(f"no cluster is running (state: {state_dir}); start one with `up`")
    return cluster


def cmd_up(args: argparse.Namespace, state_dir: Path) -> int:
    with _state_lock(state_dir):
        existing = Cluster.attach(state_dir)
        if existing is not None:
            if existing.is_running():
                _say(f"a cluster is already running at {existing.server}; `down` stops it")
                print(existing.kubeconfig)
                return 1
            _say("a previous cluster is recorded but not healthy: stopping its leftovers")
            existing.stop()
        for text in args.label:
            nodes.parse_label(text)  # fail before starting anything
        for text in args.taint:
            nodes.Taint.parse(text)
        build.ensure_built()
        options = ClusterOptions(
            gang_api=args.gang_api,
            job_workloads=args.job_workloads,
            job_duration_seconds=args.job_duration,
        )
        cluster = Cluster.start(state_dir, options, detached=True, report=_say)
        try:
            if args.nodes:
                names = nodes.next_names(cluster.api, args.nodes)
                _say(f"adding {len(names)} fake node(s)")
                cluster.add_nodes(_specs(args, names))
        except BaseException:
            cluster.stop()
            raise
    _say(f"up: {cluster.server}; logs in {cluster.logs_dir}; `down` stops it")
    print(cluster.kubeconfig)
    return 0


def cmd_down(state_dir: Path) -> int:
    with _state_lock(state_dir):
        cluster = Cluster.attach(state_dir)
        if cluster is None:
            _say("no cluster recorded; nothing to stop")
            return 0
        cluster.stop()
    _say(f"stopped; logs kept in {state_dir / 'logs'}")
    return 0


def cmd_status(state_dir: Path) -> int:
    cluster = Cluster.attach(state_dir)
    if cluster is None:
        print("down")
        return 1
    alive = {p.name: p.is_running() for p in cluster.processes}
    healthy = cluster.is_running()
    print(f"{'up' if healthy else 'unhealthy'}: {cluster.server}")
    print(f"kubeconfig: {cluster.kubeconfig}")
    for name, running in alive.items():
        print(f"  {name}: {'running' if running else 'NOT running'}")
    if healthy:
        listed = cluster.api.get("/api/v1/nodes")["items"]
        ready = sum(nodes.is_ready(n) for n in listed)
        print(f"nodes: {len(listed)} ({ready} Ready)")
    return 0 if healthy else 1


def cmd_kubectl(argv: Sequence[str], state_dir: Path) -> int:
    cluster = _running(state_dir)
    kubectl = build.binaries().kubectl
    os.execv(kubectl, [str(kubectl), f"--kubeconfig={cluster.kubeconfig}", *argv])


def cmd_nodes(args: argparse.Namespace, state_dir: Path) -> int:
    cluster = _running(state_dir)
    if args.action == "add":
        names = args.names or nodes.next_names(cluster.api, args.count)
        added = cluster.add_nodes(_specs(args, names))
        print("\n".join(added))
    else:
        cluster.remove_nodes(args.names)
        _say(f"removed {', '.join(args.names)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    interrupt_on_sigterm()
    state_dir = default_state_dir()
    # `kubectl` passes every following argument through untouched (flags included).
    index = 2 if argv[:1] == ["--state-dir"] else 0
    if argv[index : index + 1] == ["kubectl"]:
        head, tail = argv[:index], argv[index + 1 :]
        args = _parser().parse_args([*head, "kubectl"])
        return cmd_kubectl(tail, args.state_dir or state_dir)
    args = _parser().parse_args(argv)
    state_dir = args.state_dir.resolve() if args.state_dir else state_dir
    try:
        if args.command == "build":
            built = build.ensure_built()
            for path in vars(built).values():
                print(path)
            return 0
        if args.command == "up":
            return cmd_up(args, state_dir)
        if args.command == "down":
            return cmd_down(state_dir)
        if args.command == "status":
            return cmd_status(state_dir)
        return cmd_nodes(args, state_dir)
    except (build.BuildError, StartupError, ApiError, ValueError) as error:
        _say(f"error: {error}")
        return 1
    except KeyboardInterrupt:
        _say("interrupted; everything started by this command was stopped")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
