"""The HTTP endpoint: ``/metrics``, ``/healthz`` (alive) and ``/readyz`` (ready).

* ``/healthz`` answers 200 while the process's event loop turns and its
  long-running tasks are alive; a probe failure restarts the container.
* ``/readyz`` answers 200 once this replica is useful: a standby that waits
  for the Lease is ready, a leader is ready once its caches are filled.
* ``/debug/queue`` lists the pending groups in the order the next pass tries
  them, as JSON (:mod:`~coscheduler.runtime.queue_listing`); ``namespace``
  and ``queue`` query parameters filter. Read-only; 503 on a replica that
  does not lead (it has no queue). ``coscheduler queue`` reads it.

aiohttp's server, on the scheduler's own event loop: ``/debug/queue`` reads
the scheduler's state, which only the loop's thread may touch (the standard
library's ``http.server``, as prometheus_client starts it, answers from a
thread of its own); aiohttp is loaded already by kubernetes_asyncio. GET and
HEAD only; prometheus_client writes the exposition.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.queue_listing import QueueListing

__all__ = ["HealthServer"]


class HealthServer:
    def __init__(
        self,
        metrics: Metrics,
        *,
        alive: Callable[[], bool],
        ready: Callable[[], bool],
        listing: QueueListing | None = None,
    ) -> None:
        self._metrics = metrics
        self._alive = alive
        self._ready = ready
        #: The rows of ``/debug/queue`` (None: not served).
        self._listing = listing
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    async def start(self, address: str, port: int) -> None:
        app = web.Application()
        # add_get answers HEAD too; any other method is 405.
        app.router.add_get("/metrics", self._exposition)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/debug/queue", self._queue)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, address, port).start()
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _exposition(self, request: web.Request) -> web.Response:
        body = generate_latest(self._metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, request: web.Request) -> web.Response:
        ok = self._alive()
        return web.Response(status=200 if ok else 503, text="ok\n" if ok else "unhealthy\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        ok = self._ready()
        return web.Response(status=200 if ok else 503, text="ok\n" if ok else "not ready\n")

    async def _queue(self, request: web.Request) -> web.Response:
        query = request.query
        listing = self._listing
        rows = (
            None
            if listing is None
            else listing.rows(namespace=query.get("namespace"), queue=query.get("queue"))
        )
        if rows is None:
            body = orjson.dumps({"error": "this replica does not lead"})
            return web.Response(status=503, body=body, content_type="application/json")
        return web.Response(body=orjson.dumps({"groups": rows}), content_type="application/json")
