"""The dashboard's HTTP server: the page, its static files, its JSON and a live stream.

aiohttp's server (a dependency already; imported only when the dashboard is
on, never on the way to the first Binding). Routes, every one a GET:

* ``/``: the page; ``/static/...``: its script, style and the vendored
  charting library (package data, no build step);
* ``/api/overview``: queues, the line, the room (:meth:`PageData.overview`);
* ``/api/gangs/{namespace}/{name}``: one gang's page;
* ``/api/events``: server-sent events, one per part of the overview
  (``role``, ``queues``, ``line``, ``room``) whenever that part changed, at
  most every ``interval`` seconds: the room of 5,000 nodes is not sent again
  because a group moved up the line.

One publisher makes the overview for every open stream, on the event loop
(the scheduler's state is read where it is changed, never from a thread),
and spaces its rounds so that it takes at most ``BUDGET`` of the loop.
Nothing here writes to the cluster or asks the API server.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

import orjson
import structlog
from aiohttp import web

from coscheduler.core.scheduler_reads import SchedulerReads
from coscheduler.dashboard.model import PageData
from coscheduler.runtime.events import EventRecorder
from coscheduler.runtime.queue_listing import QueueListing
from coscheduler.runtime.readmodel import ReadModel
from coscheduler.runtime.settings import DashboardSettings

__all__ = ["BUDGET", "DashboardServer", "serve_page"]

log = structlog.get_logger(__name__)

STATIC: Final = Path(__file__).resolve().parent / "static"
#: The share of the event loop's time the publisher may take.
BUDGET: Final = 0.05
#: Seconds between samples of the queues' shares while no page is open.
_IDLE_SAMPLE_SECONDS: Final = 30.0
_JSON: Final = "application/json"


class _Stream:
    """One open page's stream: the parts it has not been sent yet."""

    def __init__(self, parts: dict[str, bytes]) -> None:
        self.unsent = dict(parts)
        self.wake = asyncio.Event()
        self.ended = False
        self.wake.set()


class DashboardServer:
    """Serves :class:`PageData` on its own port (module docstring)."""

    def __init__(self, data: PageData, *, interval_seconds: float = 2.0) -> None:
        self._data = data
        self._interval = interval_seconds
        self._streams: set[_Stream] = set()
        #: Each part of the overview as last sent, for a page that opens meanwhile.
        self._last: dict[str, bytes] = {}
        self._wake = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._publisher: asyncio.Task[None] | None = None
        self.port: int | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/", self._page)
        app.router.add_get("/api/overview", self._overview)
        app.router.add_get("/api/gangs/{namespace}/{name}", self._gang)
        app.router.add_get("/api/events", self._events)
        app.router.add_static("/static", STATIC)
        return app

    async def start(self, address: str, port: int) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, address, port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or ()
        self.port = int(sockets[0].getsockname()[1]) if sockets else port
        self._publisher = asyncio.create_task(self._publish(), name="dashboard")
        log.info("dashboard", address=address, port=self.port, url=f"http://{address}:{self.port}/")

    async def stop(self) -> None:
        if self._publisher is not None:
            self._publisher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._publisher
        for stream in self._streams:  # the open streams end, so that the runner's cleanup does
            stream.ended = True
            stream.wake.set()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- routes ---------------------------------------------------------------

    async def _page(self, _: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / "index.html")

    async def _overview(self, _: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps(self._data.overview()), content_type=_JSON)

    async def _gang(self, request: web.Request) -> web.Response:
        found = self._data.gang(request.match_info["namespace"], request.match_info["name"])
        if found is None:
            raise web.HTTPNotFound(text="no such group\n")
        return web.Response(body=orjson.dumps(found), content_type=_JSON)

    async def _events(self, request: web.Request) -> web.StreamResponse:
        """Each part of the overview as an event named after it, whenever it changed."""
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        stream = _Stream(self._last)
        self._streams.add(stream)
        self._wake.set()
        try:
            while True:
                await stream.wake.wait()
                stream.wake.clear()
                if stream.ended:
                    break
                parts, stream.unsent = stream.unsent, {}
                if parts:
                    await response.write(
                        b"".join(
                            b"event: " + name.encode() + b"\ndata: " + body + b"\n\n"
                            for name, body in parts.items()
                        )
                    )
        except ConnectionResetError:
            pass
        finally:
            self._streams.discard(stream)
        return response

    # -- the publisher ----------------------------------------------------------

    async def _publish(self) -> None:
        """Make the overview for the open streams, send the parts that changed, within
        the budget; with no page open, only sample the shares for the sparklines."""
        while True:
            if not self._streams:
                self._last = {}
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), _IDLE_SAMPLE_SECONDS)
            parts: dict[str, bytes] = {}
            took = 0.0
            try:
                if not self._streams:
                    self._data.sample()
                    continue
                started = time.monotonic()
                parts = {name: orjson.dumps(part) for name, part in self._data.overview().items()}
                took = time.monotonic() - started
            except Exception:  # a bug here must not end the page, nor touch the scheduler
                log.exception("dashboard round failed")
            changed = {name: body for name, body in parts.items() if self._last.get(name) != body}
            self._last = parts
            if changed:
                for stream in self._streams:
                    stream.unsent.update(changed)  # a slow page gets the newest, not a backlog
                    stream.wake.set()
            await asyncio.sleep(max(self._interval, took / BUDGET))


async def serve_page(
    view: ReadModel,
    reads: SchedulerReads,
    settings: DashboardSettings,
    *,
    role: Callable[[], str],
    events: EventRecorder,
) -> DashboardServer:
    """Serve the dashboard of a scheduler's read model and its reads, as ``settings`` say;
    a gang's page lists the events ``events`` wrote about it."""
    data = PageData(
        view,
        QueueListing(reads, view.verdict),
        clock=time.time,
        role=role,
        events=events.written_about,
    )
    server = DashboardServer(data)
    await server.start(settings.address, settings.port)
    return server
