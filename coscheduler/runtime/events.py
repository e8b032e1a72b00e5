"""Kubernetes Events, deduplicated and rate-limited.

``record()`` never blocks the scheduling loop: it queues the event and a
background task writes it. Events of one object and reason form a *series*,
one Event object whose ``count``, ``lastTimestamp`` and ``message`` are
patched, as kubectl shows it ("x12 over 3m"). The rules that keep a large
waiting gang from flooding the API server, and keep what it shows true:

1. The same message again within ``interval_seconds`` of the series' last
   write is only counted; the count lands with the next write.
2. A new message is written at once if the series was last written at least
   ``change_interval`` ago (an argument of ``record``; by default
   ``interval_seconds``); otherwise it waits and the latest one is written
   when that time has passed. So the message a person reads is never older
   than ``change_interval``, and a pod whose reason's wording changes with
   every attempt costs one write per interval, not one per attempt.
3. Writes pass the client's rate limiter, and at most ``max_pending`` events
   wait in the queue; beyond that new ones are dropped (and counted), never
   the loop slowed.
4. Warnings are held aside while bindings are in flight (``idle``), and one
   whose ``still_true`` says it no longer holds when its turn comes (the pod
   that "cannot be scheduled" was bound meanwhile) is not written at all:
   placing a burst of gangs is not slowed by explaining why they briefly
   waited. Other events pass the held warnings: a pod's ``Scheduled`` event
   does not wait for the burst to end.
5. An event of a series already waiting to be written (queued, or held by
   rule 4) is merged into it: the latest message is written once, counting
   the repeats. Before this, a warning recorded on each attempt while
   bindings were in flight queued once per attempt, and each was then
   written: 800-1,000 event PATCHes in a 21 s trial of the DRA suite (4-14
   since).
6. ``writers`` requests are in flight at once, not one round trip at a
   time. While a burst of bindings keeps the API server busy each write
   waits as long as a binding does, so most ``Scheduled`` events of a large
   burst land just after it: bindings come first. Writes of one series take
   turns in the order they were queued, so a series is created once and its
   count and message only move forward.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import functools
import itertools
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Final, Literal

import structlog

from coscheduler.api.timestamps import rfc3339
from coscheduler.runtime.errors import ApiError, NotFound
from coscheduler.runtime.kube import MERGE_PATCH, KubeClient

__all__ = ["EventKind", "EventRecorder", "ObjectRef", "Recorded"]

log = structlog.get_logger(__name__)

EventKind = Literal["Normal", "Warning"]
_REPORTING_COMPONENT: Final = "coscheduler"
_MESSAGE_LIMIT: Final = 1024  # the API server truncates longer event notes


@functools.lru_cache(maxsize=2)
def _rfc3339_of(second: int) -> str:
    """``rfc3339`` of a whole second, formatted once: event times are whole seconds."""
    return rfc3339(datetime.datetime.fromtimestamp(second, datetime.UTC))


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """The object an event is about (``namespace`` empty for a cluster-scoped one)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str

    @property
    def event_namespace(self) -> str:
        """Where its events live: its namespace, or ``default`` for a cluster-scoped object."""
        return self.namespace or "default"


@dataclass(frozen=True, slots=True)
class Recorded:
    """An event series this process wrote, as it stands (``last_written``: wall time)."""

    uid: str
    kind: EventKind
    reason: str
    message: str
    count: int
    last_written: float


@dataclass(slots=True)
class _Series:
    event_name: str
    count: int
    message: str
    last_written: float
    kind: EventKind = "Normal"
    unwritten: int = 0
    #: A newer message waiting for its turn (rule 2), and when it may go.
    deferred: _Pending | None = None
    deferred_until: float = 0.0


@dataclass(frozen=True, slots=True)
class _Pending:
    ref: ObjectRef
    kind: EventKind
    reason: str
    message: str
    key: tuple[str, str]
    still_true: Callable[[], bool] | None = None
    #: Records of the series merged into this write while it waited (rule 5).
    repeats: int = 0


