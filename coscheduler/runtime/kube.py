"""A thin, fast door to the API server: our own HTTP/1.1 pools.

Requests go out through :class:`~coscheduler.runtime.http1.Http1Pool`
(httptools): writes in one pool, reads and watches in another, so that a
burst of Bindings never waits behind a list, nor a watch behind Bindings.
Bodies are encoded and decoded with orjson; callers keep only the fields
they need. Reads and watches ask for gzip: the API server then compresses
lists over 128 KiB and watch-list streams. Measured at 50,000 pods on a
loaded 2-core machine, uncompressed answers cost both the server and us more
CPU, not less (bench/RESULTS.md); ``compressed_reads=False``
asks for them.

Credentials come from kubernetes_asyncio's configuration
(:mod:`coscheduler.runtime.credentials`): its TLS material makes the pools'
context, its token (kept fresh by its refresh hook) each request's
``Authorization`` header.

A proxy the environment names for the server (``HTTPS_PROXY``, ``NO_PROXY``),
or the kubeconfig's ``proxy-url``, is tunnelled through (CONNECT) by aiohttp
(:mod:`coscheduler.runtime.proxied`) instead of our pools.

Every request passes a client-side rate limiter (QPS and burst, as client-go
does), so coscheduler never floods a shared API server. Watch streams take a
token to open, not per event.

Every other module sends through this one: whatever goes wrong leaves it as
one of the typed errors of :mod:`coscheduler.runtime.errors` (an import-linter
contract keeps the HTTP libraries out of the rest).
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypedDict, Unpack
from urllib.request import getproxies, proxy_bypass

import orjson
from aiolimiter import AsyncLimiter

from coscheduler.runtime.credentials import (
    AuthorizationHeader,
    Configuration,
    load_configuration,
    ssl_context,
)
from coscheduler.runtime.errors import ApiError, Unreachable
from coscheduler.runtime.http1 import Http1Pool, StreamedAnswer
from coscheduler.runtime.lines import Lines, decompressor
from coscheduler.runtime.proxied import ProxiedAnswer, ProxiedPool
from coscheduler.runtime.retry import retried

__all__ = [
    "Credentials",
    "KubeClient",
    "ProxyNotSupportedError",
    "RequestOptions",
    "Response",
    "query_params",
]

JSON: Final = "application/json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
_USER_AGENT: Final = "coscheduler"
# How long a read is retried before its error is passed on.
_READ_RETRY_SECONDS: Final = 60.0


@dataclass(frozen=True, slots=True)
class Response:
    """A raw answer: the status code and the undecoded body."""

    status: int
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body) if self.body else None


#: Where requests go: our own pool, or aiohttp's through a proxy.
Pool = Http1Pool | ProxiedPool
Answer = StreamedAnswer | ProxiedAnswer


class ProxyNotSupportedError(ValueError):
    """A proxy aiohttp cannot tunnel through (not http://: https://, socks5://...)."""


def _proxy_from_environment(host: str | None) -> str | None:
    """The proxy the environment (HTTPS_PROXY, NO_PROXY, ...) names for ``host``, read once."""
    url = urllib.parse.urlsplit(host or "")
    if not url.hostname or proxy_bypass(url.hostname):
        return None
    return getproxies().get(url.scheme)


@dataclass(frozen=True, slots=True)
class Credentials:
    """One API server and how to reach it, from kubernetes_asyncio's configuration."""

    server: str
    #: None for a plain http:// server.
    ssl_context: ssl.SSLContext | None
    tls_server_name: str | None
    headers: AuthorizationHeader
    #: A proxy named by the kubeconfig (``proxy-url``); the environment's is resolved later.
    proxy: str | None = None


class RequestOptions(TypedDict, total=False):
    """What :meth:`KubeClient.send` takes beside the method and path."""

    query: Sequence[tuple[str, str]] | None
    body: Any
    content_type: str


class KubeClient:
    """Raw, rate-limited requests to one API server. Create with :meth:`connect`."""

    def __init__(
        self,
        credentials: Credentials,
        *,
        qps: float,
        burst: int,
        timeout: float,
        max_connections: int = 128,
        owner: bool = True,
        pools: tuple[Pool, Pool] | None = None,
        compressed_reads: bool = True,
        proxy: str | None = None,
    ):
        self._credentials = credentials
        #: Writes, then reads and watches: separate, so neither waits for the other's connections.
        self._writes, self._reads = pools or _pools(credentials, max_connections, proxy)
        self._compressed_reads = compressed_reads
        encoding = "gzip" if compressed_reads else "identity"
        self._read_headers = (
            f"Accept: {JSON}\r\nAccept-Encoding: {encoding}\r\nUser-Agent: {_USER_AGENT}\r\n"
        ).encode()
        self._headers: dict[str, bytes] = {}
        self._qps = qps
        self._burst = burst
        self._limiter = AsyncLimiter(max_rate=burst, time_period=burst / qps)
        # aiolimiter lets a newcomer take a token that frees up before the waiter it
        # was meant for wakes (which then queues again at the back); a FIFO lock in
        # front hands tokens out strictly in request order, so the bindings of one gang
        # are not spread out among those of the next.
        self._turn = asyncio.Lock()
        self._timeout = timeout
        self._owner = owner

    def sibling(self) -> KubeClient:
        """The same server, connections and credentials, under a rate limit of its own.

        Why: kube-scheduler gives its event recorder a client of its own, so
        explaining decisions never delays carrying them out. coscheduler's
        reporting (events, PodGroup status, pod conditions) uses a sibling.
        """
        return KubeClient(
            self._credentials,
            qps=self._qps,
            burst=self._burst,
            timeout=self._timeout,
            owner=False,
            pools=(self._writes, self._reads),
            compressed_reads=self._compressed_reads,
        )

    @classmethod
    async def connect(
        cls,
        *,
        kubeconfig: str | None,
        qps: float,
        burst: int,
        timeout_seconds: float,
        max_connections: int = 128,
        compressed_reads: bool = True,
        context: str | None = None,
    ) -> KubeClient:
        """Load credentials (:func:`coscheduler.runtime.credentials.load_configuration`)
        and make the pools.

        ``kubeconfig`` None: ``KUBECONFIG``, else in-cluster, else ``~/.kube/config``.
        ``compressed_reads``: ask for gzip answers to reads and watches (False
        asks for them uncompressed). Raises
        :class:`~coscheduler.runtime.credentials.CredentialsError` for credentials
        that cannot be used, :class:`ProxyNotSupportedError` for a proxy not http://
        (an http:// one is tunnelled through with CONNECT by aiohttp, as client-go does).
        """
        configuration = await load_configuration(kubeconfig, context=context)
        credentials = Credentials(
            server=(configuration.host or "").rstrip("/"),
            ssl_context=ssl_context(configuration),
            tls_server_name=configuration.tls_server_name,
            headers=AuthorizationHeader(configuration),
            proxy=configuration.proxy,
        )
        proxy = credentials.proxy or _proxy_from_environment(credentials.server)
        if proxy and urllib.parse.urlsplit(proxy).scheme != "http":
            where = urllib.parse.urlsplit(proxy)
            raise ProxyNotSupportedError(
                f"the API server {credentials.server} is to be reached through the proxy "
                f"{where.scheme}://{where.hostname}:{where.port} (the environment's or the "
                "kubeconfig's proxy-url): only http:// proxies (CONNECT) are supported; "
                "exempt the server with NO_PROXY, or name an http:// proxy"
            )
        return cls(
            credentials,
            qps=qps,
            burst=burst,
            timeout=timeout_seconds,
            max_connections=max_connections,
            compressed_reads=compressed_reads,
            proxy=proxy or None,
        )

    @property
    def server(self) -> str:
        """The API server's URL."""
        return self._credentials.server

    @property
    def configuration(self) -> Configuration:
        """kubernetes_asyncio's configuration these credentials come from (for Kopf's login:
        the same token, refreshed by the same hook)."""
        return self._credentials.headers.configuration

    async def take_turn(self) -> None:
        """Wait for the rate limit to allow one request; callers are served in order."""
        async with self._turn:
            await self._limiter.acquire()

    @property
    def pools(self) -> dict[str, Http1Pool]:
        """Our connection pools by purpose (their counts are metrics; aiohttp's are not)."""
        pools = {"writes": self._writes, "reads": self._reads}
        return {name: pool for name, pool in pools.items() if isinstance(pool, Http1Pool)}

    async def warm_writes(self, count: int) -> int:
        """Open ``count`` connections for writes ahead of the first (:meth:`Http1Pool.warm`)."""
        return await self._writes.warm(count)

    async def close(self) -> None:
        if not self._owner:
            return
        for pool in {self._writes, self._reads}:
            if isinstance(pool, ProxiedPool):
                await pool.aclose()
            else:
                pool.close()

    async def _write(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] | None,
        body: Any,
        content_type: str,
    ) -> Response:
        """A write through the write pool; typed errors as :meth:`send` promises."""
        await self.take_turn()
        fixed = self._headers.get(content_type)
        if fixed is None:
            fixed = self._headers[content_type] = (
                f"Accept: {JSON}\r\nContent-Type: {content_type}\r\n"
                f"User-Agent: {_USER_AGENT}\r\n".encode()
            )
        credentials = await self._credentials.headers.lines()
        if credentials:
            fixed += credentials
        target = f"{path}?{urllib.parse.urlencode(query)}" if query else path
        data = None if body is None else body if isinstance(body, bytes) else orjson.dumps(body)
        try:
            status, raw = await self._writes.request(
                method, target, fixed, data, within=self._timeout
            )
        except (OSError, TimeoutError) as error:  # ssl.SSLError is an OSError
            raise _unreachable(method, path, error) from error
        if 200 <= status < 300:
            return Response(status, raw)
        raise ApiError.from_answer(method=method, path=path, status=status, body=raw)

    async def _open(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] | None,
        *,
        head_within: float | None = None,
    ) -> Answer:
        """A read sent through the read pool, its head read."""
        await self.take_turn()
        headers = self._read_headers + await self._credentials.headers.lines()
        target = f"{path}?{urllib.parse.urlencode(query)}" if query else path
        try:
            return await self._reads.open(
                "GET", target, headers, within=self._timeout, head_within=head_within
            )
        except (OSError, TimeoutError) as error:
            raise _unreachable(method, path, error) from error

    async def _read(self, path: str, query: Sequence[tuple[str, str]] | None) -> Response:
        """A whole GET through the read pool, within the request timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout
        answer = await self._open("GET", path, query)
        try:
            raw = await _whole_body(answer, deadline)
        except (OSError, TimeoutError) as error:
            raise _unreachable("GET", path, error) from error
        finally:
            answer.close()
        if 200 <= answer.status < 300:
            return Response(answer.status, raw)
        raise ApiError.from_answer(method="GET", path=path, status=answer.status, body=raw)

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = JSON,
    ) -> Response:
        """Send a request; return its raw answer if it succeeded (2xx), else raise.

        Raises the :class:`~coscheduler.runtime.errors.ApiError` subclass the
        answer's status means, or ``Unreachable`` when there was no answer. The
        body of a success is not decoded (a Binding's says nothing we need).
        ``body`` is encoded as JSON unless it is ``bytes`` already; a GET has none.
        """
        if method == "GET":
            return await self._read(path, query)
        return await self._write(method, path, query=query, body=body, content_type=content_type)

    async def call(self, method: str, path: str, **options: Unpack[RequestOptions]) -> Any:
        """Send a request and return the decoded body; raise as :meth:`send` does.

        A GET that meets a retryable failure (throttling, a server starting, a
        dropped connection) is retried (:func:`~coscheduler.runtime.retry.retried`)
        for up to a minute: reads are idempotent, and a fresh API server or a
        CRD just installed answers 429 for a moment.
        """
        if method != "GET":
            return (await self.send(method, path, **options)).json()
        response = await retried(
            lambda: self.send("GET", path, **options), within=_READ_RETRY_SECONDS
        )
        return response.json()

    async def stream_lines(
        self, path: str, *, query: Sequence[tuple[str, str]], read_timeout_seconds: float
    ) -> AsyncGenerator[bytes]:
        """Yield the lines of a streaming GET (a watch), without the newlines.

        Raises the typed error of the server's refusal, and ``Unreachable``
        when the connection fails or nothing at all arrives for
        ``read_timeout_seconds`` (a silent, half-dead connection). Closing the
        generator early (or cancelling its reader) drops the connection.
        """
        answer = await self._open("WATCH", path, query, head_within=read_timeout_seconds)
        try:
            if answer.status != 200:
                deadline = asyncio.get_running_loop().time() + self._timeout
                raw = await _whole_body(answer, deadline)
                raise ApiError.from_answer(method="GET", path=path, status=answer.status, body=raw)
            lines = Lines(answer.encoding, source=path)
            while chunk := await answer.read(within=read_timeout_seconds):
                for line in lines.feed(chunk):
                    yield line
            for line in lines.end():
                yield line
        except (OSError, TimeoutError) as error:
            raise _unreachable("WATCH", path, error) from error
        finally:
            answer.close()


def _pools(credentials: Credentials, max_connections: int, proxy: str | None) -> tuple[Pool, Pool]:
    """Writes' and reads' pools: ours, or aiohttp's one through a proxy."""
    if proxy is not None:
        proxied = ProxiedPool(
            credentials.server,
            proxy=proxy,
            ssl_context=credentials.ssl_context,
            server_hostname=credentials.tls_server_name,
            max_connections=2 * max_connections,
        )
        return proxied, proxied
    writes, reads = (
        Http1Pool(
            credentials.server,
            ssl_context=credentials.ssl_context,
            server_hostname=credentials.tls_server_name,
            max_connections=max_connections,
        )
        for _ in range(2)
    )
    return writes, reads


async def _whole_body(answer: Answer, deadline: float) -> bytes:
    """All of an answer's body, decompressed, by ``deadline`` (loop time)."""
    loop = asyncio.get_running_loop()
    chunks = []
    while chunk := await answer.read(within=deadline - loop.time()):
        chunks.append(chunk)
    raw = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    unzip = decompressor(answer.encoding)
    return raw if unzip is None else unzip.decompress(raw) + unzip.flush()


def _unreachable(method: str, path: str, error: BaseException) -> Unreachable:
    detail = str(error) or ("timed out" if isinstance(error, TimeoutError) else "")
    return Unreachable(
        method=method, path=path, status=None, message=f"{type(error).__name__}: {detail}"
    )


def query_params(params: Mapping[str, str | int | bool | None]) -> list[tuple[str, str]]:
    """Query parameters in the API server's spelling, dropping the unset ones."""
    result: list[tuple[str, str]] = []
    for key, value in params.items():
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        result.append((key, text))
    return result
