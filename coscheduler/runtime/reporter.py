"""One reporter for the whole process: events, pod conditions and metrics.

The handlers, the scheduling loop, the preempter and the controller's
writers all say what happened through it, instead of each taking the same
event recorder, condition writer and metrics. Reporting has its own client
(its own rate limit, so it never delays a binding), and its writers stand
back while bindings are in flight (the loop's ``binds_idle``, given when they start).

It is also where an object that cannot be read is told
(:meth:`Reporter.invalid`): a Warning event quoting what is wrong and, for a
pod of ours that waits, its ``PodScheduled`` condition, which outlives the
event (events expire after an hour).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from coscheduler.api.reasons import Reason
from coscheduler.runtime.events import EventRecorder, ObjectRef
from coscheduler.runtime.handlers.base import InvalidObject
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.podstatus import PodConditionWriter

__all__ = ["Reporter"]


class Reporter:
    """Events, pod conditions, metrics (see the module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        metrics: Metrics,
        is_waiting: Callable[[str], bool],
        event_interval_seconds: float = 30.0,
        event_writers: int = 4,
    ) -> None:
        self.client = client
        self.metrics = metrics
        self._is_waiting = is_waiting
        #: The unreadable pods of ours that wait (see ``InvalidObject.waiting``).
        self._unreadable_waiting: set[str] = set()
        self.events = EventRecorder(
            client,
            interval_seconds=event_interval_seconds,
            writers=event_writers,
            on_drop=metrics.events_dropped.inc,
        )
        self.pod_conditions = PodConditionWriter(client, still_pending=self.still_pending)

    def still_pending(self, uid: str) -> bool:
        """A pod the core waits to place, or an unreadable one of ours that waits."""
        return self._is_waiting(uid) or uid in self._unreadable_waiting

    def invalid(self, obj: InvalidObject) -> None:
        """An object that cannot be read gets a Warning event quoting what is wrong."""
        reason = Reason.FAILED_SCHEDULING if obj.kind == "Pod" else Reason.INVALID_OBJECT
        message = f"cannot be read: {obj.message}"
        self.events.record(_ref_of(obj), "Warning", reason, message)
        if obj.waiting:
            self.pod_conditions.explain(
                obj.uid, obj.namespace, obj.name, Reason.INVALID_OBJECT, message
            )

    def waiting(self, uid: str, waits: bool) -> None:
        """Whether an unreadable pod is ours and waits (False: readable, or gone)."""
        if waits:
            self._unreadable_waiting.add(uid)
        else:
            self._unreadable_waiting.discard(uid)

    def unreadable_waiting(self, uid: str) -> bool:
        return uid in self._unreadable_waiting

    async def run_events(self, binds_idle: asyncio.Event | None = None) -> None:
        await self.events.run(binds_idle)

    async def run_pod_conditions(self, binds_idle: asyncio.Event | None = None) -> None:
        await self.pod_conditions.run(binds_idle)


def _ref_of(obj: InvalidObject) -> ObjectRef:
    """Where an Event about an unreadable object goes (a Node's lands in ``default``)."""
    api_version = obj.api_version or "v1"
    return ObjectRef(api_version, obj.kind, obj.namespace or "default", obj.name, obj.uid)
