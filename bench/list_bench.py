"""How fast the first list of a kind can be had, each way the API server offers it (issue #28).

Each way runs in a process of its own (so its peak RSS is its own), against a running
control plane, and reports the wall time from the request to every object decoded (with
``managedFields`` stripped, as :mod:`coscheduler.runtime.watch` keeps them), the process'
CPU-seconds in that time, and its peak RSS (VmHWM) beside its RSS before the request.

    python -m bench.list_bench --kubeconfig K --path /api/v1/namespaces/big/pods --rounds 3

Ways:

- ``pages-500``, ``pages-5000``: consistent paged lists (no resourceVersion), one page
  after another, as the runtime listed until issue #28.
- ``whole``: one consistent list without a limit.
- ``cache-rv0``: one list at ``resourceVersion=0`` (whatever the watch cache holds).
- ``watch-list``: a streaming watch-list (``sendInitialEvents=true``), decoded as the
  events arrive, until the bookmark that ends the initial events.
- ``runtime``: :class:`coscheduler.runtime.watch.Watch` as it is, until its ``Listed``;
  ``runtime-pages`` the same told to list in pages (as where the server streams no lists).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

import orjson

WAYS = (
    "pages-500",
    "pages-5000",
    "whole",
    "cache-rv0",
    "watch-list",
    "runtime",
    "runtime-pages",
)


def _process_cpu_seconds(pids: list[int]) -> float:
    """User and system CPU of the given processes (the API server and etcd), from /proc."""
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _strip(items: list[dict[str, Any]]) -> None:
    for item in items:
        (item.get("metadata") or {}).pop("managedFields", None)


async def _pages(client: Any, path: str, limit: int) -> int:
    from coscheduler.runtime.kube import query_params

    objects: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        page = await client.call(
            "GET", path, query=query_params({"limit": limit, "continue": token})
        )
        items = page.get("items") or []
        _strip(items)
        objects.extend(items)
        token = (page.get("metadata") or {}).get("continue") or None
        if token is None:
            return len(objects)


async def _one(client: Any, path: str, version: str | None) -> int:
    from coscheduler.runtime.kube import query_params

    page = await client.call("GET", path, query=query_params({"resourceVersion": version}))
    items = page.get("items") or []
    _strip(items)
    return len(items)


async def _watch_list(client: Any, path: str) -> int:
    from coscheduler.runtime.kube import query_params

    query = query_params(
        {
            "watch": True,
            "sendInitialEvents": True,
            "resourceVersionMatch": "NotOlderThan",
            "allowWatchBookmarks": True,
            "timeoutSeconds": 600,
        }
    )
    objects: list[dict[str, Any]] = []
    lines = client.stream_lines(path, query=query, read_timeout_seconds=600)
    async with contextlib.aclosing(lines):
        async for line in lines:
            event = orjson.loads(line)
            obj = event["object"]
            if event["type"] == "BOOKMARK":
                annotations = obj["metadata"].get("annotations") or {}
                if annotations.get("k8s.io/initial-events-end") == "true":
                    return len(objects)
                continue
            (obj.get("metadata") or {}).pop("managedFields", None)
            objects.append(obj)
    raise RuntimeError("the stream ended before the initial events did")


async def _runtime(client: Any, path: str, *, stream_lists: bool) -> int:
    from coscheduler.runtime.watch import Listed, Watch

    items = aiter(Watch(client, path, stream_lists=stream_lists))
    async with contextlib.aclosing(items):  # type: ignore[type-var]
        async for item in items:
            if isinstance(item, Listed):
                return len(item.objects)
    raise RuntimeError("no list")


async def _measure(
    kubeconfig: str, path: str, way: str, *, pause_gc: bool, gzip: bool
) -> dict[str, Any]:
    from coscheduler.runtime.kube import KubeClient

    client = await KubeClient.connect(
        kubeconfig=kubeconfig, qps=1000, burst=2000, timeout_seconds=600, compressed_reads=gzip
    )
    try:
        await client.call("GET", "/version")
        rss_before = _status_kib("VmRSS")
        if pause_gc:
            gc.disable()
        cpu_before, started = _cpu_seconds(), time.perf_counter()
        if way.startswith("pages-"):
            count = await _pages(client, path, int(way.removeprefix("pages-")))
        elif way == "whole":
            count = await _one(client, path, None)
        elif way == "cache-rv0":
            count = await _one(client, path, "0")
        elif way == "watch-list":
            count = await _watch_list(client, path)
        else:
            count = await _runtime(client, path, stream_lists=way == "runtime")
        seconds = time.perf_counter() - started
        cpu = _cpu_seconds() - cpu_before
    finally:
        await client.close()
    return {
        "way": way,
        "objects": count,
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3),
        "rss_before_mib": round(rss_before / 1024, 1),
        "peak_rss_mib": round(_status_kib("VmHWM") / 1024, 1),
        "gc": "paused" if pause_gc else "on",
        "gzip": gzip,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.list_bench", description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--path", required=True, help="e.g. /api/v1/namespaces/big/pods")
    parser.add_argument("--ways", default=",".join(WAYS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--server-pids", default="", help="PIDs (comma-separated) whose CPU to count too"
    )
    parser.add_argument(
        "--pause-gc", action="store_true", help="the cyclic GC off while the list is decoded"
    )
    parser.add_argument(
        "--identity", action="store_true", help="ask for uncompressed answers (gzip by default)"
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        measured = _measure(
            args.kubeconfig, args.path, args.one, pause_gc=args.pause_gc, gzip=not args.identity
        )
        print(json.dumps(asyncio.run(measured)))
        return
    results: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.rounds):  # interleaved: each round runs every way once
        for way in args.ways.split(","):
            pids = [int(pid) for pid in args.server_pids.split(",") if pid]
            server_before = _process_cpu_seconds(pids)
            out = subprocess.run(
                [sys.executable, "-m", "bench.list_bench", "--kubeconfig", args.kubeconfig,
                 "--path", args.path, "--one", way, *(["--pause-gc"] if args.pause_gc else []),
                 *(["--identity"] if args.identity else [])],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["server_cpu_seconds"] = round(_process_cpu_seconds(pids) - server_before, 2)
            print(json.dumps(row), flush=True)
            results.setdefault(way, []).append(row)
    print("| way | objects | seconds (median) | CPU s | server CPU s | RSS before | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for way, rows in results.items():
        med = {
            k: statistics.median(r[k] for r in rows)
            for k in rows[0]
            if k not in ("way", "gc", "gzip")
        }
        print(
            f"| {way} | {med['objects']:.0f} | {med['seconds']:.2f} | {med['cpu_seconds']:.2f} "
            f"| {med['server_cpu_seconds']:.2f} "
            f"| {med['rss_before_mib']:.0f} MiB | {med['peak_rss_mib']:.0f} MiB |"
        )


if __name__ == "__main__":
    main()