@dataclass
class EventRecorder:
    """Writes core/v1 Events for coscheduler; see the module docstring for the rules."""

    client: KubeClient
    interval_seconds: float = 30.0
    max_pending: int = 10_000
    max_series: int = 50_000
    #: Requests in flight at once (rule 6); the client's rate limit still applies.
    writers: int = 4
    clock: Callable[[], float] = time.monotonic
    on_drop: Callable[[], None] | None = None
    _queue: asyncio.Queue[_Pending] = field(init=False)
    _series: OrderedDict[tuple[str, str], _Series] = field(init=False)
    _deferred: set[tuple[str, str]] = field(init=False, default_factory=set)
    #: The write each series has waiting, queued or held, as it now stands (rule 5).
    _waiting: dict[tuple[str, str], _Pending] = field(init=False, default_factory=dict)
    _held: deque[_Pending] = field(init=False, default_factory=deque)
    #: A series with a write in flight, and the writes of it waiting their turn (rule 6).
    _turns: dict[tuple[str, str], deque[asyncio.Future[None]]] = field(
        init=False, default_factory=dict
    )
    _instance: str = field(init=False, default_factory=lambda: uuid.uuid4().hex[:8])
    _names: itertools.count[int] = field(init=False, default_factory=itertools.count)

    def __post_init__(self) -> None:
        self._queue = asyncio.Queue(maxsize=self.max_pending)
        self._series = OrderedDict()

    def record(
        self,
        ref: ObjectRef,
        kind: EventKind,
        reason: str,
        message: str,
        *,
        change_interval: float | None = None,
        still_true: Callable[[], bool] | None = None,
    ) -> None:
        """Queue an event about ``ref``; merged, deferred or dropped per the module's rules."""
        message = message[:_MESSAGE_LIMIT]
        key = (ref.uid, reason)
        pending = _Pending(ref, kind, reason, message, key, still_true)
        series = self._series.get(key)
        if series is not None:
            since = self.clock() - series.last_written
            if message == series.message and since < self.interval_seconds:
                series.unwritten += 1  # rule 1
                return
            wait = self.interval_seconds if change_interval is None else change_interval
            if message != series.message and since < wait:
                series.deferred = pending  # rule 2
                series.deferred_until = series.last_written + wait
                self._deferred.add(key)
                return
        self._enqueue(pending)

    def written_about(self, uids: Collection[str]) -> list[Recorded]:
        """The series written about these objects (the latest this process keeps), oldest
        first: what ``kubectl describe`` lists of ours, without asking the API server."""
        offset = time.time() - self.clock()
        return [
            Recorded(uid, s.kind, reason, s.message, s.count + s.unwritten, s.last_written + offset)
            for (uid, reason), s in self._series.items()
            if uid in uids
        ]

    def _enqueue(self, pending: _Pending) -> None:
        waiting = self._waiting.get(pending.key)
        if waiting is not None:  # rule 5: the write waiting says the latest
            self._waiting[pending.key] = dataclasses.replace(pending, repeats=waiting.repeats + 1)
            return
        try:
            self._queue.put_nowait(pending)
        except asyncio.QueueFull:
            if self.on_drop is not None:
                self.on_drop()
            return
        self._waiting[pending.key] = pending

    def _release_deferred(self) -> None:
        now = self.clock()
        for key in list(self._deferred):
            series = self._series.get(key)
            if series is None or series.deferred is None:
                self._deferred.discard(key)
            elif series.deferred_until <= now:
                self._enqueue(series.deferred)
                series.deferred = None
                self._deferred.discard(key)

    async def run(self, idle: asyncio.Event | None = None) -> None:
        """Write queued events until cancelled; ``idle`` is set while no binding is in
        flight (rule 4; None: never wait)."""
        async with asyncio.TaskGroup() as writers:
            for _ in range(max(1, self.writers)):
                writers.create_task(self._write_queued(idle))

    async def _write_queued(self, idle: asyncio.Event | None) -> None:
        while True:
            self._release_deferred()
            if self._held and _is_idle(idle):
                pending = self._held.popleft()
            else:
                try:
                    pending = self._queue.get_nowait()  # no timer while events keep coming
                except asyncio.QueueEmpty:
                    try:
                        # While warnings are held, look at ``idle`` again soon. Not
                        # asyncio.wait_for: on Python 3.11 it swallows a cancellation that
                        # lands as an event arrives, and this writer would never stop.
                        timeout = 0.1 if self._held else 1.0
                        async with asyncio.timeout(timeout):
                            pending = await self._queue.get()
                    except TimeoutError:
                        continue
                if pending.kind == "Warning" and not _is_idle(idle):
                    self._hold(pending)
                    continue
            key = pending.key
            pending = self._waiting.pop(key, pending)  # as it stands now (rule 5)
            if key in self._turns:
                await self._wait_turn(key)
            else:
                self._turns[key] = deque()  # no other write of it: its turn at once
            try:
                if pending.still_true is not None and not pending.still_true():
                    continue
                await self._write(pending)
            except ApiError as error:
                log.warning("event not written", reason=pending.reason, error=str(error))
            finally:
                self._pass_turn(key)

    async def _wait_turn(self, key: tuple[str, str]) -> None:
        """Wait until the writes of this series queued before are done (rule 6).

        Not an asyncio.Lock per series: a lock, its context manager and its
        bookkeeping cost every event as much again as its write's own steps, and
        almost every event (a pod's ``Scheduled``) is the only write of its series.
        """
        turn = asyncio.get_running_loop().create_future()
        waiting = self._turns[key]
        waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._pass_turn(key)  # handed the turn as it was cancelled: pass it on
            else:
                waiting.remove(turn)
            raise

    def _pass_turn(self, key: tuple[str, str]) -> None:
        """This write of the series is done: the next one queued goes, in order."""
        waiting = self._turns[key]
        while waiting:
            turn = waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        del self._turns[key]

    def _hold(self, pending: _Pending) -> None:
        if len(self._held) >= self.max_pending:
            self._waiting.pop(pending.key, None)
            if self.on_drop is not None:
                self.on_drop()
            return
        self._held.append(pending)

    async def _write(self, pending: _Pending) -> None:
        series = self._series.get(pending.key)
        now = _rfc3339_of(int(time.time()))
        if series is not None:
            series.count += series.unwritten + pending.repeats + 1
            series.unwritten = 0
            series.message = pending.message
            series.last_written = self.clock()
            try:
                await self.client.send(
                    "PATCH",
                    f"/api/v1/namespaces/{pending.ref.event_namespace}/events/{series.event_name}",
                    body={"count": series.count, "lastTimestamp": now, "message": pending.message},
                    content_type=MERGE_PATCH,
                )
            except NotFound:
                # The event expired (events have a TTL) or was deleted: start anew.
                del self._series[pending.key]
            else:
                self._series.move_to_end(pending.key)
                return
        await self._create(pending, now)

    async def _create(self, pending: _Pending, now: str) -> None:
        ref = pending.ref
        # Unique: this process's random instance and its own count (no uuid per event).
        name = f"{ref.name}.{self._instance}{next(self._names):08x}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": ref.event_namespace},
            "involvedObject": {
                "apiVersion": ref.api_version,
                "kind": ref.kind,
                "namespace": ref.namespace,
                "name": ref.name,
                "uid": ref.uid,
            },
            "type": pending.kind,
            "reason": pending.reason,
            "message": pending.message,
            "count": 1 + pending.repeats,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": _REPORTING_COMPONENT},
            "reportingComponent": _REPORTING_COMPONENT,
            "reportingInstance": self._instance,
        }
        await self.client.send(
            "POST", f"/api/v1/namespaces/{ref.event_namespace}/events", body=body
        )
        self._series[pending.key] = _Series(
            name, 1 + pending.repeats, pending.message, self.clock(), pending.kind
        )
        while len(self._series) > self.max_series:
            self._series.popitem(last=False)


def _is_idle(idle: asyncio.Event | None) -> bool:
    return idle is None or idle.is_set()
