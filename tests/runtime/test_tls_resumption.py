"""runtime/http1.py over real TLS: new connections resume the latest session, and are counted.

A TLS 1.3 server of the standard library's (it sends session tickets after
each handshake) with the e2e cluster's ECDSA certificates and a client
certificate required, as the API server's. The client contexts are the ones
the kubeconfig loader makes (:func:`coscheduler.runtime.http1.client_context`).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from coscheduler.runtime.http1 import Http1Pool, client_context
from e2e.pki import Pki, generate

KEEP = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
CLOSE = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"


@dataclass
class TicketServer:
    pki: Pki
    port: int = 0
    #: For each connection accepted, whether its handshake resumed a session.
    resumed: list[bool] = field(default_factory=list)

    def client_context(self) -> ssl.SSLContext:
        context = client_context(cafile=str(self.pki.ca_cert))
        context.load_cert_chain(self.pki.admin_cert, self.pki.admin_key)
        return context

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.resumed.append(bool(writer.get_extra_info("ssl_object").session_reused))
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
async def tickets(tmp_path: Path) -> AsyncIterator[TicketServer]:
    pki = generate(tmp_path / "pki", service_ip="10.96.0.1")
    context = pki.server_context(client_certs=True)
    served = TicketServer(pki)
    listening = await asyncio.start_server(served.handle, "127.0.0.1", 0, ssl=context)
    served.port = listening.sockets[0].getsockname()[1]
    yield served
    listening.close()
    await listening.wait_closed()


async def test_a_new_connection_resumes_the_session_of_an_earlier_one(
    tickets: TicketServer,
) -> None:
    pool = Http1Pool(f"https://127.0.0.1:{tickets.port}", ssl_context=tickets.client_context())
    try:
        # The server ends each connection after its answer: three connections, one after
        # another; the first is a full handshake, the others resume its ticket's session.
        for _ in range(3):
            assert await pool.request("GET", "/close", b"", None, within=10) == (200, b"{}")
    finally:
        pool.close()
    assert tickets.resumed == [False, True, True]
    assert (pool.opened, pool.resumed) == (3, 2)


async def test_connections_are_counted_while_open_and_once_opened(
    tickets: TicketServer,
) -> None:
    pool = Http1Pool(f"https://127.0.0.1:{tickets.port}", ssl_context=tickets.client_context())
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


async def test_a_plain_context_opens_every_connection_with_a_full_handshake(
    tickets: TicketServer,
) -> None:
    context = ssl.create_default_context(cafile=str(tickets.pki.ca_cert))
    context.load_cert_chain(tickets.pki.admin_cert, tickets.pki.admin_key)
    pool = Http1Pool(f"https://127.0.0.1:{tickets.port}", ssl_context=context)
    try:
        for _ in range(2):
            assert await pool.request("GET", "/close", b"", None, within=10) == (200, b"{}")
    finally:
        pool.close()
    assert tickets.resumed == [False, False]
    assert pool.resumed == 0


async def _until(condition: Callable[[], bool]) -> None:
    """Wait for ``condition``: a connection's end is told once TLS has closed, a moment later."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not within 10 s")


def test_the_resuming_context_verifies_as_the_default_context_does(tmp_path: Path) -> None:
    pki = generate(tmp_path / "pki", service_ip="10.96.0.1")
    ours = client_context(cafile=str(pki.ca_cert))
    default = ssl.create_default_context(cafile=str(pki.ca_cert))
    assert (ours.verify_mode, ours.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert ours.verify_flags == default.verify_flags
    assert ours.options == default.options
    assert ours.minimum_version == default.minimum_version
    assert ours.get_ca_certs() == default.get_ca_certs()
