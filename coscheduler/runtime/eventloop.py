"""The event loop ``coscheduler run`` runs on: uvloop's, else asyncio's own.

uvloop runs the loop, its sockets and TLS in C (libuv), where asyncio's
SSL layer and callbacks are Python: a tenth or more of the CPU of a
scheduler talking TLS to its API server. ``--event-loop
asyncio`` keeps the standard loop as a way out; where uvloop is not
installed (it has no Windows build) asyncio's loop is used and a warning says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from coscheduler.runtime.settings import EventLoop

__all__ = ["loop_factory"]

_log = structlog.get_logger(__name__)


def loop_factory(choice: EventLoop) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes the loop of ``choice``: for :class:`asyncio.Runner` or a test."""
    if choice is EventLoop.UVLOOP:
        try:
            import uvloop
        except ImportError:
            _log.warning("uvloop is not installed: running on asyncio's own event loop")
        else:
            return uvloop.new_event_loop
    return asyncio.new_event_loop
