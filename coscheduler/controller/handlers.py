"""The controller's Kopf handlers: each Namespace's PodGroups of ours, and each Queue.

Kopf reconciles an object when the object changes; a PodGroup's status
changes with its pods (which Kopf never watches: the scheduler's handlers
do) and with the scheduling loop's verdicts. So each handler is *resident*:
``@kopf.on.event`` calls it with the object's first event, and it stays,
woken by the read model's marks, writing the statuses derived from the read
model (:meth:`StatusWriter.reconcile`, :meth:`QueueStatusWriter.reconcile`).

PodGroups are followed by namespace, not one by one: Kopf watches Namespaces
(few, and written by nothing of ours) and each one's handler writes the
statuses of our PodGroups in it (:class:`GroupFollower`), so Kopf neither
parses every PodGroup event a second time nor is called again by the echo of
each status it writes.

Kopf 1.45 keeps every event that comes for an object while its handler runs,
each a whole body, in that object's unbounded queue (``worker`` in
``kopf/_core/reactor/queueing.py``; its time-based batching is gone), and
calls the handler with each in turn. So a Namespace's follower returns once
the read model holds a newer version of the namespace than the one it was
called with (its event, queued or on its way, calls the handler again, which
takes over), and once the namespace is gone: what waits behind it is one
edit of the namespace, not every edit of its life. Until the read model has
read the version Kopf called with (two streams), another version is an older
one, and the follower stays. (A list of Kopf's own after its watch expired
delivers the same version again, which waits behind it: rare, as Kopf's
watch follows bookmarks.)

A Queue's handler (:class:`QueueFollower`) writes its one Queue, and returns
once it has written: the event of its own write, a newer version than the
one it was called with, calls it again, so its Queue's events queue no
deeper than one write's.

Why this kind (docs/design.md, "Kopf's part"): a daemon is the same follower
but Kopf puts a finalizer on every object it runs for, so a namespace deleted
while coscheduler is down would wait for it; change handlers keep a diff
base on the object; an event handler writes nothing on the object.

Nothing is written before ``writing`` is set: this replica leads and its
scheduling loop has made its first pass over the whole picture.

The same registry holds admission's handlers (:mod:`.admission`), served by
every replica: ``podgroup-validate``, ``queue-validate`` and
``pod-scheduler-name``, the paths of the chart's webhook configurations.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

import kopf

from coscheduler.api.adapters.apis import SIGS
from coscheduler.api.labels import GROUP, QUEUE_PLURAL, VERSION
from coscheduler.controller.admission import (
    Verdict,
    pod_scheduler_name,
    podgroup_verdict,
    queue_verdict,
)
from coscheduler.controller.backoff import RoundBackoff
from coscheduler.controller.queues import QueueStatusWriter
from coscheduler.controller.writer import StatusWriter
from coscheduler.core.group import GroupKey
from coscheduler.runtime.readmodel import ChangedGroups, Marks, ReadModel

__all__ = ["ALL_QUEUES", "Admission", "GroupFollower", "QueueFollower", "handlers"]

#: How long a follower waits for the read model to hold an object Kopf has just
#: seen (the handlers' watch and Kopf's are two streams): an object that never
#: comes (unreadable, or outside the namespaces read) is left until it changes.
ARRIVAL_GRACE_SECONDS: Final = 10.0

#: The Queues' mark that means "every queue" (any group's change).
ALL_QUEUES: Final = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupFollower:
    """Writes our PodGroups' statuses, one call of :meth:`follow` per namespace."""

    view: ReadModel
    marks: ChangedGroups
    writer: StatusWriter
    #: Set once this replica writes (leads, its loop's first pass done).
    writing: asyncio.Event
    debounce_seconds: float = 0.25

    def _ours(self, key: GroupKey) -> bool:
        """Our API's PodGroup (a name another API's object holds now is not this handler's)."""
        group = self.view.group(key)
        return group is not None and group.api == SIGS

    async def follow(self, namespace: str, version: str | None) -> None:
        """Write the namespace's groups' statuses whenever they may have changed, until
        the namespace is gone or changed (``version``: the namespace's, in the event Kopf
        called with)."""
        await self.writing.wait()
        inbox = Marks[GroupKey]()
        self.marks.follow_namespace(namespace, inbox)
        # The first look at every group: marks made before now were not heard.
        for key in self.view.group_keys():
            if key.namespace == namespace:
                inbox.mark(key)
        inbox.wake.set()
        backoff = RoundBackoff(self.debounce_seconds)
        seen = caught_up = False
        try:
            while True:
                await inbox.wake.wait()
                # A gang's dozens of pod events within the pause make one write.
                await asyncio.sleep(backoff.pause)
                held = self.view.namespace_version(namespace)
                if held is None:
                    inbox.wake.clear()
                    if seen or not await _arrives(inbox.wake):
                        return  # gone (its handler is called again if it comes back)
                    continue
                seen = True
                if held == version:
                    caught_up = True  # the read model has read what Kopf called with
                elif caught_up:
                    # A newer version: its event, queued behind this call, calls the
                    # handler again (whose first look takes over the marks).
                    return
                keys = sorted(key for key in inbox.take() if self._ours(key))
                written = await asyncio.gather(*(self.writer.reconcile(key) for key in keys))
                failed = [key for key, outcome in zip(keys, written, strict=True) if not outcome.ok]
                for key in failed:
                    inbox.mark(key)
                backoff.round_done(failed=bool(failed))
        finally:
            self.marks.unfollow_namespace(namespace, inbox)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueFollower:
    """Writes Queues' statuses, one call of :meth:`follow` per Queue; woken by its own
    mark, any group's change, and every ``refresh_seconds`` (its decaying usage)."""

    view: ReadModel
    marks: Marks[str]
    writer: QueueStatusWriter
    #: Set once this replica writes (leads, its loop's first pass done).
    writing: asyncio.Event
    debounce_seconds: float = 1.0
    refresh_seconds: float = 15.0

    async def follow(self, name: str, version: str | None) -> None:
        """Write the Queue's status whenever it may have changed, until it is gone or
        written (``version``: the Queue's, in the event Kopf called with)."""
        await self.writing.wait()
        woken = asyncio.Event()
        woken.set()  # the first look at once: marks made before now were not heard
        followed = (name, ALL_QUEUES)
        for mark in followed:
            self.marks.follow(mark, woken)
        backoff = RoundBackoff(self.debounce_seconds)
        seen = False
        try:
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), timeout=self.refresh_seconds)
                await asyncio.sleep(backoff.pause)
                woken.clear()
                if name not in self.view.queues():
                    if seen or not await _arrives(woken):
                        return  # gone (its handler is called again if it comes back)
                    continue
                seen = True
                written = await self.writer.reconcile(name)
                # Another version than the one Kopf called with: an event to come (or
                # queued already) calls this handler again.
                if written.version is not None and written.version != version:
                    return
                backoff.round_done(failed=not written.ok)
                if not written.ok:
                    woken.set()
        finally:
            for mark in followed:
                self.marks.unfollow(mark, woken)


