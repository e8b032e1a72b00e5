"""runtime/http1.py: the lean pool for writes reads every well-formed answer, and no answer twice.

A raw server scripted byte by byte (the scripted API server of the other
tests speaks aiohttp's HTTP, always the same way): each connection it accepts
answers each request it reads with the next of ``answers``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

import pytest

from coscheduler.runtime.http1 import Http1Pool

HEADERS = b"Accept: application/json\r\n"


@dataclass
class RawServer:
    answers: list[bytes]
    #: Connections accepted, and the requests read (head and body) in order.
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    #: Hold each answer until this is set.
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                self.requests.append(head + await reader.readexactly(length))
                await self.release.wait()
                answer = self.answers.pop(0)
                if answer == b"DROP":
                    writer.transport.abort()
                    return
                writer.write(answer)
                await writer.drain()
                if answer.startswith(b"HTTP/1.0"):
                    return  # an HTTP/1.0 answer without a length ends with the connection
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def raw() -> AsyncIterator[tuple[RawServer, Http1Pool]]:
    server = RawServer([])
    server.release.set()
    listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    pool = Http1Pool(f"http://127.0.0.1:{port}", ssl_context=None, max_connections=4)
    yield server, pool
    pool.close()
    listening.close()
    await listening.wait_closed()


def answer(status: str, body: bytes = b"", headers: Sequence[bytes] = ()) -> bytes:
    lines = [f"HTTP/1.1 {status}".encode(), *headers]
    if not any(h.lower().startswith((b"content-length", b"transfer-encoding")) for h in headers):
        lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


async def test_answers_come_back_on_one_kept_alive_connection(
    raw: tuple[RawServer, Http1Pool],
) -> None:
    server, pool = raw
    server.answers = [answer("201 Created", b'{"a":1}'), answer("409 Conflict", b'{"b":2}')]
    first = await pool.request("POST", "/x", HEADERS, b"{}", within=5)
    second = await pool.request("PATCH", "/y?z=1", HEADERS, b"[]", within=5)
    assert (first, second) == ((201, b'{"a":1}'), (409, b'{"b":2}'))
    assert server.connections == 1
    assert server.requests[0].startswith(b"POST /x HTTP/1.1\r\nHost: 127.0.0.1:")
    assert server.requests[0].endswith(b"Content-Length: 2\r\n\r\n{}")
    assert server.requests[1].startswith(b"PATCH /y?z=1 HTTP/1.1\r\n")


async def test_a_chunked_answer_is_read_whole(raw: tuple[RawServer, Http1Pool]) -> None:
    server, pool = raw
    chunked = b"3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\n\r\n"
    server.answers = [answer("200 OK", chunked, [b"Transfer-Encoding: chunked"])] * 2
    assert await pool.request("POST", "/x", HEADERS, None, within=5) == (200, b"abcdefg")
    assert await pool.request("POST", "/x", HEADERS, None, within=5) == (200, b"abcdefg")
    assert server.connections == 1


async def test_connection_close_is_honoured(raw: tuple[RawServer, Http1Pool]) -> None:
    server, pool = raw
    server.answers = [answer("201 Created", b"{}", [b"Connection: close"]), answer("201 OK")]
    assert await pool.request("POST", "/x", HEADERS, b"{}", within=5) == (201, b"{}")
    assert await pool.request("POST", "/x", HEADERS, b"{}", within=5) == (201, b"")
    assert server.connections == 2


async def test_an_interim_answer_is_skipped(raw: tuple[RawServer, Http1Pool]) -> None:
    server, pool = raw
    server.answers = [b"HTTP/1.1 100 Continue\r\n\r\n" + answer("201 Created", b"{}")]
    assert await pool.request("POST", "/x", HEADERS, b"{}", within=5) == (201, b"{}")


async def test_a_dropped_connection_is_an_error_and_is_not_reused(
    raw: tuple[RawServer, Http1Pool],
) -> None:
    server, pool = raw
    server.answers = [b"DROP", answer("201 Created", b"{}")]
    with pytest.raises(ConnectionError):
        await pool.request("POST", "/x", HEADERS, b"{}", within=5)
    assert await pool.request("POST", "/x", HEADERS, b"{}", within=5) == (201, b"{}")
    assert server.connections == 2


async def test_garbage_is_an_error_not_an_answer(raw: tuple[RawServer, Http1Pool]) -> None:
    server, pool = raw
    server.answers = [b"SPDY/3 what\r\n\r\n", answer("201 Created", b"{}")]
    with pytest.raises(ConnectionError, match="unreadable"):
        await pool.request("POST", "/x", HEADERS, b"{}", within=5)
    assert await pool.request("POST", "/x", HEADERS, b"{}", within=5) == (201, b"{}")


async def test_a_late_answer_times_out_and_is_never_read_as_the_next_ones(
    raw: tuple[RawServer, Http1Pool],
) -> None:
    server, pool = raw
    server.release.clear()
    server.answers = [answer("201 Created", b'"late"'), answer("201 Created", b'"next"')]
    with pytest.raises(TimeoutError):
        await pool.request("POST", "/x", HEADERS, b"{}", within=0.05)
    server.release.set()
    assert await pool.request("POST", "/x", HEADERS, b"{}", within=5) == (201, b'"next"')
    assert server.connections == 2


async def test_an_answer_that_ends_with_the_connection_is_read_to_its_end(
    raw: tuple[RawServer, Http1Pool],
) -> None:
    server, pool = raw
    server.answers = [b"HTTP/1.0 200 OK\r\n\r\nall of it", answer("201 Created")]
    assert await pool.request("POST", "/x", HEADERS, b"{}", within=5) == (200, b"all of it")
    assert await pool.request("POST", "/x", HEADERS, b"{}", within=5) == (201, b"")
    assert server.connections == 2


def test_only_http_servers() -> None:
    with pytest.raises(ValueError, match="not an http"):
        Http1Pool("unix:///var/run/x", ssl_context=None)


@pytest.mark.parametrize(("method", "sent_again"), [("PUT", True), ("POST", False)])
async def test_only_an_idempotent_request_is_sent_again_when_a_kept_connection_drops(
    raw: tuple[RawServer, Http1Pool], method: str, sent_again: bool
) -> None:
    server, pool = raw
    server.answers = [answer("200 OK", b"{}"), b"DROP", answer("200 OK", b'"again"')]
    assert await pool.request(method, "/x", HEADERS, b"{}", within=5) == (200, b"{}")
    if sent_again:
        assert await pool.request(method, "/x", HEADERS, b"{}", within=5) == (200, b'"again"')
    else:
        with pytest.raises(ConnectionError):
            await pool.request(method, "/x", HEADERS, b"{}", within=5)
    assert len(server.requests) == 2 + sent_again


async def test_answers_without_a_body_by_status_end_with_their_head(
    raw: tuple[RawServer, Http1Pool],
) -> None:
    server, pool = raw
    # 304 keeps the length of the body it stands for; no body follows it.
    server.answers = [
        b"HTTP/1.1 204 No Content\r\n\r\n",
        answer("304 Not Modified", headers=[b"Content-Length: 5"]),
    ]
    assert await pool.request("DELETE", "/x", HEADERS, None, within=5) == (204, b"")
    assert await pool.request("PUT", "/x", HEADERS, b"{}", within=5) == (304, b"")
    assert server.connections == 1


async def test_a_body_cut_short_by_the_connection_is_an_error(
    raw: tuple[RawServer, Http1Pool],
) -> None:
    server, pool = raw
    server.answers = [b"HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\nshort"]
    with pytest.raises(ConnectionError):
        await pool.request("POST", "/x", HEADERS, b"{}", within=5)


async def test_bytes_beyond_the_answer_end_the_connection(
    raw: tuple[RawServer, Http1Pool],
) -> None:
    server, pool = raw
    server.answers = [answer("201 Created", b"{}") + answer("200 OK"), answer("201 Created", b"[]")]
    assert await pool.request("POST", "/x", HEADERS, b"{}", within=5) == (201, b"{}")
    assert await pool.request("POST", "/x", HEADERS, b"{}", within=5) == (201, b"[]")
    assert server.connections == 2


async def test_warmed_connections_carry_the_first_requests_without_opening_more(
    raw: tuple[RawServer, Http1Pool],
) -> None:
    server, pool = raw
    assert await pool.warm(3) == 3
    assert await pool.warm(3) == 0  # three are idle already
    server.answers = [answer("201 Created")] * 3
    answers = await asyncio.gather(
        *(pool.request("POST", f"/b{i}", HEADERS, b"{}", within=5) for i in range(3))
    )
    assert answers == [(201, b"")] * 3
    assert server.connections == 3


async def test_a_warm_that_cannot_connect_opens_none_and_requests_still_go() -> None:
    listening = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    listening.close()
    await listening.wait_closed()  # nobody listens there now
    pool = Http1Pool(f"http://127.0.0.1:{port}", ssl_context=None, max_connections=2)
    assert await pool.warm(2) == 0
    pool.close()


async def test_connections_warmed_after_the_pool_closed_are_closed_not_kept(
    raw: tuple[RawServer, Http1Pool],
) -> None:
    _, pool = raw
    warming = asyncio.create_task(pool.warm(2))
    pool.close()
    assert await warming == 0
    assert await pool.warm(1) == 0
