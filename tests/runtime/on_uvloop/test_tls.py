"""TLS on uvloop: the pool's connections, verified, kept alive, counted; aiohttp's through a proxy.

The API server speaks TLS and asks for a client certificate; on uvloop the
handshake and the records are uvloop's own (``create_connection(ssl=...)``,
and ``start_tls`` inside a tunnel), not asyncio's SSL layer that the other
unit tests go through.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from coscheduler.runtime.http1 import Http1Pool
from coscheduler.runtime.proxied import ProxiedPool
from e2e.connectproxy import ConnectProxy
from e2e.pki import Pki, generate

ANSWER = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{"a":1}'
CLOSE = b'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 7\r\n\r\n{"a":1}'
#: Larger than the unread bytes at which a streamed answer pauses reading.
BIG = 12 * 1024 * 1024


@dataclass
class TlsServer:
    pki: Pki
    port: int
    connections: int = 0

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        context.load_cert_chain(self.pki.admin_cert, self.pki.admin_key)
        return context

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                if head.startswith(b"GET /big "):
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % BIG)
                    writer.write(b"x" * BIG)
                elif head.startswith(b"GET /close "):
                    writer.write(CLOSE)
                    await writer.drain()
                    break
                else:
                    writer.write(ANSWER)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def tls(tmp_path: Path) -> AsyncIterator[TlsServer]:
    pki = generate(tmp_path / "pki", service_ip="10.96.0.1")
    context = pki.server_context(client_certs=True)
    served = TlsServer(pki, 0)
    listening = await asyncio.start_server(served.handle, "127.0.0.1", 0, ssl=context)
    served.port = listening.sockets[0].getsockname()[1]
    yield served
    listening.close()
    await listening.wait_closed()


async def test_answers_over_verified_tls_on_one_kept_alive_connection(tls: TlsServer) -> None:
    pool = Http1Pool(f"https://127.0.0.1:{tls.port}", ssl_context=tls.client_context())
    try:
        for _ in range(3):
            assert await pool.request("GET", "/x", b"", None, within=10) == (200, b'{"a":1}')
    finally:
        pool.close()
    assert tls.connections == 1


async def test_the_server_name_checked_is_the_one_given(tls: TlsServer) -> None:
    # As a kubeconfig's tls-server-name: the address is an IP, the name another.
    named = Http1Pool(
        f"https://127.0.0.1:{tls.port}",
        ssl_context=tls.client_context(),
        server_hostname="kubernetes.default.svc",
    )
    wrong = Http1Pool(
        f"https://127.0.0.1:{tls.port}",
        ssl_context=tls.client_context(),
        server_hostname="elsewhere.example",
    )
    try:
        assert (await named.request("GET", "/x", b"", None, within=10))[0] == 200
        with pytest.raises(ssl.SSLCertVerificationError):
            await wrong.request("GET", "/x", b"", None, within=10)
    finally:
        named.close()
        wrong.close()


async def test_an_unknown_authority_is_refused(tls: TlsServer) -> None:
    pool = Http1Pool(f"https://127.0.0.1:{tls.port}", ssl_context=ssl.create_default_context())
    try:
        with pytest.raises(ssl.SSLCertVerificationError):
            await pool.request("GET", "/x", b"", None, within=10)
    finally:
        pool.close()


async def test_tls_inside_a_connect_tunnel_through_aiohttp(tls: TlsServer) -> None:
    async with ConnectProxy() as proxy:
        pool = ProxiedPool(
            f"https://localhost:{tls.port}",
            proxy=proxy.url.replace("http://", "http://ann:s%40cret@"),
            ssl_context=tls.client_context(),
        )
        try:
            for _ in range(2):
                assert await pool.request("POST", "/x", b"", b"{}", within=10) == (
                    200,
                    b'{"a":1}',
                )
            answer = await pool.open("GET", "/x", b"Accept: application/json\r\n", within=10)
            try:
                assert answer.status == 200
                assert await answer.read(within=10) == b'{"a":1}'
                assert await answer.read(within=10) == b""
            finally:
                answer.close()
        finally:
            await pool.aclose()
    pair = base64.b64encode(b"ann:s@cret").decode()
    assert proxy.tunnels == [(f"localhost:{tls.port}", f"Basic {pair}")]
    assert tls.connections == 1


async def test_a_streamed_answer_pauses_and_resumes_reading_over_tls(tls: TlsServer) -> None:
    pool = Http1Pool(f"https://127.0.0.1:{tls.port}", ssl_context=tls.client_context())
    try:
        answer = await pool.open("GET", "/big", b"", within=10)
        await asyncio.sleep(0.2)  # let the unread bytes pile up past the pause
        received = 0
        while chunk := await answer.read(within=10):
            received += len(chunk)
        assert received == BIG
        assert await pool.request("GET", "/x", b"", None, within=10) == (200, b'{"a":1}')
    finally:
        pool.close()
    assert tls.connections == 1


async def test_connections_are_counted_while_open_and_once_opened(tls: TlsServer) -> None:
    pool = Http1Pool(f"https://127.0.0.1:{tls.port}", ssl_context=tls.client_context())
    try:
        assert await pool.warm(3) == 3
        assert (pool.opened, pool.open_now) == (3, 3)
        for _ in range(5):  # on the warm connections: none opened
            assert await pool.request("GET", "/x", b"", None, within=10) == (200, b'{"a":1}')
        assert (pool.opened, pool.open_now) == (3, 3)
        # One the server closes after its answer is no longer open.
        assert await pool.request("GET", "/close", b"", None, within=10) == (200, b'{"a":1}')
        await _until(lambda: pool.open_now == 2)
    finally:
        pool.close()
    await _until(lambda: pool.open_now == 0)
    assert pool.opened == 3


async def _until(condition: Callable[[], bool]) -> None:
    """Wait for ``condition``: a connection's end is told once TLS has closed, a moment later."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not within 10 s")
