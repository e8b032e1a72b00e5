"""The loop these tests run on is uvloop's."""

from __future__ import annotations

import asyncio

import uvloop


async def test_the_running_loop_is_uvloops() -> None:
    assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
