"""runtime/http1.py over real TLS with a client certificate: connections kept, counted, let go.

A TLS 1.3 server of the standard library's with the e2e cluster's ECDSA
certificates and a client certificate required, as the API server's.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from coscheduler.runtime.http1 import Http1Pool
from e2e.pki import Pki, generate

KEEP = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
CLOSE = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"


@dataclass
class TlsServer:
    pki: Pki
    port: int = 0

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        context.load_cert_chain(self.pki.admin_cert, self.pki.admin_key)
        return context

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                closing = head.startswith(b"GET /close ")
                writer.write(CLOSE if closing else KEEP)
                await writer.drain()
                if closing:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def tls(tmp_path: Path) -> AsyncIterator[TlsServer]:
    pki = generate(tmp_path / "pki", service_ip="10.96.0.1")
    context = pki.server_context(client_certs=True)
    served = TlsServer(pki)
    listening = await asyncio.start_server(served.handle, "127.0.0.1", 0, ssl=context)
    served.port = listening.sockets[0].getsockname()[1]
    yield served
    listening.close()
    await listening.wait_closed()


async def test_connections_are_counted_while_open_and_once_opened(
    tls: TlsServer,
) -> None:
    pool = Http1Pool(f"https://127.0.0.1:{tls.port}", ssl_context=tls.client_context())
    try:
        assert await pool.warm(3) == 3
        assert (pool.opened, pool.open_now) == (3, 3)
        for _ in range(5):  # on the warm connections: none opened
            assert await pool.request("GET", "/x", b"", None, within=10) == (200, b"{}")
        assert (pool.opened, pool.open_now) == (3, 3)
        # One the server closes after its answer is no longer open.
        assert await pool.request("GET", "/close", b"", None, within=10) == (200, b"{}")
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