async def _arrives(woken: asyncio.Event) -> bool:
    """Whether a mark comes within the grace (the object reaching the read model)."""
    try:
        await asyncio.wait_for(woken.wait(), timeout=ARRIVAL_GRACE_SECONDS)
    except TimeoutError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Admission:
    """What the admission handlers judge with (:mod:`.admission`)."""

    view: ReadModel
    #: Set once every kind is listed: nothing is refused on a partial picture.
    listed: asyncio.Event
    scheduler_name: str


def handlers(
    admission: Admission | None,
    *,
    followers: tuple[GroupFollower, QueueFollower] | None = None,
    namespaces: Collection[str] = (),
    login: Callable[..., Awaitable[kopf.ConnectionInfo | None]] | None = None,
) -> kopf.OperatorRegistry:
    """Our own registry (never Kopf's global one): admission's handlers, the followers'
    (on the leader only: a standby's would hold every object's events, unwritten; over
    ``namespaces`` only, when the scheduler reads only those), by DNS-safe ids (the
    webhooks' paths), and ``login`` (:mod:`.login`): a plain registry has no login of
    its own."""
    registry = kopf.OperatorRegistry()
    if login is not None:
        kopf.on.login(id="login", registry=registry)(login)
    if admission is not None:  # only with a webhook server: Kopf refuses them without
        _admission(registry, admission)
    if followers is None:
        return registry
    groups, queues = followers
    read = frozenset(namespaces)

    def is_read(*, name: str, **_: Any) -> bool:
        return not read or name in read

    @kopf.on.event("", "v1", "namespaces", id="podgroup-status", when=is_read, registry=registry)
    async def podgroup_status(*, type: str | None, name: str, meta: kopf.Meta, **_: Any) -> None:
        # A namespace being deleted has no status left to write (its groups go with it).
        if type != "DELETED" and not meta.get("deletionTimestamp"):
            await groups.follow(name, meta.get("resourceVersion"))

    @kopf.on.event(GROUP, VERSION, QUEUE_PLURAL, id="queue-status", registry=registry)
    async def queue_status(*, type: str | None, name: str, meta: kopf.Meta, **_: Any) -> None:
        if type != "DELETED":
            await queues.follow(name, meta.get("resourceVersion"))

    return registry


def _admission(registry: kopf.OperatorRegistry, admission: Admission) -> None:
    def judged(verdict: Verdict, warnings: list[str]) -> None:
        warnings.extend(verdict.warnings)
        if verdict.refusal is not None:
            raise kopf.AdmissionError(verdict.refusal, code=400)

    @kopf.on.validate(
        SIGS.group,
        SIGS.version,
        SIGS.plural,
        id="podgroup-validate",
        operations={"CREATE", "UPDATE"},
        registry=registry,
    )
    def validate_podgroup(
        *, spec: Mapping[str, Any], namespace: str | None, warnings: list[str], **_: Any
    ) -> None:
        if admission.listed.is_set():
            judged(podgroup_verdict(spec, namespace or "", admission.view), warnings)

    @kopf.on.validate(
        GROUP,
        VERSION,
        QUEUE_PLURAL,
        id="queue-validate",
        operations={"CREATE", "UPDATE"},
        registry=registry,
    )
    def validate_queue(
        *, name: str, spec: Mapping[str, Any], warnings: list[str], **_: Any
    ) -> None:
        if admission.listed.is_set():
            judged(queue_verdict(name, spec, admission.view), warnings)

    @kopf.on.mutate(
        "", "v1", "pods", id="pod-scheduler-name", operations={"CREATE"}, registry=registry
    )
    def pod_scheduler(*, spec: Mapping[str, Any], patch: kopf.Patch, **_: Any) -> None:
        name = pod_scheduler_name(spec, admission.scheduler_name)
        if name is not None:
            patch.spec["schedulerName"] = name
