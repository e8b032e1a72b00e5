"""An in-process API server that speaks the Kubernetes wire format, scripted per test.

The runtime's fault cases cannot be had from a real API server on demand (a
410 in the middle of a watch, a 500 on the third of five bindings, a stream
that goes silent), so the runtime's unit tests talk to this one instead, over
real HTTP through :class:`~coscheduler.runtime.kube.KubeClient`:

* Every request is recorded (:attr:`FakeApiServer.requests`) with its verb,
  path, query and decoded JSON body. A ``GET`` with ``watch=true`` has the verb
  ``WATCH``, as the API server's audit log and RBAC name it; one that also asks
  ``sendInitialEvents=true`` (a streaming watch-list) has the verb ``WATCHLIST``.
* :meth:`FakeApiServer.on` scripts the answers to one verb and path (or a
  pattern such as ``/api/v1/namespaces/*/events/*`` for names a test cannot
  know): they are given in order, and the last one keeps being given. An answer is a
  :class:`Reply` (a JSON body: an object, a list, a ``Status``), a
  :class:`WatchStream` (newline-delimited watch events), :class:`Disconnect`
  (no answer at all), or a function of the request returning one of those.
* A request nobody scripted is answered 404 with a ``NotFound`` Status; an
  unscripted ``WATCHLIST`` 422 ``Invalid``, as an API server with its WatchList
  gate off answers it (so a test that scripts lists reads them in pages).
"""

from __future__ import annotations

import asyncio
import fnmatch
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import orjson
from aiohttp import web
from aiohttp.test_utils import RawTestServer

from coscheduler.runtime.kube import KubeClient
from e2e.pki import Pki

__all__ = [
    "Answer",
    "Disconnect",
    "FakeApiServer",
    "InFlight",
    "RecordedRequest",
    "Reply",
    "WatchStream",
    "added",
    "bookmark",
    "deleted",
    "error_event",
    "modified",
    "object_list",
    "status_error",
]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server received it."""

    verb: str
    path: str
    query: Mapping[str, str]
    body: Any
    content_type: str
    #: The Accept-Encoding the client sent ("" for none).
    accept_encoding: str = ""
    #: The Authorization header ("" for none).
    authorization: str = ""


@dataclass(frozen=True, slots=True)
class Reply:
    """A complete answer with a JSON body."""

    status: int
    body: Any


@dataclass(frozen=True, slots=True)
class WatchStream:
    """A 200 answer to a watch: ``events``, one JSON line each, then the stream ``then``:

    ``"close"`` ends it as a server-side timeout does; ``"hang"`` keeps the
    connection open without another byte (a silent, half-dead connection).
    """

    events: Sequence[Mapping[str, Any]]
    then: Literal["close", "hang"] = "close"


@dataclass(frozen=True, slots=True)
class Disconnect:
    """Drop the connection without answering, as a crashing server or a proxy may."""


Answer = Reply | WatchStream | Disconnect
# Long enough for any request a test expects; a test waiting longer is broken.
_WAIT_LIMIT_SECONDS = 2.0

Handler = Callable[[RecordedRequest], Answer | Awaitable[Answer]]


def object_list(
    items: Sequence[Mapping[str, Any]], *, resource_version: str, continue_token: str = ""
) -> Reply:
    """A list answer; ``continue_token`` says that more pages follow."""
    metadata = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    return Reply(200, {"kind": "List", "apiVersion": "v1", "metadata": metadata, "items": items})


def status_object(code: int, reason: str, message: str) -> dict[str, Any]:
    """A ``Status`` as the API server describes a failure."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def status_error(code: int, reason: str, message: str = "") -> Reply:
    """An error answer carrying a ``Status`` (``NotFound``, ``Conflict``, ``Expired``...)."""
    return Reply(code, status_object(code, reason, message or f"{reason} (from the test)"))


def added(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "ADDED", "object": obj}


def modified(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "MODIFIED", "object": obj}


def deleted(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "DELETED", "object": obj}


def bookmark(resource_version: str, kind: str = "Pod") -> dict[str, Any]:
    """A BOOKMARK: an object with nothing but the kind and a newer resourceVersion."""
    return {
        "type": "BOOKMARK",
        "object": {
            "kind": kind,
            "apiVersion": "v1",
            "metadata": {"resourceVersion": resource_version},
        },
    }


def initial_events_end(resource_version: str, kind: str = "Pod") -> dict[str, Any]:
    """The BOOKMARK that closes a watch-list's initial events, at the list's version."""
    event = bookmark(resource_version, kind)
    event["object"]["metadata"]["annotations"] = {"k8s.io/initial-events-end": "true"}
    return event


def error_event(code: int, reason: str, message: str = "") -> dict[str, Any]:
    """An ERROR watch event: a ``Status`` inside the stream (410 ``Expired`` most often)."""
    return {"type": "ERROR", "object": status_object(code, reason, message or reason)}


class InFlight:
    """A handler that answers after a pause, counting the requests it holds at once.

    The pause is long enough for every request a client allows at once to arrive.
    """

    def __init__(self, answer: Callable[[RecordedRequest], Answer], seconds: float = 0.02) -> None:
        self._answer = answer
        self._seconds = seconds
        self._now = 0
        #: The most requests held at once so far.
        self.most = 0

    async def __call__(self, request: RecordedRequest) -> Answer:
        self._now += 1
        self.most = max(self.most, self._now)
        try:
            await asyncio.sleep(self._seconds)
        finally:
            self._now -= 1
        return self._answer(request)


