"""The loop ``coscheduler run`` runs on: uvloop's by default, asyncio's when asked or missing."""

from __future__ import annotations

import asyncio
import sys

import pytest
import uvloop

from coscheduler.cli import run_settings
from coscheduler.runtime.eventloop import loop_factory
from coscheduler.runtime.settings import EventLoop


def test_uvloop_by_default_and_asyncio_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COSCHEDULER_EVENT_LOOP", raising=False)
    assert run_settings([]).event_loop is EventLoop.UVLOOP
    assert run_settings(["--event-loop", "asyncio"]).event_loop is EventLoop.ASYNCIO
    monkeypatch.setenv("COSCHEDULER_EVENT_LOOP", "asyncio")
    assert run_settings([]).event_loop is EventLoop.ASYNCIO


@pytest.mark.parametrize(
    ("choice", "kind"),
    [(EventLoop.UVLOOP, uvloop.Loop), (EventLoop.ASYNCIO, asyncio.BaseEventLoop)],
)
def test_the_loop_made_is_the_one_chosen(choice: EventLoop, kind: type) -> None:
    loop = loop_factory(choice)()
    try:
        assert isinstance(loop, kind)
        assert not isinstance(loop, uvloop.Loop) or choice is EventLoop.UVLOOP
    finally:
        loop.close()


def test_asyncios_loop_where_uvloop_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` raises ImportError
    assert loop_factory(EventLoop.UVLOOP) is asyncio.new_event_loop
