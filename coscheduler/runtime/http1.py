"""Keep-alive HTTP/1.1 to the API server: writes, reads and watches.

aiohttp's client spends about 250 µs of CPU on each request (building a URL,
a request object, header multidicts, timers, tracing hooks): a Binding and a
``Scheduled`` Event per pod made it most of the scheduler's CPU per pod.
The scheduler needs none of that: one server, JSON bodies in
and out, no redirects, cookies or proxies (:mod:`coscheduler.runtime.proxied`
reaches a cluster behind one). This pool sends each request as one
pre-formatted buffer on a kept-alive connection and hands the answer's
bytes, in the protocol's callback, to httptools' binding of llhttp (the
parser of Node.js and uvicorn), which reads status, headers, lengths, chunks
and interim answers; about a quarter of aiohttp's cost.

It is :mod:`coscheduler.runtime.kube`'s, for writes and, in a pool of its
own, for reads and watches (:meth:`Http1Pool.open`: the answer's body is
handed over as it arrives, with flow control, so a watch or a list of
50,000 pods streams through it). What llhttp refuses (garbage, a
malformed length, bytes beyond the answer) ends the connection with
``ConnectionError``; a connection that is closed, reset or times out is
never reused, so an answer can never be read as another request's.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import urllib.parse
from collections.abc import Callable
from typing import Final, cast

import httptools

__all__ = ["Http1Pool", "StreamedAnswer"]

#: Headers that say where a body ends; without them it ends with the connection.
_LENGTH_HEADERS: Final = frozenset({b"content-length", b"transfer-encoding"})
#: Answers of these statuses have no body whatever their headers say.
_NO_BODY: Final = frozenset({204, 304})
#: Methods whose request may be sent twice (RFC 9110, 9.2.2).
_IDEMPOTENT: Final = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})
#: Larger than any answer to a write; an answer beyond it is refused, not buffered.
_MAX_ANSWER_BYTES: Final = 64 * 1024 * 1024
#: A streamed answer stops reading from its socket while this much waits unread...
_PAUSE_ABOVE_BYTES: Final = 4 * 1024 * 1024
#: ...and reads again once its reader has taken all but this much.
_RESUME_BELOW_BYTES: Final = 1024 * 1024


class StreamedAnswer:
    """The status of an answer and its body as it arrives (:meth:`Http1Pool.open`).

    Read with :meth:`read` until it returns ``b""``; always :meth:`close` it
    (at its end the connection goes back to the pool, before it the
    connection is dropped: the rest of the body must never be read as
    another request's answer).
    """

    def __init__(self, pool: Http1Pool, connection: _Connection) -> None:
        self._pool: Http1Pool | None = pool
        self._connection = connection
        self.status = 0
        #: The Content-Encoding header, lower case (b"" when there is none).
        self.encoding = b""
        self._chunks: collections.deque[bytes] = collections.deque()
        self._unread = 0
        self._paused = False
        self._ended = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None

    async def read(self, *, within: float) -> bytes:
        """The next bytes of the body; ``b""`` at its end.

        Raises ``TimeoutError`` when nothing arrives ``within`` seconds (the
        connection is then dropped), ``OSError`` when the connection fails.
        """
        if not self._chunks and not self._ended and self._error is None:
            loop = asyncio.get_running_loop()
            self._waiter = loop.create_future()
            timer = loop.call_later(within, self._time_out)
            try:
                await self._waiter
            finally:
                timer.cancel()
                self._waiter = None
        if self._chunks:
            chunk = self._chunks.popleft()
            self._unread -= len(chunk)
            if self._paused and self._unread < _RESUME_BELOW_BYTES:
                self._paused = False
                self._connection.resume_reading()
            return chunk
        if self._error is not None:
            raise self._error
        self.close()  # the whole answer is read: its connection is free again
        return b""

    def close(self) -> None:
        """Give the connection back (the body was read to its end) or drop it."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.give_back(self._connection, reuse=self._ended and not self._chunks)

    # -- from the connection --------------------------------------------------

    def feed(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        self._unread += len(chunk)
        if not self._paused and self._unread > _PAUSE_ABOVE_BYTES:
            self._paused = True
            self._connection.pause_reading()
        self._wake()

    def end(self) -> None:
        self._ended = True
        self._wake()

    def fail(self, error: BaseException) -> None:
        if not self._ended:
            self._error = error
        self._wake()

    def _time_out(self) -> None:
        self._connection.time_out()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class _Connection(asyncio.Protocol):
    """One connection; at most one request in flight on it.

    Its parser (llhttp, through httptools) lives as long as the connection and
    reads the answers one after another; it calls the ``on_*`` methods.
    """

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.usable = True
        self._ended = False
        #: Told once when the connection ends (the pool counts those open).
        self._on_lost: Callable[[], None] | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._answer: asyncio.Future[tuple[int, bytes]] | None = None
        #: Set while a streamed answer is in flight; ``_head`` until its head is read.
        self._stream: StreamedAnswer | None = None
        self._head: asyncio.Future[None] | None = None
        self._status = 0
        self._body: list[bytes] = []
        self._body_size = 0
        self._head_read = False
        #: The answer's head said how its body ends (a length, chunks, or none by status).
        self._delimited = False
        self._keep_alive = True

    # -- asyncio.Protocol ---------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's has asyncio.Transport's methods, not its class).
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self._answer is None and self._stream is None:
            self._fail(ConnectionError("bytes arrived while no request was in flight"))
            return
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as error:
            # An upgrade (101) is never asked for: as unreadable as garbage.
            self._fail(ConnectionError(f"unreadable answer: {error!r}"))

    def eof_received(self) -> bool | None:
        # httptools cannot tell llhttp the stream ended: an answer whose body
        # runs to the end of the connection is finished here.
        in_flight = self._answer is not None or self._stream is not None
        if in_flight and self._head_read and not self._delimited:
            self._keep_alive = False
            self.on_message_complete()
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.usable = False
        self._ended = True
        on_lost, self._on_lost = self._on_lost, None
        if on_lost is not None:
            on_lost()
        self._fail(exc or ConnectionError("the server disconnected before answering"))

    # -- the parser's callbacks -----------------------------------------------

    def on_message_begin(self) -> None:
        if self._answer is None and self._stream is None:
            raise ConnectionError("a second answer to one request")
        self._body.clear()
        self._body_size = 0
        self._head_read = False
        self._delimited = False

    def on_header(self, name: bytes, value: bytes) -> None:
        lower = name.lower()
        if lower in _LENGTH_HEADERS:
            self._delimited = True
        elif lower == b"content-encoding" and self._stream is not None:
            self._stream.encoding = value.strip().lower()

    def on_headers_complete(self) -> None:
        self._status = self._parser.get_status_code()
        self._head_read = True
        self._keep_alive = self._parser.should_keep_alive()
        if self._status in _NO_BODY:
            self._delimited = True
        if self._stream is not None and self._status >= 200:
            self._stream.status = self._status
            head, self._head = self._head, None
            if head is not None and not head.done():
                head.set_result(None)

    def on_body(self, body: bytes) -> None:
        if self._stream is not None:
            self._stream.feed(body)
            return
        self._body_size += len(body)
        if self._body_size > _MAX_ANSWER_BYTES:
            raise ValueError("answer too large")
        self._body.append(body)

    def on_message_complete(self) -> None:
        if self._status < 200:  # an interim answer (100 Continue): the real one follows
            return
        if self._stream is not None:
            stream, self._stream = self._stream, None
            if not self._keep_alive:
                self.close()
            stream.end()
            return
        answer, self._answer = self._answer, None
        if not self._keep_alive:
            self.close()
        if answer is not None and not answer.done():
            body = self._body[0] if len(self._body) == 1 else b"".join(self._body)
            answer.set_result((self._status, body))

    # -- the pool's ------------------------------------------------------------

    def tell_end(self, on_lost: Callable[[], None]) -> bool:
        """Call ``on_lost`` when the connection ends; False (and never) if it has already."""
        if self._ended:
            return False
        self._on_lost = on_lost
        return True

    # -- requests -------------------------------------------------------------

    def send(self, request: bytes) -> asyncio.Future[tuple[int, bytes]]:
        assert self.transport is not None
        assert self._answer is None
        self._answer = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return self._answer

    def send_streamed(self, request: bytes, stream: StreamedAnswer) -> asyncio.Future[None]:
        """Send ``request``; its answer's body goes to ``stream``; the future is its head."""
        assert self.transport is not None
        assert self._answer is None
        assert self._stream is None
        self._stream = stream
        self._head = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return self._head

    def pause_reading(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def close(self) -> None:
        self.usable = False
        if self.transport is not None:
            self.transport.close()

    def time_out(self) -> None:
        """No whole answer in time: give up on it and on this connection."""
        self._fail(TimeoutError("no answer in time"))

    def _fail(self, error: BaseException) -> None:
        self.close()
        answer, self._answer = self._answer, None
        if answer is not None and not answer.done():
            answer.set_exception(error)
        head, self._head = self._head, None
        if head is not None and not head.done():
            head.set_exception(error)
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.fail(error)


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
        #: Connections opened (each a TCP and, for https, a TLS handshake), and how many
        #: are open now.
        self.opened = 0
        self.open_now = 0

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
                connection, reused = await self._take(deadline)
                try:
                    answer = await self._exchange(connection, message, deadline)
                except ConnectionError:
                    if not (reused and again):
                        raise
                    again = False
                    continue
                self._keep(connection)
                return answer
        finally:
            self._slots.release()

    async def open(
        self,
        method: str,
        path: str,
        headers: bytes,
        *,
        within: float,
        head_within: float | None = None,
    ) -> StreamedAnswer:
        """Send a request without a body; return its answer once its head is read.

        Its body is read from the answer (:class:`StreamedAnswer`), which holds
        a connection of the pool until closed. Raises as :meth:`request` does;
        ``within`` bounds the wait for a connection and, unless ``head_within``
        does (from when the request is sent), for the head.
        """
        message = b"".join(
            (
                f"{method} {self._base_path}{path} HTTP/1.1\r\n".encode(),
                self._host_header,
                headers,
                b"\r\n",
            )
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        async with asyncio.timeout_at(deadline):
            await self._slots.acquire()
        try:
            again = method in _IDEMPOTENT
            while True:
                connection, reused = await self._take(deadline)
                answer = StreamedAnswer(self, connection)
                head_deadline = deadline if head_within is None else loop.time() + head_within
                timer = loop.call_at(head_deadline, connection.time_out)
                try:
                    await connection.send_streamed(message, answer)
                except ConnectionError:
                    connection.close()
                    if not (reused and again):
                        raise
                    again = False
                    continue
                except BaseException:
                    connection.close()
                    raise
                finally:
                    timer.cancel()
                return answer
        except BaseException:
            self._slots.release()
            raise

    def give_back(self, connection: _Connection, *, reuse: bool) -> None:
        """A streamed answer is done with ``connection``: keep it for the next, or drop it."""
        if reuse:
            self._keep(connection)
        else:
            connection.close()
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

    async def warm(self, count: int) -> int:
        """Open up to ``count`` connections before any request needs them; answer how many.

        At start the first gangs' Bindings would each wait for a TCP and TLS
        handshake, taking turns with the decisions that follow on the one event
        loop. Opened while the first lists are on their way (OpenSSL's handshake
        lets go of the GIL, so the import thread runs meanwhile), they are idle
        and ready when the first decision is. A connection that fails to open is
        not retried: a request opens its own.
        """
        wanted = max(0, count - len(self._idle))
        opened = await asyncio.gather(
            *(self._open_idle() for _ in range(wanted)), return_exceptions=True
        )
        return sum(1 for kept in opened if kept is True)

    async def _open_idle(self) -> bool:
        """Open one connection and keep it idle at once (so a cancelled warm leaks none)."""
        connection = await self._connect()
        if self._closed:
            connection.close()
            return False
        self._idle.append(connection)
        return True

    async def _take(self, deadline: float) -> tuple[_Connection, bool]:
        """An idle connection (and True), else a new one opened by ``deadline`` (and False)."""
        connection = self._idle_connection()
        if connection is not None:
            return connection, True
        async with asyncio.timeout_at(deadline):
            return await self._connect(), False

    def _keep(self, connection: _Connection) -> None:
        """Keep a connection whose exchange is done idle for the next request, or drop it."""
        if connection.usable and not self._closed:
            self._idle.append(connection)
        else:
            connection.close()

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
        _, connection = await asyncio.get_running_loop().create_connection(
            _Connection,
            self._host,
            self._port,
            ssl=self._ssl,
            server_hostname=self._server_hostname,
        )
        self.opened += 1
        if connection.tell_end(self._lost):
            self.open_now += 1
        return connection

    def _lost(self) -> None:
        self.open_now -= 1

    def close(self) -> None:
        self._closed = True
        for connection in self._idle:
            connection.close()
        self._idle.clear()
