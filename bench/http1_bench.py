"""CPU per write request: aiohttp's client, the hand-parsing pool and the httptools pool.

    .venv/bin/python -m bench.http1_bench [--baseline REV] [--rounds 7] [--requests 2000]

A local aiohttp server in a process of its own answers every POST the way
the API server answers a Binding (201, a small ``Status``, its headers), so
only the client's CPU is measured (``time.process_time`` of this process).
The three clients take turns round after round, each sending ``--requests``
requests one after another; medians over the rounds are printed. The
hand-parsing pool is :mod:`coscheduler.runtime.http1` as it was at ``REV``
(read from git), the other the working tree's.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Awaitable, Callable
from typing import Protocol

import aiohttp
from aiohttp import web

from coscheduler.runtime import http1
from coscheduler.runtime.http1 import Http1Pool

#: The last commit whose pool parsed answers by hand.
HAND_PARSER_REV = "13bc7e2"
_BODY = b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}'
_HEADERS = {
    "Audit-Id": "0b5d7a43-7f3e-4f55-9d0b-0c9a5c8b8e11",
    "Cache-Control": "no-cache, private",
    "X-Kubernetes-Pf-Flowschema-Uid": "5f1b2c9e-2a53-4b0e-9c1d-4c7e0a8b3f20",
    "X-Kubernetes-Pf-Prioritylevel-Uid": "8e2d1f4a-6b7c-4d3e-a9f0-1b2c3d4e5f60",
}
_REQUEST_HEADERS = b"Accept: application/json\r\nContent-Type: application/json\r\n"
_REQUEST_BODY = (
    b'{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p-1"},'
    b'"target":{"kind":"Node","name":"n-1"}}'
)


class _Pool(Protocol):
    async def request(
        self, method: str, path: str, headers: bytes, body: bytes | None, *, within: float
    ) -> tuple[int, bytes]: ...

    def close(self) -> None: ...


def _serve(sock: socket.socket) -> None:
    async def bind(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(
            status=201, body=_BODY, content_type="application/json", headers=_HEADERS
        )

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", bind)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        await asyncio.Event().wait()

    asyncio.run(main())


def _pool_at(rev: str) -> Callable[..., _Pool]:
    """The pool class of ``coscheduler/runtime/http1.py`` at ``rev``."""
    source = subprocess.run(
        ["git", "show", f"{rev}:coscheduler/runtime/http1.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    module = types.ModuleType(f"http1_at_{rev}")
    sys.modules[module.__name__] = module  # dataclasses and annotations look it up
    exec(compile(source, f"http1.py@{rev}", "exec"), module.__dict__)
    pool: Callable[..., _Pool] = module.Http1Pool
    _connection_classes[f"hand-parsing pool ({rev})"] = module._Connection
    return pool


#: Each pool's connection class, for the parse-only measurement.
_connection_classes: dict[str, Callable[[], asyncio.Protocol]] = {
    "httptools pool": http1._Connection
}


async def _cpu_per_request(send: Callable[[], Awaitable[int]], requests: int) -> float:
    start = time.process_time()
    for _ in range(requests):
        if await send() != 201:
            raise RuntimeError("the server did not answer 201")
    return (time.process_time() - start) / requests * 1e6


class _Wire(asyncio.Transport):
    """A transport that goes nowhere: the parse-only measurement feeds the answer itself."""

    def write(self, data: bytes | bytearray | memoryview) -> None:
        pass

    def close(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False


async def _parse_cost(connection_class: Callable[[], asyncio.Protocol], answers: int) -> float:
    """CPU µs to read one canned Binding answer (the pool's part without the socket)."""
    answer = (
        b"HTTP/1.1 201 Created\r\n"
        + b"".join(f"{name}: {value}\r\n".encode() for name, value in _HEADERS.items())
        + b"Content-Type: application/json\r\nDate: Thu, 26 Nov 2026 08:00:00 GMT\r\n"
        + b"Content-Length: %d\r\n\r\n" % len(_BODY)
        + _BODY
    )
    connection = connection_class()
    connection.connection_made(_Wire())
    send = connection.send  # type: ignore[attr-defined]
    start = time.process_time()
    for _ in range(answers):
        done = send(b"")
        connection.data_received(answer)
        if done.result()[0] != 201:
            raise RuntimeError("the answer was misread")
    return (time.process_time() - start) / answers * 1e6


async def _run(url: str, baseline: str, rounds: int, requests: int) -> dict[str, list[float]]:
    hand = _pool_at(baseline)(url, ssl_context=None)
    lean = Http1Pool(url, ssl_context=None)
    session = aiohttp.ClientSession()

    async def with_aiohttp() -> int:
        async with session.post(
            f"{url}/api/v1/namespaces/bench/pods/p-1/binding",
            data=_REQUEST_BODY,
            headers={"Accept": "application/json", "Content-Type": "application/json"},
        ) as answer:
            await answer.read()
            return answer.status

    def with_pool(pool: _Pool) -> Callable[[], Awaitable[int]]:
        async def send() -> int:
            status, _ = await pool.request(
                "POST",
                "/api/v1/namespaces/bench/pods/p-1/binding",
                _REQUEST_HEADERS,
                _REQUEST_BODY,
                within=10,
            )
            return status

        return send

    clients = {
        "aiohttp": with_aiohttp,
        f"hand-parsing pool ({baseline})": with_pool(hand),
        "httptools pool": with_pool(lean),
    }
    results: dict[str, list[float]] = {name: [] for name in clients}
    try:
        for send in clients.values():  # warm up: connections, caches
            await _cpu_per_request(send, 200)
        for round_ in range(rounds):
            names = list(clients)
            names = names[round_ % 3 :] + names[: round_ % 3]  # rotate who goes first
            for name in names:
                results[name].append(await _cpu_per_request(clients[name], requests))
            for name, connection_class in _connection_classes.items():
                parsed = results.setdefault(f"{name}, parse only", [])
                parsed.append(await _parse_cost(connection_class, requests * 10))
    finally:
        await session.close()
        hand.close()
        lean.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=HAND_PARSER_REV)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=2000)
    options = parser.parse_args()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = multiprocessing.get_context("spawn").Process(target=_serve, args=(sock,), daemon=True)
    server.start()
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        results = asyncio.run(_run(url, options.baseline, options.rounds, options.requests))
    finally:
        server.terminate()
        server.join()
    print(f"load average {os.getloadavg()[0]:.2f}; {options.rounds} rounds x {options.requests}")
    medians = {name: statistics.median(values) for name, values in results.items()}
    reference = medians["aiohttp"]
    for name, median in medians.items():
        if name.endswith("parse only"):
            print(f"{name:42} {median:6.1f} µs CPU/answer")
            continue
        spread = f"{min(results[name]):.0f}-{max(results[name]):.0f}"
        ratio = median / reference
        print(f"{name:42} {median:6.1f} µs CPU/request (range {spread}), {ratio:.2f}x aiohttp")


if __name__ == "__main__":
    main()
