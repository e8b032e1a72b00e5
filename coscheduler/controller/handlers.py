"""The controller's Kopf handlers: each PodGroup of ours and each Queue followed by one.

Kopf reconciles an object when the object changes; a PodGroup's status
changes with its pods (which Kopf never watches: the scheduler's handlers
do) and with the scheduling loop's verdicts. So each handler is *resident*:
``@kopf.on.event`` calls it with the object's first event, and it stays,
woken by the read model's mark of that one object
(:meth:`~coscheduler.runtime.readmodel.Marks.follow`), writing the status
derived from the read model (:meth:`StatusWriter.reconcile`,
:meth:`QueueStatusWriter.reconcile`). While it runs, Kopf queues the
object's later events behind it, so there is one follower per object; and
so that the queue does not grow by a body per write, a follower returns
once it has written (the event of its own write, a newer version than the
one it was called with, calls it again) or once the object is gone.

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
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

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
from coscheduler.controller.writer import StatusWriter, Written
from coscheduler.core.group import GroupKey
from coscheduler.runtime.readmodel import Marks, ReadModel

__all__ = ["ALL_QUEUES", "Admission", "Follower", "group_follower", "handlers", "queue_follower"]

#: How long a follower waits for the read model to hold an object Kopf has just
#: seen (the handlers' watch and Kopf's are two streams): an object that never
#: comes (unreadable, or outside the namespaces read) is left until it changes.
ARRIVAL_GRACE_SECONDS: Final = 10.0

_Item = TypeVar("_Item", bound=Hashable)

#: The Queues' mark that means "every queue" (any group's change).
ALL_QUEUES: Final = ""


class Follower(Generic[_Item]):
    """Follows objects of one kind, one call of :meth:`follow` per object."""

    def __init__(
        self,
        *,
        marks: Marks[_Item],
        present: Callable[[_Item], bool],
        reconcile: Callable[[_Item], Awaitable[Written]],
        writing: asyncio.Event,
        debounce_seconds: float,
        refresh_seconds: float | None = None,
        also: tuple[_Item, ...] = (),
    ) -> None:
        self._marks = marks
        #: Whether the read model holds the object as this handler's kind.
        self._present = present
        self._reconcile = reconcile
        self._writing = writing
        self._debounce = debounce_seconds
        #: Looked at again this often even unmarked (a queue's decaying usage).
        self._refresh = refresh_seconds
        #: Marks that concern every object (a Queue's: any group's change).
        self._also = also

    async def follow(self, item: _Item, version: str | None) -> None:
        """Write the object's status whenever it may have changed, until it is gone or
        written (``version``: the object's, in the event Kopf called with)."""
        await self._writing.wait()
        woken = asyncio.Event()
        woken.set()  # the first look at once: marks made before now were not heard
        followed = (item, *self._also)
        for mark in followed:
            self._marks.follow(mark, woken)
        backoff = RoundBackoff(self._debounce)
        seen = False
        try:
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), timeout=self._refresh)
                # A gang's dozens of pod events within the pause make one write.
                await asyncio.sleep(backoff.pause)
                woken.clear()
                if not self._present(item):
                    if seen or not await _arrives(woken):
                        return  # gone (its handler is called again if it comes back)
                    continue
                seen = True
                written = await self._reconcile(item)
                if _echoed(written, version):
                    return
                backoff.round_done(failed=not written.ok)
                if not written.ok:
                    woken.set()
        finally:
            for mark in followed:
                self._marks.unfollow(mark, woken)


def group_follower(
    view: ReadModel,
    marks: Marks[GroupKey],
    writer: StatusWriter,
    writing: asyncio.Event,
    debounce_seconds: float = 0.25,
) -> Follower[GroupKey]:
    """Our API's PodGroups (a name another API's object holds now is not this handler's)."""

    def present(key: GroupKey) -> bool:
        group = view.group(key)
        return group is not None and group.api == SIGS

    return Follower(
        marks=marks,
        present=present,
        reconcile=writer.reconcile,
        writing=writing,
        debounce_seconds=debounce_seconds,
    )


def queue_follower(
    view: ReadModel,
    marks: Marks[str],
    writer: QueueStatusWriter,
    writing: asyncio.Event,
    debounce_seconds: float = 1.0,
    refresh_seconds: float = 15.0,
) -> Follower[str]:
    """Queues, woken by any group's change too, and every ``refresh_seconds``."""
    return Follower(
        marks=marks,
        present=lambda name: name in view.queues(),
        reconcile=writer.reconcile,
        writing=writing,
        debounce_seconds=debounce_seconds,
        refresh_seconds=refresh_seconds,
        also=(ALL_QUEUES,),
    )


def _echoed(written: Written, version: str | None) -> bool:
    """Whether Kopf calls the handler again for what was just written: a version other
    than the one it called with is an event to come (or queued already)."""
    return written.version is not None and written.version != version


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
    followers: tuple[Follower[GroupKey], Follower[str]] | None = None,
    login: Callable[..., Awaitable[kopf.ConnectionInfo | None]] | None = None,
) -> kopf.OperatorRegistry:
    """Our own registry (never Kopf's global one): admission's handlers, the followers'
    (on the leader only: a standby's would hold every object's events, unwritten), by
    DNS-safe ids (the webhooks' paths), and ``login`` (:mod:`.login`): a plain registry
    has no login of its own."""
    registry = kopf.OperatorRegistry()
    if login is not None:
        kopf.on.login(id="login", registry=registry)(login)
    if admission is not None:  # only with a webhook server: Kopf refuses them without
        _admission(registry, admission)
    if followers is None:
        return registry
    groups, queues = followers

    @kopf.on.event(SIGS.group, SIGS.version, SIGS.plural, id="podgroup-status", registry=registry)
    async def podgroup_status(
        *, type: str | None, name: str, namespace: str | None, meta: kopf.Meta, **_: Any
    ) -> None:
        if type != "DELETED" and namespace is not None:
            await groups.follow(GroupKey(namespace, name), meta.get("resourceVersion"))

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