def _not_scripted(request: RecordedRequest) -> Answer:
    if request.verb == "WATCHLIST":
        message = (
            "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
        )
        return status_error(422, "Invalid", message)
    return status_error(404, "NotFound", f"nothing scripted for {request.verb} {request.path}")


class FakeApiServer:
    """A scripted API server on 127.0.0.1; use as ``async with FakeApiServer() as server``."""

    def __init__(self, pki: Pki | None = None) -> None:
        #: Serves TLS with this PKI's server certificate when given, else plain HTTP.
        self._pki = pki
        self.requests: list[RecordedRequest] = []
        self._routes: dict[tuple[str, str], list[Answer | Handler]] = {}
        self._arrived = asyncio.Condition()
        self._closing = asyncio.Event()
        self._http = RawTestServer(self._handle, host="127.0.0.1")
        #: Compress answers (gzip) whose request accepts it, as the API server does.
        self.compress = False

    async def __aenter__(self) -> FakeApiServer:
        tls = None if self._pki is None else self._pki.server_context()
        await self._http.start_server(ssl=tls)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._closing.set()  # ends the streams left hanging
        await self._http.close()

    @property
    def url(self) -> str:
        scheme = "http" if self._pki is None else "https"
        return f"{scheme}://127.0.0.1:{self._http.port}"

    def write_kubeconfig(self, directory: Path) -> Path:
        """A kubeconfig for this server with no credentials at all (but its CA, over TLS)."""
        path = directory / "kubeconfig"
        cluster: dict[str, str] = {"server": self.url}
        if self._pki is not None:
            cluster["certificate-authority"] = str(self._pki.ca_cert)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": cluster}],
            "users": [{"name": "nobody", "user": {}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "nobody"}}],
            "current-context": "fake",
        }
        path.write_bytes(orjson.dumps(config))  # JSON is YAML
        return path

    async def connect(
        self, directory: Path, *, qps: float = 1000.0, burst: int = 1000
    ) -> KubeClient:
        """A client of this server, connected as coscheduler connects: from a kubeconfig."""
        return await KubeClient.connect(
            kubeconfig=str(self.write_kubeconfig(directory)),
            qps=qps,
            burst=burst,
            timeout_seconds=5.0,
        )

    # -- scripting -----------------------------------------------------------

    def on(self, verb: str, path: str, *answers: Answer | Handler) -> None:
        """Answer ``verb path`` with ``answers`` in order, the last one from then on.

        ``path`` may be a shell-style pattern; an exact path is preferred to a pattern.
        """
        if not answers:
            raise ValueError("script at least one answer")
        self._routes[(verb, path)] = list(answers)

    # -- what was asked ------------------------------------------------------

    def requests_to(self, verb: str, path: str | None = None) -> list[RecordedRequest]:
        return [r for r in self.requests if r.verb == verb and (path is None or r.path == path)]

    async def wait_for(
        self, verb: str, path: str | None = None, *, count: int = 1
    ) -> list[RecordedRequest]:
        """Wait until ``count`` such requests have arrived; return them all."""
        await self.wait_until(lambda: len(self.requests_to(verb, path)) >= count)
        return self.requests_to(verb, path)

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        """Wait until ``condition()`` holds, looked at as each request arrives (at most 2 s)."""
        async with asyncio.timeout(_WAIT_LIMIT_SECONDS), self._arrived:
            await self._arrived.wait_for(condition)

    # -- serving -------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        raw = await request.read()
        verb = request.method
        if verb == "GET" and request.query.get("watch") == "true":
            verb = "WATCHLIST" if request.query.get("sendInitialEvents") == "true" else "WATCH"
        recorded = RecordedRequest(
            verb=verb,
            path=request.path,
            query=dict(request.query),
            body=orjson.loads(raw) if raw else None,
            content_type=request.content_type,
            accept_encoding=request.headers.get("Accept-Encoding", ""),
            authorization=request.headers.get("Authorization", ""),
        )
        async with self._arrived:
            self.requests.append(recorded)
            self._arrived.notify_all()
        answer = await self._answer_for(recorded)
        if isinstance(answer, Reply):
            reply = web.Response(
                status=answer.status,
                body=orjson.dumps(answer.body),
                content_type="application/json",
            )
            if self.compress:
                reply.enable_compression()
            return reply
        if isinstance(answer, Disconnect):
            assert request.transport is not None
            request.transport.abort()
            raise asyncio.CancelledError  # nothing is sent on a dropped connection
        return await self._stream(request, answer)

    async def _answer_for(self, request: RecordedRequest) -> Answer:
        script = self._routes.get((request.verb, request.path))
        if script is None:
            script = next(
                (
                    answers
                    for (verb, pattern), answers in self._routes.items()
                    if verb == request.verb and fnmatch.fnmatchcase(request.path, pattern)
                ),
                None,
            )
        if script is None:
            return _not_scripted(request)
        step = script.pop(0) if len(script) > 1 else script[0]
        if not callable(step):
            return step
        answer = step(request)
        return await answer if inspect.isawaitable(answer) else answer

    async def _stream(self, request: web.BaseRequest, stream: WatchStream) -> web.StreamResponse:
        response = web.StreamResponse(status=200)
        response.content_type = "application/json"
        if self.compress:
            response.enable_compression()
        await response.prepare(request)
        for event in stream.events:
            await response.write(orjson.dumps(event) + b"\n")
        if stream.then == "hang":
            await self._closing.wait()
        await response.write_eof()
        return response
