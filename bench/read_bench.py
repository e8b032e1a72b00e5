"""CPU per list and per watch event through ``KubeClient``, two checkouts side by side (issue #28).

    .venv/bin/python -m bench.read_bench --tree main=/work/main --tree this=. [--rounds 5]

A local server in a process of its own answers as the API server does when
asked for gzip: a list of ``--pods`` pods (2.3 KB each as JSON) compressed
whole, and a watch of ``--events`` pod events, each its own gzip member in a
chunk of its own. Each checkout's client runs in a fresh interpreter of that
checkout's venv (``TREE/.venv/bin/python``) and reports its process CPU for
``--lists`` lists read with ``call("GET")`` and for the watch read with
``stream_lines`` and decoded with orjson, as :mod:`coscheduler.runtime.watch`
reads one. The checkouts take turns round after round; medians are printed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson


def _pod(index: int) -> dict[str, Any]:
    name = f"gang-{index // 64:04d}-{index % 64:03d}"
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"6b1f0c2e-{index:04x}-4d1a-9f7e-0c1b2a3d4e5f",
            "resourceVersion": str(1000 + index),
            "creationTimestamp": "2026-11-26T08:00:00Z",
            "labels": {"scheduling.x-k8s.io/pod-group": name[:9], "app": "bench"},
            "annotations": {"bench/note": "x" * 200},
        },
        "spec": {
            "schedulerName": "coscheduler",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/bench:latest",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                    "env": [{"name": f"E{i}", "value": "v" * 40} for i in range(8)],
                }
            ],
            "tolerations": [
                {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}
            ],
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def _serve(sock: socket.socket, pods: int, events: int) -> None:
    from aiohttp import web

    items = [_pod(i) for i in range(pods)]
    listed = gzip.compress(
        orjson.dumps({"kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": items})
    )
    members = [
        gzip.compress(orjson.dumps({"type": "MODIFIED", "object": items[i % pods]}) + b"\n")
        for i in range(events)
    ]

    async def answer(request: web.Request) -> web.StreamResponse:
        headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
        if request.query.get("watch") != "true":
            return web.Response(body=listed, headers=headers)
        response = web.StreamResponse(headers=headers)
        await response.prepare(request)
        for member in members:
            await response.write(member)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/api/v1/pods", answer)
    web.run_app(app, sock=sock, print=None, access_log=None)


_CLIENT = """
import asyncio, json, sys, time
import orjson
from coscheduler.runtime.kube import KubeClient

async def main(kubeconfig, lists):
    client = await KubeClient.connect(kubeconfig=kubeconfig, qps=10000, burst=10000,
                                      timeout_seconds=60)
    try:
        await client.call("GET", "/api/v1/pods")  # warm: a connection, caches
        start = time.process_time()
        for _ in range(lists):
            listed = await client.call("GET", "/api/v1/pods")
        list_cpu = (time.process_time() - start) / lists
        start = time.process_time()
        events = 0
        async for line in client.stream_lines("/api/v1/pods", query=[("watch", "true")],
                                              read_timeout_seconds=60):
            orjson.loads(line)
            events += 1
        event_cpu = (time.process_time() - start) / events
    finally:
        await client.close()
    print(json.dumps({"list_ms": list_cpu * 1e3, "event_us": event_cpu * 1e6,
                      "pods": len(listed["items"]), "events": events}))

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def _client(tree: Path, kubeconfig: Path, lists: int) -> dict[str, float]:
    python = tree / ".venv" / "bin" / "python"
    out = subprocess.run(
        [str(python), "-P", "-c", _CLIENT, str(kubeconfig), str(lists)],
        check=True,
        capture_output=True,
        text=True,
        cwd=tree,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pods", type=int, default=2048)
    parser.add_argument("--lists", type=int, default=10)
    parser.add_argument("--events", type=int, default=20000)
    options = parser.parse_args()
    trees = {name: Path(path).resolve() for name, path in (t.split("=", 1) for t in options.tree)}
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = multiprocessing.get_context("spawn").Process(
        target=_serve, args=(sock, options.pods, options.events), daemon=True
    )
    server.start()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    try:
        with tempfile.TemporaryDirectory(prefix="read-bench-") as scratch:
            kubeconfig = Path(scratch) / "kubeconfig"
            url = f"http://127.0.0.1:{sock.getsockname()[1]}"
            kubeconfig.write_text(
                json.dumps(
                    {
                        "apiVersion": "v1",
                        "kind": "Config",
                        "clusters": [{"name": "b", "cluster": {"server": url}}],
                        "users": [{"name": "b", "user": {}}],
                        "contexts": [{"name": "b", "context": {"cluster": "b", "user": "b"}}],
                        "current-context": "b",
                    }
                )
            )
            time.sleep(1.0)  # the server's interpreter starts
            for round_ in range(options.rounds):
                names = list(trees)
                names = names[round_ % len(names) :] + names[: round_ % len(names)]
                for name in names:
                    results[name].append(_client(trees[name], kubeconfig, options.lists))
    finally:
        server.terminate()
        server.join()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"load average {load}; {options.rounds} rounds; {options.pods} pods a list, "
        f"{options.events} watch events"
    )
    first = next(iter(trees))
    for name, rows in results.items():
        list_ms = statistics.median(r["list_ms"] for r in rows)
        event_us = statistics.median(r["event_us"] for r in rows)
        base = results[first]
        ratio_list = list_ms / statistics.median(r["list_ms"] for r in base)
        ratio_event = event_us / statistics.median(r["event_us"] for r in base)
        print(
            f"{name:>8}: {list_ms:7.2f} ms CPU a list of {options.pods} pods ({ratio_list:.2f}x), "
            f"{event_us:6.1f} µs CPU a watch event ({ratio_event:.2f}x)"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
