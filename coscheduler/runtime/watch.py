"""List-then-watch of one kind of object, resumed and relisted as needed.

The stream of a kind, as its consumer sees it:

1. ``Listed(objects)``: every object that exists now. The consumer replaces
   what it knew of this kind with it: an object it held that is not listed
   was deleted while we were not watching.
2. ``Event(type, object)`` for each ADDED, MODIFIED or DELETED, in order.
3. After a server-side timeout or a dropped connection, the watch resumes
   from the last resourceVersion seen (bookmarks keep it fresh), so nothing is
   lost and nothing is replayed.
4. When the server has forgotten that version (410 Gone, "Expired"), the
   whole kind is listed again: back to 1.
5. A list answered 404 (a CRD not installed yet) is, when ``missing_ok``,
   ``Listed([], served=False)`` once: nothing of the kind exists; it is
   listed again after the backoff, until it is served. A first list
   answered 403 raises :class:`Forbidden` when ``stop_if_forbidden`` (the
   consumer runs without the kind); otherwise it is retried like any error.

How a list is read: as a streaming watch-list, one request
(``sendInitialEvents=true``) that the API server answers from its watch
cache with every object as an ADDED event, then a bookmark annotated
``k8s.io/initial-events-end`` carrying the list's resourceVersion, then the
changes since, on the same stream. Each event is decoded as it arrives, so
decoding overlaps the server's sending and no page is ever held whole; the
objects are handed over as one ``Listed`` only at that bookmark, never a
partial picture. A stream that breaks before it is read again from the
start (the initial events come in key order, not version order: none of
their versions is a place to resume from). Where the server does not offer
it (WatchList gate off: a 400/422 answer; or a stream that ends before the
bookmark), this Watch lists in pages from then on (``page_size`` objects a
page, consistent, from the watch cache on 1.34 and later) and watches from
the list's resourceVersion. The cyclic garbage collector is held off while
a list is decoded (:mod:`coscheduler.runtime.gc_pause`): tens of thousands
of fresh dicts made it walk the heap again and again, half the list's CPU.

Reconnects back off exponentially with jitter, reset by any healthy stream.
Objects are plain dicts decoded by orjson: generated models are far too slow
for the rates a scheduler sees; their ``managedFields`` are dropped (never
read, a third of the memory of a list of pods).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import orjson
import structlog

from coscheduler.runtime import gc_pause
from coscheduler.runtime.errors import ApiError, Forbidden, Gone, Invalid, NotFound
from coscheduler.runtime.kube import KubeClient, query_params
from coscheduler.runtime.retry import backoff_seconds

__all__ = [
    "Event",
    "EventType",
    "Listed",
    "StopWatching",
    "Watch",
    "WatchItem",
    "initial_events_ended",
]

log = structlog.get_logger(__name__)

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
_OBJECT_EVENTS: Final = frozenset({"ADDED", "MODIFIED", "DELETED"})
#: The annotation of the bookmark that ends a watch-list's initial events.
INITIAL_EVENTS_END: Final = "k8s.io/initial-events-end"


@dataclass(frozen=True, slots=True)
class Listed:
    """All objects of the kind as of one resourceVersion."""

    objects: list[dict[str, Any]]
    #: False when the list answered 404: the kind is not served (yet).
    served: bool = True


@dataclass(frozen=True, slots=True)
class Event:
    """One change to one object."""

    type: EventType
    object: dict[str, Any]


WatchItem = Listed | Event


class StopWatching(Exception):  # noqa: N818 (a signal, not an error)
    """The first list was forbidden and the watch was told to stop then (rule 5)."""


@dataclass(slots=True)
class Watch:
    """List and watch ``path`` (e.g. ``/api/v1/pods``) for as long as iterated."""

    client: KubeClient
    path: str
    field_selector: str | None = None
    label_selector: str | None = None
    #: Objects a page when the server does not stream lists.
    page_size: int = 500
    timeout_seconds: int = 300
    backoff_initial_seconds: float = 0.5
    backoff_max_seconds: float = 30.0
    #: Called with each decoded line's byte length; lets metrics count traffic.
    on_bytes: Callable[[int], None] | None = None
    #: A 404 on the list means "none yet" (rule 5).
    missing_ok: bool = False
    #: A 403 on the first list raises (rule 5).
    stop_if_forbidden: bool = False
    #: Ask for a streaming watch-list first; turned off when the server does not offer one.
    stream_lists: bool = True
    _resource_version: str | None = field(default=None, init=False)

    async def __aiter__(self) -> AsyncIterator[WatchItem]:
        failures = 0
        must_list = True
        listed = missing_told = False
        while True:
            try:
                events: AsyncGenerator[Event] | None = None
                if must_list:
                    try:
                        objects, events = await self._first_list()
                    except NotFound:
                        if not self.missing_ok:
                            raise
                        if not missing_told:
                            missing_told = True
                            yield Listed([], served=False)
                        raise
                    except Forbidden:
                        if self.stop_if_forbidden and not listed:
                            raise StopWatching from None
                        raise
                    must_list = False
                    listed = True
                    if events is None:
                        yield Listed(objects)
                        del objects  # the consumer's now; not kept alive by this frame
                    else:  # a watch-list: its stream goes on after the list
                        async with contextlib.aclosing(events):
                            yield Listed(objects)
                            del objects
                            async for event in events:
                                failures = 0
                                yield event
                        continue  # the server ended the stream: resume from its last version
                async for event in self._watch_once():
                    failures = 0
                    yield event
            except Gone:
                log.info("watch expired, listing again", path=self.path)
                must_list = True
            except (ApiError, ValueError) as error:
                # ValueError: a line that is not JSON, or too long to be one.
                failures += 1
                # The retry policy's wait, without tenacity: this generator yields between
                # failures, and a failure after an event starts counting again.
                delay = backoff_seconds(
                    failures, initial=self.backoff_initial_seconds, maximum=self.backoff_max_seconds
                )
                log.warning(
                    "watch failed, retrying",
                    path=self.path,
                    error=str(error),
                    retry_in_seconds=round(delay, 2),
                    relist=must_list,
                )
                await asyncio.sleep(delay)

    def _selectors(self) -> dict[str, str | int | bool | None]:
        return {"fieldSelector": self.field_selector, "labelSelector": self.label_selector}

    async def _first_list(self) -> tuple[list[dict[str, Any]], AsyncGenerator[Event] | None]:
        """Every object, and the rest of the stream when it came by a watch-list."""
        with gc_pause.paused():
            if self.stream_lists:
                try:
                    return await self._stream_list()
                except _NotStreamed as refusal:
                    self.stream_lists = False
                    log.info("lists come in pages", path=self.path, why=str(refusal))
            return await self._list(), None

    async def _stream_list(self) -> tuple[list[dict[str, Any]], AsyncGenerator[Event]]:
        """A watch-list read up to its initial-events-end bookmark; the open stream after it."""
        query = query_params(
            {
                **self._selectors(),
                "watch": True,
                "sendInitialEvents": True,
                "resourceVersionMatch": "NotOlderThan",
                "allowWatchBookmarks": True,
                "timeoutSeconds": self.timeout_seconds,
            }
        )
        lines = self.client.stream_lines(
            self.path, query=query, read_timeout_seconds=self.timeout_seconds * 2
        )
        objects: list[dict[str, Any]] = []
        try:
            async for line in lines:
                kind, obj = self._decode(line)
                if kind == "ADDED":
                    _strip(obj)
                    objects.append(obj)
                elif kind == "BOOKMARK" and initial_events_ended(obj):
                    # The list's version: the first place the watch may resume from.
                    self._resource_version = _version_of(obj)
                    return objects, self._events(lines)
                # Nothing else comes before that bookmark; a plain bookmark says nothing yet.
        except Invalid as error:
            await lines.aclose()
            raise _NotStreamed(str(error)) from error
        except BaseException:
            await lines.aclose()
            raise
        await lines.aclose()
        raise _NotStreamed("the stream ended before the initial-events-end bookmark")

    async def _list(self) -> list[dict[str, Any]]:
        objects: list[dict[str, Any]] = []
        continue_token: str | None = None
        while True:
            page = await self.client.call(
                "GET",
                self.path,
                query=query_params(
                    {**self._selectors(), "limit": self.page_size, "continue": continue_token}
                ),
            )
            items = page.get("items") or ()
            for item in items:
                _strip(item)
            objects.extend(items)
            metadata = page.get("metadata") or {}
            continue_token = metadata.get("continue") or None
            if continue_token is None:
                self._resource_version = metadata.get("resourceVersion")
                return objects

    async def _watch_once(self) -> AsyncIterator[Event]:
        query = query_params(
            {
                **self._selectors(),
                "watch": True,
                "allowWatchBookmarks": True,
                "resourceVersion": self._resource_version,
                "timeoutSeconds": self.timeout_seconds,
            }
        )
        # A healthy watch sends a bookmark about every minute; twice the
        # server timeout of silence means the connection is dead.
        lines = self.client.stream_lines(
            self.path, query=query, read_timeout_seconds=self.timeout_seconds * 2
        )
        async with contextlib.aclosing(self._events(lines)) as events:
            async for event in events:
                yield event

    async def _events(self, lines: AsyncGenerator[bytes]) -> AsyncGenerator[Event]:
        """The object events of an open watch stream, each moving the resume point."""
        async with contextlib.aclosing(lines):
            async for line in lines:
                kind, obj = self._decode(line)
                version = _version_of(obj)
                if version:
                    self._resource_version = version
                if kind in _OBJECT_EVENTS:
                    yield Event(kind, obj)

    def _decode(self, line: bytes) -> tuple[Any, dict[str, Any]]:
        """One watch event's type and object; an ERROR event raises its Status as an error."""
        if self.on_bytes is not None:
            self.on_bytes(len(line))
        raw = orjson.loads(line)
        kind = raw.get("type")
        obj = raw.get("object") or {}
        if kind == "ERROR":
            # A Status in the stream: 410 when our resourceVersion expired.
            raise ApiError.from_answer(
                method="WATCH",
                path=self.path,
                status=int(obj.get("code") or 500),
                body=orjson.dumps(obj),
            )
        return kind, obj


class _NotStreamed(Exception):  # noqa: N818 (a signal, not an error)
    """The server does not offer a watch-list here: list in pages instead."""


def initial_events_ended(bookmark: dict[str, Any]) -> bool:
    """Whether a BOOKMARK's object is the one that closes a watch-list's initial events."""
    annotations = (bookmark.get("metadata") or {}).get("annotations") or {}
    return annotations.get(INITIAL_EVENTS_END) == "true"


def _version_of(obj: dict[str, Any]) -> str | None:
    version: str | None = (obj.get("metadata") or {}).get("resourceVersion")
    return version


def _strip(obj: dict[str, Any]) -> None:
    # Never read, and the whole list is kept until it ends: at 50,000 pods the
    # server-side apply bookkeeping is a third of the peak memory.
    (obj.get("metadata") or {}).pop("managedFields", None)
