"""Keep-alive HTTP/1.1 for the scheduler's short writes: Bindings, Events, status patches.

aiohttp's client spends about 250 µs of CPU on each request (building a URL,
a request object, header multidicts, timers, tracing hooks): a Binding and a
``Scheduled`` Event per pod made it most of the scheduler's CPU per pod
(issue #28). The writes need none of that: one server, small JSON bodies in
and out, no redirects, cookies or proxies. This pool sends each request as
one pre-formatted buffer on a kept-alive connection and reads the answer in
the protocol's callback, about a quarter of the cost.

It is :mod:`coscheduler.runtime.kube`'s and only for requests without a
proxy; watches and reads stay on aiohttp. What it does not understand (no
status line, a malformed length) ends the connection with ``ConnectionError``;
a connection that is closed, reset or times out is never reused, so an answer
can never be read as another request's.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
from typing import Final

__all__ = ["Http1Pool"]

_HEAD_END: Final = b"\r\n\r\n"
#: Answers of these statuses have no body whatever their headers say.
_NO_BODY: Final = frozenset({204, 304})
#: Methods whose request may be sent twice (RFC 9110, 9.2.2).
_IDEMPOTENT: Final = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})
#: Larger than any answer to a write; an answer beyond it is refused, not buffered.
_MAX_ANSWER_BYTES: Final = 64 * 1024 * 1024


class _Connection(asyncio.Protocol):
    """One connection; at most one request in flight on it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.usable = True
        self._buffer = bytearray()
        self._answer: asyncio.Future[tuple[int, bytes]] | None = None
        self._status = 0
        self._length: int | None = None  # body length, once the head is read
        self._chunked = False
        self._head_size = -1
        self._close_after = False

    # -- asyncio.Protocol ---------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._answer is None:
            self._fail(ConnectionError("bytes arrived while no request was in flight"))
            return
        try:
            self._parse()
        except (ValueError, IndexError) as error:
            self._fail(ConnectionError(f"unreadable answer: {error}"))

    def eof_received(self) -> bool | None:
        if self._answer is not None and self._head_size >= 0 and self._until_close():
            self._finish(bytes(self._buffer[self._head_size :]))
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.usable = False
        self._fail(exc or ConnectionError("the server disconnected before answering"))

    # -- requests -------------------------------------------------------------

    def send(self, request: bytes) -> asyncio.Future[tuple[int, bytes]]:
        assert self.transport is not None
        assert self._answer is None
        self._answer = asyncio.get_running_loop().create_future()
        self._buffer.clear()
        self._head_size = -1
        self.transport.write(request)
        return self._answer

    def close(self) -> None:
        self.usable = False
        if self.transport is not None:
            self.transport.close()

    def time_out(self) -> None:
        """No whole answer in time: give up on it and on this connection."""
        self._fail(TimeoutError("no answer in time"))

    # -- reading the answer -------------------------------------------------

    def _until_close(self) -> bool:
        return self._length is None and not self._chunked

    def _parse(self) -> None:
        if self._head_size < 0:
            end = self._buffer.find(_HEAD_END)
            if end < 0:
                if len(self._buffer) > _MAX_ANSWER_BYTES:
                    raise ValueError("no end of the headers")
                return
            self._read_head(bytes(self._buffer[:end]))
            self._head_size = end + len(_HEAD_END)
            if 100 <= self._status < 200:  # an interim answer: the real one follows
                del self._buffer[: self._head_size]
                self._head_size = -1
                self._parse()
                return
        if self._chunked:
            body = self._chunks()
            if body is not None:
                self._finish(body)
        elif self._length is not None:
            if len(self._buffer) - self._head_size >= self._length:
                self._finish(bytes(self._buffer[self._head_size : self._head_size + self._length]))
        elif len(self._buffer) > _MAX_ANSWER_BYTES:
            raise ValueError("answer too large")
        # else: read until the server closes the connection (eof_received)

    def _read_head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        version, status, *_ = lines[0].split(b" ", 2)
        if not version.startswith(b"HTTP/1."):
            raise ValueError(f"not an HTTP/1 status line: {lines[0][:80]!r}")
        self._status = int(status)
        self._length = None
        self._chunked = False
        self._close_after = version == b"HTTP/1.0"
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                self._length = int(value)
                if self._length < 0 or self._length > _MAX_ANSWER_BYTES:
                    raise ValueError(f"content-length {self._length}")
            elif name == b"transfer-encoding":
                self._chunked = value.strip().lower().endswith(b"chunked")
            elif name == b"connection":
                tokens = value.strip().lower()
                self._close_after = b"close" in tokens or (
                    self._close_after and b"keep-alive" not in tokens
                )
        if self._status in _NO_BODY:
            self._length, self._chunked = 0, False
        if self._until_close():
            self._close_after = True

    def _chunks(self) -> bytes | None:
        """The whole body once its last chunk is in, else None (wait for more)."""
        body = bytearray()
        at = self._head_size
        buffer = self._buffer
        while True:
            line_end = buffer.find(b"\r\n", at)
            if line_end < 0:
                return None
            size = int(bytes(buffer[at:line_end]).split(b";", 1)[0], 16)
            start = line_end + 2
            if size == 0:
                # Trailers, if any, end with an empty line.
                return bytes(body) if buffer.find(_HEAD_END, line_end) >= 0 else None
            if len(buffer) < start + size + 2:
                return None
            body += buffer[start : start + size]
            at = start + size + 2

    def _finish(self, body: bytes) -> None:
        answer, self._answer = self._answer, None
        if self._close_after:
            self.close()
        if answer is not None and not answer.done():
            answer.set_result((self._status, body))

    def _fail(self, error: BaseException) -> None:
        self.close()
        answer, self._answer = self._answer, None
        if answer is not None and not answer.done():
            answer.set_exception(error)


