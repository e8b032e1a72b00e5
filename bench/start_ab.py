"""Exec to first Binding of ``coscheduler run``, revisions side by side, without a control plane.

    .venv/bin/python -m bench.start_ab --rev main --rev HEAD [--runs 7]
        [--nodes 1000] [--pods 2048] [--gang-size 512]

The startup suite's figure (issue #28), with the API server replaced by
:mod:`bench.steady_state_server` (the stand-in the steady-state bench uses, in a
child process, plain HTTP): a run takes seconds instead of minutes (no control
plane, no 1,000 KWOK nodes to wait for), so many interleaved runs fit where the
suite fits two, and the machine's load moves less between them. Each run: a
fresh stand-in (built, and answering, before the clock starts), then a fresh
``coscheduler run`` of one revision (exported as the suite's ``ours@REV``, the
runtime venv's interpreter), read until its ``started`` line, then stopped.
Revisions alternate, the order reversed every other run; medians are printed,
with the process's CPU-seconds up to that line (``/proc``).

What it does not have: TLS (no handshakes, so warming write connections costs
less here than against a real API server), and a server sharing the cores as
kube-apiserver and etcd do.
"""

from __future__ import annotations

import argparse
import compileall
import multiprocessing
import os
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.analysis import read_proc
from bench.peers import OursAt
from bench.steady_state_cpu import _kubeconfig
from bench.steady_state_server import Counters, serve
from bench.workloads import started_line

PHASES = ("imports", "client", "built", "listed", "first_decision", "first_binding")


def one_start(peer: OursAt, args: argparse.Namespace) -> dict[str, Any]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    port = sock.getsockname()[1]
    server = multiprocessing.get_context("fork").Process(
        target=serve,
        args=(sock,),
        kwargs={"nodes": args.nodes, "gangs": args.pods // args.gang_size,
                "gang_size": args.gang_size, "counters": Counters.new()},
        daemon=True,
    )  # fmt: skip
    server.start()
    sock.close()
    try:
        # Answered once the stand-in has built its cluster: not on ours' clock.
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api", timeout=120).read()
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "log"
            with log.open("wb") as out:
                process = subprocess.Popen(
                    [*peer.command(), "run", "--kubeconfig", str(_kubeconfig(Path(tmp), port)),
                     "--no-leader-elect", "--scheduler-name", "coscheduler",
                     "--qps", "1000", "--burst", "2000",
                     "--metrics-address", "127.0.0.1", "--metrics-port", "0",
                     "--log-level", "info"],
                    env={**os.environ, "PYTHONPATH": str(peer.package().parent)},
                    stdout=out, stderr=subprocess.STDOUT,
                )  # fmt: skip
            try:
                deadline = time.monotonic() + args.timeout
                while (line := started_line(log)) is None:
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(log.read_text()[-2000:])
                    time.sleep(0.01)
                figures = read_proc(process.pid)
                if figures is None:
                    raise RuntimeError("the process ended before its CPU was read")
                cpu = figures["cpu_s"]
            finally:
                process.kill()
                process.wait()
    finally:
        server.kill()
        server.join()
    return {**{phase: line[phase] for phase in PHASES}, "cpu_s": round(cpu, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", action="append", required=True, help="a git revision")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2048)
    parser.add_argument("--gang-size", type=int, default=512)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    peers = {rev: OursAt(rev) for rev in args.rev}
    for peer in peers.values():
        compileall.compile_dir(peer.package(), quiet=1)  # as the image's wheel is
    runs: dict[str, list[dict[str, Any]]] = {rev: [] for rev in peers}
    for index in range(args.runs):
        order = list(peers) if index % 2 == 0 else list(reversed(peers))
        for rev in order:
            result = one_start(peers[rev], args)
            runs[rev].append(result)
            print(f"run {index + 1} {rev}: {result} load {os.getloadavg()[0]:.1f}", flush=True)
    columns = (*PHASES, "cpu_s")
    print("\n| revision | runs | " + " | ".join(columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for rev, results in runs.items():
        medians = [statistics.median(r[c] for r in results) for c in columns]
        print(f"| {rev} | {len(results)} | " + " | ".join(f"{m:.3f}" for m in medians) + " |")


if __name__ == "__main__":
    main()
