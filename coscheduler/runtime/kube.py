"""A thin, fast door to the API server on top of kubernetes_asyncio.

kubernetes_asyncio gives us what is hard to get right: kubeconfig and
in-cluster loading, TLS, tokens and their refresh. Its generated models are
slow to decode (hundreds of microseconds per pod), and its generic request
path costs more per binding than the binding itself, so requests go straight
to its aiohttp session with its credentials, and bodies are encoded and
decoded with orjson; callers keep only the fields they need.

Writes (every verb but GET) go through :class:`~coscheduler.runtime.http1.Http1Pool`
when no proxy is configured: the same server, credentials and TLS settings,
a quarter of aiohttp's CPU per request (issue #28). Reads and watches stay
on aiohttp.

Every request passes a client-side rate limiter (QPS and burst, as client-go
does), so coscheduler never floods a shared API server. Watch streams take a
token to open, not per event.

This module is the only one that knows the HTTP library: whatever goes wrong
leaves it as one of the typed errors of :mod:`coscheduler.runtime.errors`
(an import-linter contract keeps aiohttp and kubernetes_asyncio in here).
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
import urllib.request
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypedDict, Unpack

import aiohttp
import orjson
from aiolimiter import AsyncLimiter
from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_delay,
    wait_exponential_jitter,
)

from coscheduler.runtime.errors import ApiError, Unreachable
from coscheduler.runtime.http1 import Http1Pool
from coscheduler.runtime.lazy_package import defer_init

# kubernetes_asyncio's package __init__ imports every generated API and model:
# a fifth of start-up (issue #28). Only its configuration, kubeconfig loading
# and ApiClient are used here, so its __init__ and its models' wait until
# somebody else in the process asks for them.
defer_init("kubernetes_asyncio")
defer_init(
    "kubernetes_asyncio.client",
    {"ApiClient": "api_client", "Configuration": "configuration"},
)
defer_init("kubernetes_asyncio.client.models")

from kubernetes_asyncio.client import api_client as k8s_api  # noqa: E402
from kubernetes_asyncio.client import configuration as k8s_configuration  # noqa: E402
from kubernetes_asyncio.config import incluster_config, kube_config  # noqa: E402

__all__ = ["KubeClient", "RequestOptions", "Response", "query_params"]

JSON: Final = "application/json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
_USER_AGENT: Final = "coscheduler"
# As kubernetes_asyncio sets it: a watch event can carry an object up to etcd's 1.5 MiB.
_READ_BUFFER_BYTES: Final = 2**21
# How long a read is retried before its error is passed on.
_READ_RETRY_SECONDS: Final = 60.0
# Watch streams can carry objects up to etcd's request limit in one line.
_MAX_LINE_BYTES: Final = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Response:
    """A raw answer: the status code and the undecoded body."""

    status: int
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body) if self.body else None


def _proxy_from_environment(host: str | None) -> str | None:
    """The proxy the environment (HTTPS_PROXY, NO_PROXY, ...) names for ``host``, read once."""
    url = urllib.parse.urlsplit(host or "")
    if not url.hostname or urllib.request.proxy_bypass(url.hostname):
        return None
    return urllib.request.getproxies().get(url.scheme)


def _ssl_context(configuration: k8s_configuration.Configuration) -> ssl.SSLContext:
    """The TLS settings kubernetes_asyncio gives its own connections, from the same fields."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if configuration.disable_strict_ssl_verification:
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


def _write_pool(configuration: k8s_configuration.Configuration) -> Http1Pool | None:
    """The lean pool for writes, unless a proxy stands between us and the server."""
    if configuration.proxy or not configuration.host:
        return None
    return Http1Pool(
        configuration.host,
        ssl_context=_ssl_context(configuration),
        server_hostname=configuration.tls_server_name,
        max_connections=configuration.connection_pool_maxsize,
    )


