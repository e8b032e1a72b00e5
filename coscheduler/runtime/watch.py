"""List-then-watch of one kind of object, resumed and relisted as needed.

The stream of a kind, as its consumer sees it:

1. ``Listed(objects)``: every object that exists now (paged list). The
   consumer replaces what it knew of this kind with it: an object it held that
   is not listed was deleted while we were not watching.
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

Reconnects back off exponentially with jitter, reset by any healthy stream.
Objects are plain dicts decoded by orjson: generated models are far too slow
for the rates a scheduler sees.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import orjson
import structlog

from coscheduler.runtime.errors import ApiError, Forbidden, Gone, NotFound
from coscheduler.runtime.kube import KubeClient, query_params

__all__ = ["Event", "EventType", "Listed", "StopWatching", "Watch", "WatchItem"]

log = structlog.get_logger(__name__)

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
_OBJECT_EVENTS: Final = frozenset({"ADDED", "MODIFIED", "DELETED"})


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
    _resource_version: str | None = field(default=None, init=False)

    async def __aiter__(self) -> AsyncIterator[WatchItem]:
        failures = 0
        must_list = True
        listed = missing_told = False
        while True:
            try:
                if must_list:
                    try:
                        objects = await self._list()
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
                    yield Listed(objects)
                    must_list = False
                    listed = True
                async for event in self._watch_once():
                    failures = 0
                    yield event
            except Gone:
                log.info("watch expired, listing again", path=self.path)
                must_list = True
            except (ApiError, ValueError) as error:
                # ValueError: a line that is not JSON, or too long to be one.
                failures += 1
                delay = min(
                    self.backoff_max_seconds, self.backoff_initial_seconds * 2 ** (failures - 1)
                ) * random.uniform(0.5, 1.0)
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
                # Never read, and the whole list is kept until its last page: at 50,000
                # pods the server-side apply bookkeeping is a third of the peak memory.
                (item.get("metadata") or {}).pop("managedFields", None)
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
        async with contextlib.aclosing(lines):
            async for line in lines:
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
                version = (obj.get("metadata") or {}).get("resourceVersion")
                if version:
                    self._resource_version = version
                if kind in _OBJECT_EVENTS:
                    yield Event(kind, obj)
