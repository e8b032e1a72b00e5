"""The HTTP endpoint: ``/metrics``, ``/healthz`` (alive) and ``/readyz`` (ready).

* ``/healthz`` answers 200 while the process's event loop turns and its
  long-running tasks are alive; a probe failure restarts the container.
* ``/readyz`` answers 200 once this replica is useful: a standby that waits
  for the Lease is ready, a leader is ready once its caches are filled.
* ``/debug/queue`` lists the pending groups in the order the next pass tries
  them, as JSON (:mod:`~coscheduler.runtime.queue_listing`); ``namespace``
  and ``queue`` query parameters filter. Read-only; 503 on a replica that
  does not lead (it has no queue). ``coscheduler queue`` reads it.

A few GETs a minute from probes and Prometheus need no web framework: this
is asyncio's own server with httptools (already the client's parser) reading
the requests (issue #28: aiohttp's import was a fifth of a second on the way
to the first Binding). Every answer is made at once, without awaiting, so a
connection's requests are answered in order, kept alive as HTTP/1.1 asks;
anything but a GET (or HEAD) is refused.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Callable
from typing import Final, cast

import httptools
import orjson
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.queue_listing import QueueListing

__all__ = ["HealthServer"]

#: A request's head beyond this is refused (ours are a line and a few headers).
_MAX_HEAD_BYTES: Final = 64 * 1024
#: A kept-alive connection with no request for this long is closed.
_IDLE_SECONDS: Final = 120.0
_REASONS: Final = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    503: "Service Unavailable",
}
_TEXT: Final = "text/plain; charset=utf-8"
_JSON: Final = "application/json"

Answer = tuple[int, str, bytes]


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
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()
        self.port: int | None = None

    async def start(self, address: str, port: int) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Connection(self), address, port)
        sockets = self._server.sockets
        self.port = int(sockets[0].getsockname()[1]) if sockets else port

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for connection in list(self._connections):
            connection.close()
        await self._server.wait_closed()

    def route(self, method: bytes, target: bytes) -> Answer:
        """The answer to one request (made at once: nothing here awaits)."""
        if method not in (b"GET", b"HEAD"):
            return 405, _TEXT, b"only GET\n"
        url = urllib.parse.urlsplit(target.decode("latin-1"))
        path, query = url.path, dict(urllib.parse.parse_qsl(url.query))
        if path == "/metrics":
            return 200, CONTENT_TYPE_LATEST, generate_latest(self._metrics.registry)
        if path == "/healthz":
            ok = self._alive()
            return (200, _TEXT, b"ok\n") if ok else (503, _TEXT, b"unhealthy\n")
        if path == "/readyz":
            ok = self._ready()
            return (200, _TEXT, b"ok\n") if ok else (503, _TEXT, b"not ready\n")
        if path == "/debug/queue":
            listing = self._listing
            rows = (
                None
                if listing is None
                else listing.rows(namespace=query.get("namespace"), queue=query.get("queue"))
            )
            if rows is None:
                return 503, _JSON, orjson.dumps({"error": "this replica does not lead"})
            return 200, _JSON, orjson.dumps({"groups": rows})
        return 404, _TEXT, b"not found\n"


class _Connection(asyncio.Protocol):
    """One client's connection: httptools parses, each whole request is answered in turn."""

    def __init__(self, server: HealthServer) -> None:
        self._server = server
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._target = b""
        self._head_bytes = 0
        self._in_head = False
        self._idle: asyncio.TimerHandle | None = None

    # asyncio's side.

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's has asyncio.Transport's methods, not its class).
        self._transport = cast(asyncio.Transport, transport)
        self._server._connections.add(self)
        self._wait_idle()

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.close()  # the request before it is answered; nothing here upgrades
            return
        except httptools.HttpParserError:  # not HTTP/1
            self._answer((400, _TEXT, b"bad request\n"), keep_alive=False, head_only=False)
            return
        if self._in_head:  # a head still incomplete after this data: bounded
            self._head_bytes += len(data)
            if self._head_bytes > _MAX_HEAD_BYTES:
                self._answer((400, _TEXT, b"head too large\n"), keep_alive=False, head_only=False)

    def connection_lost(self, exc: Exception | None) -> None:
        self._server._connections.discard(self)
        if self._idle is not None:
            self._idle.cancel()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    # httptools' side.

    def on_message_begin(self) -> None:
        self._target = b""
        self._in_head = True
        self._head_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._target += url

    def on_headers_complete(self) -> None:
        self._in_head = False

    def on_message_complete(self) -> None:
        method = self._parser.get_method()
        answer = self._server.route(method, self._target)
        self._answer(
            answer, keep_alive=self._parser.should_keep_alive(), head_only=method == b"HEAD"
        )

    def _answer(self, answer: Answer, *, keep_alive: bool, head_only: bool) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        status, content_type, body = answer
        closing = "" if keep_alive else "Connection: close\r\n"
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n{closing}\r\n"
        ).encode()
        transport.write(head if head_only else head + body)
        if keep_alive:
            self._wait_idle()
        else:
            transport.close()  # after what was written is sent

    def _wait_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._idle = asyncio.get_running_loop().call_later(_IDLE_SECONDS, self.close)
