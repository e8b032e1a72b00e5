"""The dashboard's server on loopback: the page, its files, its JSON and its live stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import orjson
import pytest

from coscheduler.dashboard.server import DashboardServer
from tests.dashboard.test_model import cluster


@pytest.fixture
async def served() -> AsyncIterator[str]:
    _, data = cluster()
    server = DashboardServer(data, interval_seconds=0.05)
    await server.start("127.0.0.1", 0)
    yield f"http://127.0.0.1:{server.port}"
    await server.stop()


async def test_the_page_and_its_files_are_served(served: str) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{served}/") as answer:
            assert answer.status == 200
            assert "/static/dashboard.js" in await answer.text()
        for path in ("dashboard.js", "dashboard.css", "vendor/uPlot.iife.min.js"):
            async with session.get(f"{served}/static/{path}") as answer:
                assert answer.status == 200, path


async def test_overview_and_gang_pages_answer_json(served: str) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{served}/api/overview") as answer:
            overview = orjson.loads(await answer.read())
        assert [row["name"] for row in overview["line"]["head"]] == ["big"]
        async with session.get(f"{served}/api/gangs/default/pair") as answer:
            assert (await answer.json())["name"] == "pair"
        async with session.get(f"{served}/api/gangs/default/nothing") as answer:
            assert answer.status == 404


async def test_the_stream_sends_each_part_at_once_then_only_what_changed(served: str) -> None:
    async with aiohttp.ClientSession() as session, session.get(f"{served}/api/events") as answer:
        assert answer.headers["Content-Type"] == "text/event-stream"
        parts = {}
        for _ in range(4):
            event = await answer.content.readline()
            data = await answer.content.readline()
            assert await answer.content.readline() == b"\n"
            assert event.startswith(b"event: ")
            assert data.startswith(b"data: ")
            parts[event[len(b"event: ") : -1].decode()] = orjson.loads(data[len(b"data: ") :])
        assert set(parts) == {"role", "queues", "line", "room"}
        assert parts["line"]["total"] == 1
        with pytest.raises(TimeoutError):  # nothing changed: nothing more is sent
            await asyncio.wait_for(answer.content.readline(), 0.3)


async def test_nothing_but_get_is_answered(served: str) -> None:
    async with aiohttp.ClientSession() as session, session.post(f"{served}/api/overview") as answer:
        assert answer.status == 405


async def test_a_failing_round_is_logged_and_the_next_one_sends() -> None:
    _, data = cluster()
    made = data.overview
    calls = []

    def first_fails() -> dict[str, object]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a bug in the page's data")
        return made()

    data.overview = first_fails  # type: ignore[method-assign]
    server = DashboardServer(data, interval_seconds=0.05)
    await server.start("127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{server.port}/api/events"
        async with aiohttp.ClientSession() as session, session.get(url) as answer:
            event = await asyncio.wait_for(answer.content.readline(), 5)
            assert event.startswith(b"event: ")
        assert len(calls) >= 2
    finally:
        await server.stop()