def _stop_reading_environment_per_request(api: k8s_api.ApiClient) -> None:
    """Replace kubernetes_asyncio's session by one that does not trust the environment.

    Its session is built with ``trust_env=True``, so aiohttp parses ~/.netrc and the
    proxy variables in a worker thread on every request: two thread hops per binding,
    a fifth of the scheduler's CPU in a profile. The proxy is resolved once instead
    (:func:`_proxy_from_environment`); credentials come from the kubeconfig, never netrc.
    """
    rest = api.rest_client
    old: aiohttp.ClientSession = rest.pool_manager
    rest.pool_manager = aiohttp.ClientSession(
        connector=old.connector,
        trust_env=False,
        read_bufsize=_READ_BUFFER_BYTES,
    )
    old.detach()  # the connector now belongs to the new session


class RequestOptions(TypedDict, total=False):
    """What :meth:`KubeClient.send` takes beside the method and path."""

    query: Sequence[tuple[str, str]] | None
    body: Any
    content_type: str


class KubeClient:
    """Raw, rate-limited requests to one API server. Create with :meth:`connect`."""

    def __init__(
        self,
        api: k8s_api.ApiClient,
        *,
        qps: float,
        burst: int,
        timeout: float,
        owner: bool = True,
        writes: Http1Pool | None = None,
    ):
        self._api = api
        #: Where writes go when set (:mod:`coscheduler.runtime.http1`); else aiohttp.
        self._writes = writes
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
            self._api,
            qps=self._qps,
            burst=self._burst,
            timeout=self._timeout,
            owner=False,
            writes=self._writes,
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
    ) -> KubeClient:
        """Load credentials from ``kubeconfig``, or in-cluster when it is None."""
        configuration = k8s_configuration.Configuration()
        if kubeconfig is None:
            incluster_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            await kube_config.load_kube_config(
                config_file=kubeconfig, client_configuration=configuration
            )
        configuration.connection_pool_maxsize = max_connections
        if not configuration.proxy:
            configuration.proxy = _proxy_from_environment(configuration.host)
        api = k8s_api.ApiClient(configuration)
        _stop_reading_environment_per_request(api)
        return cls(
            api, qps=qps, burst=burst, timeout=timeout_seconds, writes=_write_pool(configuration)
        )

    @property
    def api_client(self) -> k8s_api.ApiClient:
        """The underlying client, for the few calls where generated models are fine."""
        return self._api

    async def take_turn(self) -> None:
        """Wait for the rate limit to allow one request; callers are served in order."""
        async with self._turn:
            await self._limiter.acquire()

    async def warm_writes(self, count: int) -> int:
        """Open ``count`` connections for writes ahead of the first (:meth:`Http1Pool.warm`)."""
        return 0 if self._writes is None else await self._writes.warm(count)

    async def close(self) -> None:
        if self._owner:
            if self._writes is not None:
                self._writes.close()
            await self._api.close()

    async def _auth_headers(self) -> dict[str, str]:
        """The library's own credentials: a token refreshed by its hooks when it expires."""
        headers = {}
        for setting in (await self._api.configuration.auth_settings()).values():
            if setting["in"] == "header" and setting["value"]:
                headers[setting["key"]] = setting["value"]
        return headers

    async def _write(
        self,
        pool: Http1Pool,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] | None,
        body: Any,
        content_type: str,
    ) -> Response:
        """A write through the lean pool; typed errors as :meth:`send` promises."""
        await self.take_turn()
        fixed = self._headers.get(content_type)
        if fixed is None:
            fixed = self._headers[content_type] = (
                f"Accept: {JSON}\r\nContent-Type: {content_type}\r\n"
                f"User-Agent: {_USER_AGENT}\r\n".encode()
            )
        credentials = await self._auth_headers()
        if credentials:
            fixed += "".join(f"{key}: {value}\r\n" for key, value in credentials.items()).encode()
        target = f"{path}?{urllib.parse.urlencode(query)}" if query else path
        data = None if body is None else body if isinstance(body, bytes) else orjson.dumps(body)
        try:
            status, raw = await pool.request(method, target, fixed, data, within=self._timeout)
        except (OSError, TimeoutError) as error:  # ssl.SSLError is an OSError
            raise _unreachable(method, path, error) from error
        if 200 <= status < 300:
            return Response(status, raw)
        raise ApiError.from_answer(method=method, path=path, status=status, body=raw)

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] | None,
        body: Any,
        content_type: str,
        request_timeout: aiohttp.ClientTimeout | float | None,
    ) -> aiohttp.ClientResponse:
        await self.take_turn()
        configuration = self._api.configuration
        rest = self._api.rest_client
        headers = {"Accept": JSON, "Content-Type": content_type, "User-Agent": _USER_AGENT}
        headers.update(await self._auth_headers())
        timeout = request_timeout if request_timeout is not None else self._timeout
        try:
            response: aiohttp.ClientResponse = await rest.pool_manager.request(
                method,
                f"{configuration.host}{path}",
                params=list(query) if query else None,
                data=body if body is None or isinstance(body, bytes) else orjson.dumps(body),
                headers=headers,
                timeout=timeout
                if isinstance(timeout, aiohttp.ClientTimeout)
                else aiohttp.ClientTimeout(total=timeout),
                proxy=rest.proxy,
                proxy_headers=rest.proxy_headers,
                server_hostname=rest.server_hostname,
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            raise _unreachable(method, path, error) from error
        return response

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
        ``body`` is encoded as JSON unless it is ``bytes`` already.
        """
        if self._writes is not None and method != "GET":
            return await self._write(
                self._writes, method, path, query=query, body=body, content_type=content_type
            )
        response = await self._send(
            method, path, query=query, body=body, content_type=content_type, request_timeout=None
        )
        try:
            raw = await response.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            raise _unreachable(method, path, error) from error
        finally:
            response.release()
        if 200 <= response.status < 300:
            return Response(response.status, raw)
        raise ApiError.from_answer(method=method, path=path, status=response.status, body=raw)

    async def call(self, method: str, path: str, **options: Unpack[RequestOptions]) -> Any:
        """Send a request and return the decoded body; raise as :meth:`send` does.

        A GET that meets a retryable failure (throttling, a server starting, a
        dropped connection) is retried with jittered exponential backoff for up
        to a minute: reads are idempotent, and a fresh API server or a CRD just
        installed answers 429 for a moment.
        """
        retrying = AsyncRetrying(
            retry=retry_if_exception(_is_retryable) if method == "GET" else _never,
            wait=wait_exponential_jitter(multiplier=0.2, max=5.0),
            stop=stop_after_delay(_READ_RETRY_SECONDS),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                response = await self.send(method, path, **options)
                return response.json()
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def stream_lines(
        self, path: str, *, query: Sequence[tuple[str, str]], read_timeout_seconds: float
    ) -> AsyncGenerator[bytes]:
        """Yield the lines of a streaming GET (a watch), without the newlines.

        Raises the typed error of the server's refusal, and ``Unreachable``
        when the connection fails or nothing at all arrives for
        ``read_timeout_seconds`` (a silent, half-dead connection).
        """
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self._timeout, sock_read=read_timeout_seconds
        )
        response = await self._send(
            "GET", path, query=query, body=None, content_type=JSON, request_timeout=timeout
        )
        try:
            if response.status != 200:
                raise ApiError.from_answer(
                    method="GET", path=path, status=response.status, body=await response.read()
                )
            pending = b""
            async for chunk in response.content.iter_any():
                pending += chunk
                if b"\n" not in chunk:
                    if len(pending) > _MAX_LINE_BYTES:
                        raise ValueError(f"watch line over {_MAX_LINE_BYTES} bytes from {path}")
                    continue
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line:
                        yield line
            if pending.strip():
                yield pending
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            raise _unreachable("WATCH", path, error) from error
        finally:
            response.release()


def _unreachable(method: str, path: str, error: BaseException) -> Unreachable:
    detail = str(error) or ("timed out" if isinstance(error, TimeoutError) else "")
    return Unreachable(
        method=method, path=path, status=None, message=f"{type(error).__name__}: {detail}"
    )


def _is_retryable(error: BaseException) -> bool:
    return isinstance(error, ApiError) and error.retryable


def _never(_: object) -> bool:
    return False


def query_params(params: Mapping[str, str | int | bool | None]) -> list[tuple[str, str]]:
    """Query parameters in the API server's spelling, dropping the unset ones."""
    result: list[tuple[str, str]] = []
    for key, value in params.items():
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        result.append((key, text))
    return result
