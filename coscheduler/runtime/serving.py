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
is asyncio's own server and a request line read by hand (issue #28: aiohttp's
import was a fifth of a second on the way to the first Binding). Kept-alive
connections are served in turn; anything but a GET (or HEAD) is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import Callable
from typing import Final

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.queue_listing import QueueListing

__all__ = ["HealthServer"]

#: A request's head beyond this is refused (ours are a line and a few headers).
_MAX_HEAD_BYTES: Final = 64 * 1024
#: A kept-alive connection with no request for this long is closed.
_IDLE_SECONDS: Final = 120.0
_REASONS: Final = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
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
    ) -> None:
        self._metrics = metrics
        self._alive = alive
        self._ready = ready
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()
        self.port: int | None = None
        #: Set while this replica leads: the rows of ``/debug/queue``.
        self.listing: QueueListing | None = None

    async def start(self, address: str, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, address, port, limit=_MAX_HEAD_BYTES)
        sockets = self._server.sockets
        self.port = int(sockets[0].getsockname()[1]) if sockets else port

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for writer in list(self._connections):
            writer.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.add(writer)
        try:
            while True:
                async with asyncio.timeout(_IDLE_SECONDS):
                    head = await reader.readuntil(b"\r\n\r\n")
                keep_alive = await self._answer(head, reader, writer)
                await writer.drain()
                if not keep_alive:
                    break
        except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client went away, idled, or sent what is not a request of ours
        finally:
            self._connections.discard(writer)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _answer(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one request; whether the connection stays open for another."""
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        parts = request_line.split(" ")
        headers = {}
        for line in header_lines:
            name, colon, value = line.partition(":")
            if colon:
                headers[name.strip().lower()] = value.strip()
        length = headers.get("content-length", "0")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not length.isdigit():
            _write(writer, (400, _TEXT, b"bad request\n"), keep_alive=False, head_only=False)
            return False
        method, target, version = parts
        if int(length):
            await reader.readexactly(int(length))  # a body nobody asked for: skip it
        connection = headers.get("connection", "").lower()
        keep_alive = connection != "close" and (version == "HTTP/1.1" or connection == "keep-alive")
        if method not in ("GET", "HEAD"):
            answer: Answer = (405, _TEXT, b"only GET\n")
        else:
            url = urllib.parse.urlsplit(target)
            answer = self._route(url.path, dict(urllib.parse.parse_qsl(url.query)))
        _write(writer, answer, keep_alive=keep_alive, head_only=method == "HEAD")
        return keep_alive

    def _route(self, path: str, query: dict[str, str]) -> Answer:
        if path == "/metrics":
            return 200, CONTENT_TYPE_LATEST, generate_latest(self._metrics.registry)
        if path == "/healthz":
            ok = self._alive()
            return (200, _TEXT, b"ok\n") if ok else (503, _TEXT, b"unhealthy\n")
        if path == "/readyz":
            ok = self._ready()
            return (200, _TEXT, b"ok\n") if ok else (503, _TEXT, b"not ready\n")
        if path == "/debug/queue":
            listing = self.listing
            if listing is None:
                return 503, _JSON, orjson.dumps({"error": "this replica does not lead"})
            rows = listing.rows(namespace=query.get("namespace"), queue=query.get("queue"))
            return 200, _JSON, orjson.dumps({"groups": rows})
        return 404, _TEXT, b"not found\n"


def _write(
    writer: asyncio.StreamWriter, answer: Answer, *, keep_alive: bool, head_only: bool
) -> None:
    status, content_type, body = answer
    reason = _REASONS.get(status, "Service Unavailable" if status == 503 else "")
    closing = "" if keep_alive else "Connection: close\r\n"
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n{closing}\r\n"
    ).encode()
    writer.write(head if head_only else head + body)
