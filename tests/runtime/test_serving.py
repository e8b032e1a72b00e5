"""/healthz, /readyz, /metrics on aiohttp's server: answers, kept-alive, refusals."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.serving import HealthServer

State = dict[str, bool]


@pytest.fixture
def state() -> State:
    return {"alive": True, "ready": False}


@pytest.fixture
async def server(state: State) -> AsyncIterator[HealthServer]:
    served = HealthServer(Metrics(), alive=lambda: state["alive"], ready=lambda: state["ready"])
    await served.start("127.0.0.1", 0)
    yield served
    await served.stop()


async def exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[str, bytes]:
    writer.write(request)
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    length = next(
        int(line.split(":")[1]) for line in head.split("\r\n") if line.startswith("Content-Length")
    )
    return head.split("\r\n")[0], await reader.readexactly(length)


async def test_probes_and_metrics_on_one_kept_alive_connection(
    server: HealthServer, state: State
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        get = "GET {} HTTP/1.1\r\nHost: x\r\n\r\n"
        assert await exchange(reader, writer, get.format("/healthz").encode()) == (
            "HTTP/1.1 200 OK",
            b"ok\n",
        )
        status, _ = await exchange(reader, writer, get.format("/readyz").encode())
        assert status == "HTTP/1.1 503 Service Unavailable"
        state["ready"] = True
        assert (await exchange(reader, writer, get.format("/readyz").encode()))[0].endswith(
            "200 OK"
        )
        status, body = await exchange(reader, writer, get.format("/metrics").encode())
        assert status.endswith("200 OK")
        assert b"# TYPE" in body
        assert (await exchange(reader, writer, get.format("/nowhere").encode()))[0].endswith(
            "404 Not Found"
        )
    finally:
        writer.close()


async def test_only_gets_and_a_closing_client_is_let_go(server: HealthServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        request = (
            b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
        )
        status, _ = await exchange(reader, writer, request)
        assert status == "HTTP/1.1 405 Method Not Allowed"
        assert await reader.read() == b""  # closed, as asked
    finally:
        writer.close()


async def test_garbage_is_a_bad_request(server: HealthServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        status, _ = await exchange(reader, writer, b"hello\r\n\r\n")
        assert status.endswith(" 400 Bad Request")  # aiohttp answers what is not HTTP/1.1 in 1.0
    finally:
        writer.close()


async def test_pipelined_requests_are_answered_in_order(server: HealthServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        first = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")[0]
        assert await reader.readexactly(3) == b"ok\n"
        second = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")[0]
        assert (first, second) == (b"HTTP/1.1 200 OK", b"HTTP/1.1 404 Not Found")
    finally:
        writer.close()


async def test_head_answers_without_a_body(server: HealthServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = await reader.read()  # closed after the head, as asked
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"Content-Length: 3\r\n" in answer
        assert answer.endswith(b"\r\n\r\n")
    finally:
        writer.close()
