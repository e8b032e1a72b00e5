"""CPU per pod of ours in steady state, the API server in another process (issue #28).

    python -m bench.steady_state_cpu [--nodes 1000] [--pods 2048] [--gang-size 64]
        [--runs 3] [--event-loop uvloop|asyncio] [--profile DIR [--rate 250]]

Ours (:func:`coscheduler.app.run`, the whole operator, in this process) against
:mod:`bench.steady_state_server` (a stand-in API server that answers as a real
one with KWOK does, in a child process), so this process's CPU time is ours
alone: the real control plane would share the machine's cores with it. Per
run, a fresh server and operator:

* ``start``: CPU from the operator's start to every kind listed (not steady
  state; the imports are not in it, they happen once before the first run);
* ``steady``: CPU from every kind listed to the end: every pod bound and its
  two watch updates (bound, running) read, every ``Scheduled`` event written,
  the PodGroups' statuses written and the process quiet again;
* ``per pod``: ``steady`` over the pods, in milliseconds.

With ``--profile DIR`` py-spy samples the steady state of each run and the
samples are split by what they were doing (Binding writes, Event writes,
status patches, watch parsing, planner, other).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import gc
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import structlog

from bench.steady_state_server import Counters, serve
from coscheduler import app
from coscheduler.runtime.eventloop import loop_factory
from coscheduler.runtime.settings import EventLoop, Settings
from coscheduler.runtime.startup import Startup

#: Where a py-spy sample's time went: the first rule whose marker is in its stack wins.
SPLIT: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("binding writes", ("(coscheduler/runtime/binder.py:",)),
    ("event writes", ("(coscheduler/runtime/events.py:",)),
    ("status patches", ("(coscheduler/controller/writer.py:",)),
    ("pod condition writes", ("(coscheduler/runtime/podstatus.py:",)),
    (
        "watch parsing",
        (
            "(coscheduler/runtime/watch.py:",
            "(coscheduler/runtime/handlers/",
            "(coscheduler/runtime/ingest.py:",
        ),
    ),
    ("planner", ("next_decision (coscheduler/core/scheduler.py:", "(coscheduler/runtime/loop.py:")),
    # Answers and watch bytes read in the protocols' callbacks, before any task sees them.
    ("answers read", ("(aiohttp/", "(coscheduler/runtime/http1.py:")),
)


class _Collections:
    """CPU seconds spent in the garbage collector, per generation (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.counts = [0, 0, 0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            generation = info["generation"]
            self.seconds[generation] += time.process_time() - self._started
            self.counts[generation] += 1


class _Marks(Startup):
    """The start-up's phases, with this process's CPU time at ``listed``."""

    def __init__(self, on_listed: Any) -> None:
        super().__init__(age=0.0)
        self.cpu_listed: float | None = None
        self._on_listed = on_listed

    def mark(self, phase: str) -> None:
        if phase == "listed" and self.cpu_listed is None:
            self.cpu_listed = time.process_time()
            self._on_listed()
        super().mark(phase)


def _kubeconfig(directory: Path, port: int) -> Path:
    path = directory / "kubeconfig"
    server = f"http://127.0.0.1:{port}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "bench", "cluster": {"server": server}}],
        "users": [{"name": "bench", "user": {}}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
        "current-context": "bench",
    }
    path.write_bytes(orjson.dumps(config))
    return path


def _spy(pid: int, out: Path, rate: int) -> subprocess.Popen[bytes]:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    return subprocess.Popen(
        [spy, "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw",
         "--output", str(out), "--nonblocking"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


async def one_run(args: argparse.Namespace, index: int) -> dict[str, Any]:
    gangs = args.pods // args.gang_size
    pods = gangs * args.gang_size
    counters = Counters.new()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    port = sock.getsockname()[1]
    ctx = multiprocessing.get_context("fork")
    server = ctx.Process(
        target=serve,
        args=(sock,),
        kwargs={"nodes": args.nodes, "gangs": gangs, "gang_size": args.gang_size,
                "counters": counters},
        daemon=True,
    )  # fmt: skip
    server.start()
    sock.close()
    spy: list[subprocess.Popen[bytes]] = []
    profile = None if args.profile is None else args.profile / f"run{index}.txt"

    collections_seen = _Collections()

    def on_listed() -> None:
        gc.callbacks.append(collections_seen)
        if profile is not None:
            spy.append(_spy(os.getpid(), profile, args.rate))

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            kubeconfig=str(_kubeconfig(Path(tmp), port)),
            scheduler_name="coscheduler",
            leader_election={"enabled": False},
            serving={"address": "127.0.0.1", "port": 0},
            client={"qps": args.qps, "burst": args.burst},
        )
        marks = _Marks(on_listed)
        cpu_start = time.process_time()
        wall_start = time.perf_counter()
        task = asyncio.create_task(app.run(settings, marks))
        try:
            while True:
                await asyncio.sleep(0.05)
                seen = counters.snapshot()
                if task.done():
                    task.result()
                    raise RuntimeError("the operator ended")
                if (
                    seen["bindings"] >= pods
                    and seen["pod_updates"] >= 2 * pods
                    and seen["events_created"] + seen["events_patched"] >= pods
                    and seen["status_patches"] >= gangs
                ):
                    break
                if time.perf_counter() - wall_start > args.timeout:
                    raise RuntimeError(f"not done after {args.timeout} s: {seen}")
            # Quiet: the last watch updates read, the status writer's last round done.
            previous = time.process_time()
            while True:
                await asyncio.sleep(0.5)
                now = time.process_time()
                if now - previous < 0.01:
                    break
                previous = now
            cpu_end = time.process_time()
            wall = time.perf_counter() - wall_start
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            if collections_seen in gc.callbacks:
                gc.callbacks.remove(collections_seen)
            for profiler in spy:
                profiler.send_signal(signal.SIGINT)
                profiler.wait(timeout=30)
            server.kill()
            server.join()
    assert marks.cpu_listed is not None
    steady = cpu_end - marks.cpu_listed
    result = {
        "pods": pods,
        "start_cpu_s": round(marks.cpu_listed - cpu_start, 3),
        "steady_cpu_s": round(steady, 3),
        "ms_per_pod": round(1000 * steady / pods, 3),
        "wall_s": round(wall, 2),
        "gc_cpu_s": [round(x, 3) for x in collections_seen.seconds],
        "gc_runs": collections_seen.counts,
        "requests": counters.snapshot(),
    }
    if profile is not None and profile.exists():
        result["split"] = split_profile(profile)
    return result


def split_profile(path: Path) -> dict[str, float]:
    """Shares of the samples per :data:`SPLIT` category (idle samples left out)."""
    shares: collections.Counter[str] = collections.Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or "(selectors.py:" in stack.rsplit(";", 1)[-1]:
            continue  # waiting in select(): idle, not CPU
        category = next(
            (name for name, markers in SPLIT if any(m in stack for m in markers)), "other"
        )
        shares[category] += int(count)
    total = sum(shares.values()) or 1
    return {name: round(count / total, 3) for name, count in shares.most_common()}


async def main(args: argparse.Namespace) -> None:
    results = []
    for index in range(args.runs):
        result = await one_run(args, index)
        results.append(result)
        print(orjson.dumps(result).decode(), flush=True)
    per_pod = [r["ms_per_pod"] for r in results]
    print(
        f"ms CPU per pod in steady state: median {statistics.median(per_pod):.3f} "
        f"(min {min(per_pod):.3f}, max {max(per_pod):.3f}) over {len(per_pod)} runs; "
        f"on {args.event_loop}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2048)
    parser.add_argument("--gang-size", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--event-loop", choices=[choice.value for choice in EventLoop], default="uvloop",
        help="the loop ours runs on, as coscheduler run's --event-loop",
    )  # fmt: skip
    parser.add_argument("--qps", type=float, default=1000.0)
    parser.add_argument("--burst", type=int, default=2000)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse()
    if arguments.profile is not None:
        arguments.profile.mkdir(parents=True, exist_ok=True)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with asyncio.Runner(loop_factory=loop_factory(EventLoop(arguments.event_loop))) as runner:
        runner.run(main(arguments))
