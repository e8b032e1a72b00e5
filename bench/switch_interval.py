"""The event loop's socket round trips while a worker thread imports, by GIL switch interval.

    .venv/bin/python -m bench.switch_interval [--runs 5] [--intervals 0.005,0.0005]

``coscheduler run`` imports its deciding side in a worker thread while the event
loop's thread reads the first lists (issue #28). Each socket call lets go of the
GIL; taking it back waits for the importer to yield, which it does only when
asked, after the switch interval. This measures that alone: in a fresh
interpreter of the runtime venv per run (intervals alternating), the event loop
exchanges small messages with an echo process as fast as it can while a worker
thread imports ``coscheduler.operator``; printed are the round trips it made
during the import and the import's wall and CPU seconds, medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
from pathlib import Path

from bench.runtime_venv import runtime_python

REPO = Path(__file__).resolve().parents[1]

_CHILD = """
import asyncio, json, os, socket, sys, threading, time
sys.setswitchinterval(float(sys.argv[1]))
import coscheduler.cli, coscheduler.app  # the start path, imported first as in `run`
ours, theirs = socket.socketpair()
if os.fork() == 0:
    ours.close()
    while data := theirs.recv(64):
        theirs.sendall(data)
    os._exit(0)
theirs.close()

def load():
    started = time.perf_counter(), time.thread_time()
    import coscheduler.operator  # noqa: F401
    return time.perf_counter() - started[0], time.thread_time() - started[1]

async def main():
    loop = asyncio.get_running_loop()
    reader, writer = await asyncio.open_connection(sock=ours)
    importing = asyncio.ensure_future(asyncio.to_thread(load))
    trips = 0
    while not importing.done():
        writer.write(b"x")
        await reader.readexactly(1)
        trips += 1
    wall, cpu = importing.result()
    print(json.dumps({"trips": trips, "import_wall_s": wall, "import_cpu_s": cpu}))

asyncio.run(main())
"""


def one(interval: float) -> dict[str, float]:
    out = subprocess.run(
        [str(runtime_python()), "-P", "-c", _CHILD, str(interval)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(out.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--intervals", default="0.005,0.0005")
    args = parser.parse_args()
    intervals = [float(x) for x in args.intervals.split(",")]
    results: dict[float, list[dict[str, float]]] = {x: [] for x in intervals}
    for index in range(args.runs):
        for interval in intervals if index % 2 == 0 else reversed(intervals):
            results[interval].append(one(interval))
    print("| switch interval, s | runs | round trips meanwhile | import wall s | import CPU s |")
    print("|---|---|---|---|---|")
    for interval, runs in results.items():
        trips = statistics.median(r["trips"] for r in runs)
        wall = statistics.median(r["import_wall_s"] for r in runs)
        cpu = statistics.median(r["import_cpu_s"] for r in runs)
        print(f"| {interval} | {len(runs)} | {trips:.0f} | {wall:.3f} | {cpu:.3f} |")


if __name__ == "__main__":
    main()