class Http1Pool:
    """Up to ``max_connections`` kept-alive connections to ``server`` (``https://host:port``)."""

    def __init__(
        self,
        server: str,
        *,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None = None,
        max_connections: int = 64,
    ) -> None:
        url = urllib.parse.urlsplit(server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not an http(s) server: {server!r}")
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port or (443 if self._https else 80)
        self._ssl = (ssl_context or ssl.create_default_context()) if self._https else None
        self._server_hostname = (server_hostname or self._host) if self._https else None
        #: Prefixes every request's path (a server URL may have one, as a proxy's).
        self._base_path = url.path.rstrip("/")
        host = f"[{self._host}]" if ":" in self._host else self._host
        self._host_header = (
            f"Host: {host}:{url.port}\r\n" if url.port else f"Host: {host}\r\n"
        ).encode()
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: list[_Connection] = []
        self._closed = False

    async def request(
        self, method: str, path: str, headers: bytes, body: bytes | None, *, within: float
    ) -> tuple[int, bytes]:
        """Send one request and return its status and body.

        ``headers`` are complete header lines (``Name: value\\r\\n`` each) but
        Host and Content-Length. Raises ``OSError`` (``ConnectionError`` among
        them) or ``ssl.SSLError`` when there is no whole answer, ``TimeoutError``
        when there is none ``within`` seconds of the request's start
        (waiting for a free connection included; the connection is then dropped).
        """
        head = f"{method} {self._base_path}{path} HTTP/1.1\r\n".encode()
        length = b"Content-Length: %d\r\n\r\n" % len(body) if body is not None else b"\r\n"
        message = b"".join((head, self._host_header, headers, length, body or b""))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        if self._slots.locked():
            async with asyncio.timeout_at(deadline):
                await self._slots.acquire()
        else:
            await self._slots.acquire()
        try:
            # As aiohttp does (RFC 9112, 9.3.1): an idempotent request whose kept-alive
            # connection turned out closed is sent once more, on a new connection.
            again = method in _IDEMPOTENT
            while True:
                connection = self._idle_connection()
                reused = connection is not None
                if connection is None:
                    async with asyncio.timeout_at(deadline):
                        connection = await self._connect()
                try:
                    answer = await self._exchange(connection, message, deadline)
                except ConnectionError:
                    if not (reused and again):
                        raise
                    again = False
                    continue
                if connection.usable and not self._closed:
                    self._idle.append(connection)
                else:
                    connection.close()
                return answer
        finally:
            self._slots.release()

    @staticmethod
    async def _exchange(
        connection: _Connection, message: bytes, deadline: float
    ) -> tuple[int, bytes]:
        # A plain timer, not asyncio.timeout: this is the hot path.
        timer = asyncio.get_running_loop().call_at(deadline, connection.time_out)
        try:
            return await connection.send(message)
        except BaseException:
            connection.close()  # the answer may still come: never read it as another's
            raise
        finally:
            timer.cancel()

    def _idle_connection(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            transport = connection.transport
            if connection.usable and transport is not None and not transport.is_closing():
                return connection
        return None

    async def _connect(self) -> _Connection:
        if self._closed:
            raise ConnectionError("the pool is closed")
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(
            _Connection,
            self._host,
            self._port,
            ssl=self._ssl,
            server_hostname=self._server_hostname,
        )
        return connection

    def close(self) -> None:
        self._closed = True
        for connection in self._idle:
            connection.close()
        self._idle.clear()
