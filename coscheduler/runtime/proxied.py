"""Requests to an API server behind an HTTP proxy: aiohttp's client, which tunnels with CONNECT.

A cluster reached through a proxy (the environment's ``HTTPS_PROXY``, or the
kubeconfig's ``proxy-url``) is rare, and its proxy costs more than a client's
CPU: rather than a tunnel of our own in :mod:`coscheduler.runtime.http1`, its
requests go through aiohttp (TLS to the server inside the tunnel, the proxy
seeing only the server's address). :class:`ProxiedPool` offers
:class:`~coscheduler.runtime.http1.Http1Pool`'s methods, so the client does not
tell them apart. Its connections are aiohttp's: not counted, not warmed.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Final

import aiohttp
from yarl import URL

__all__ = ["ProxiedAnswer", "ProxiedPool"]

#: Never aiohttp's guesses: the caller's headers say what it accepts.
_NO_AUTO_HEADERS: Final = ("Accept", "Accept-Encoding", "User-Agent", "Content-Type")


class ProxiedAnswer:
    """A streamed answer (as :class:`~coscheduler.runtime.http1.StreamedAnswer`)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status = response.status
        self.encoding = response.headers.get("Content-Encoding", "").strip().lower().encode()

    async def read(self, *, within: float) -> bytes:
        """The next bytes of the body; ``b""`` at its end; as ``StreamedAnswer.read`` raises."""
        try:
            async with asyncio.timeout(within):
                return await self._response.content.readany()
        except aiohttp.ClientError as error:
            raise ConnectionError(str(error)) from error

    def close(self) -> None:
        """Give the connection back (the body was read to its end) or drop it."""
        if self._response.content.at_eof():
            self._response.release()
        else:
            self._response.close()


class ProxiedPool:
    """Requests to ``server`` through the http:// ``proxy`` (``user:password@`` allowed)."""

    def __init__(
        self,
        server: str,
        *,
        proxy: str,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None = None,
        max_connections: int = 64,
    ) -> None:
        self._server = server.rstrip("/")
        proxy_url = URL(proxy)
        auth = aiohttp.BasicAuth.from_url(proxy_url)
        self._proxy_headers = {} if auth is None else {"Proxy-Authorization": auth.encode()}
        self._proxy = proxy_url.with_user(None)
        self._ssl: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
        self._server_hostname = server_hostname
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:  # made on the loop that uses it
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._max_connections),
                auto_decompress=False,  # as from our own pool: the client decompresses
                skip_auto_headers=_NO_AUTO_HEADERS,
            )
        return self._session

    async def _send(
        self, method: str, path: str, headers: bytes, body: bytes | None
    ) -> aiohttp.ClientResponse:
        return await self._client().request(
            method,
            self._server + path,
            headers=_header_fields(headers),
            data=body,
            proxy=self._proxy,
            proxy_headers=self._proxy_headers,
            ssl=self._ssl,
            server_hostname=self._server_hostname,
            allow_redirects=False,
        )

    async def request(
        self, method: str, path: str, headers: bytes, body: bytes | None, *, within: float
    ) -> tuple[int, bytes]:
        """Send one request and return its status and body (as ``Http1Pool.request``)."""
        try:
            async with asyncio.timeout(within):
                async with await self._send(method, path, headers, body) as response:
                    return response.status, await response.read()
        except aiohttp.ClientError as error:
            raise ConnectionError(str(error)) from error

    async def open(
        self,
        method: str,
        path: str,
        headers: bytes,
        *,
        within: float,
        head_within: float | None = None,
    ) -> ProxiedAnswer:
        """Send a request without a body; its answer once its head is read (as ``Http1Pool``)."""
        try:
            async with asyncio.timeout(head_within if head_within is not None else within):
                return ProxiedAnswer(await self._send(method, path, headers, None))
        except aiohttp.ClientError as error:
            raise ConnectionError(str(error)) from error

    async def warm(self, count: int) -> int:
        """Nothing is opened ahead: each request opens what it needs through the proxy."""
        return 0

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def _header_fields(lines: bytes) -> dict[str, str]:
    """``Name: value\\r\\n`` lines as aiohttp's header mapping."""
    fields = {}
    for line in lines.decode("latin-1").split("\r\n"):
        if line:
            name, _, value = line.partition(":")
            fields[name.strip()] = value.strip()
    return fields
