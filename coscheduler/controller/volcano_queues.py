"""Volcano Queue status, in Volcano's words: its state and its PodGroups counted by phase.

Run by :class:`~coscheduler.controller.queues.QueueStatusWriter` in each of
its rounds. Each Volcano Queue gets ``state`` (a Closing queue none of whose
groups runs is written Closed) and the groups naming it counted by the phase
Volcano's status of each would say (:func:`~coscheduler.api.adapters.volcano.written_phase`),
with ``allocated``. The state is also what a person sets to close the queue,
so the write is a JSON patch that first tests the ``resourceVersion`` read:
a state changed meanwhile is never overwritten, and the next round writes.

A Volcano Queue whose name a Queue of ours holds is not read: a Warning event
(``QueueShadowed``) says so, once, and its status is left alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import structlog

from coscheduler.api.adapters.base import GroupObject
from coscheduler.api.adapters.volcano import written_phase
from coscheduler.api.adapters.volcano_queue import API_VERSION, COLLECTION_PATH, status_body
from coscheduler.api.reasons import Reason
from coscheduler.runtime.errors import ApiError, NotFound
from coscheduler.runtime.events import ObjectRef
from coscheduler.runtime.readmodel import ReadModel
from coscheduler.runtime.reporter import Reporter

__all__ = ["VolcanoQueueStatusWriter"]

log = structlog.get_logger(__name__)

JSON_PATCH = "application/json-patch+json"


class VolcanoQueueStatusWriter:
    """Writes each Volcano Queue's status (see the module docstring)."""

    def __init__(self, *, view: ReadModel, reporter: Reporter) -> None:
        self._view = view
        self._client = reporter.client
        self._events = reporter.events
        #: What was last written per queue, to skip writing it again.
        self._written: dict[str, dict[str, object]] = {}
        #: Names told to be shadowed by ours (told again if that ends and comes back).
        self._told: set[str] = set()

    async def write_round(self) -> bool:
        """One pass over Volcano's queues; False when a write failed and waits for a retry."""
        theirs = self._view.volcano_queues()
        if not theirs:
            return True
        ours = self._view.queues()
        phases = _phases(self._view.groups())
        wrote_all = True
        self._told &= set(theirs) & set(ours)
        for name, queue in sorted(theirs.items()):
            if name in ours:
                if name not in self._told:
                    self._told.add(name)
                    ref = ObjectRef(API_VERSION, "Queue", "", name, queue.uid)
                    self._events.record(
                        ref,
                        "Warning",
                        Reason.QUEUE_SHADOWED,
                        f"a Queue of scheduling.sigs.k8s.io is also named {name}: that one is "
                        "read and this one is not; rename one of them",
                    )
                continue
            allocated = self._view.queue_usage(name).allocated
            body = status_body(queue, phases.get(name, Counter()), allocated)
            if self._written.get(name) == body or queue.status_matches(body):
                continue
            version = queue.resource_version
            patch = [
                {"op": "test", "path": "/metadata/resourceVersion", "value": version},
                {"op": "add", "path": "/status", "value": body},
            ]
            try:
                await self._client.send(
                    "PATCH", f"{COLLECTION_PATH}/{name}/status", body=patch, content_type=JSON_PATCH
                )
            except NotFound:
                continue
            except ApiError as error:
                # A failed test (the queue changed since it was read) answers 422: its
                # watch event brings the new one and another round.
                log.info("Volcano queue status not written", queue=name, error=str(error))
                wrote_all = wrote_all and not error.retryable
                continue
            self._written[name] = body
        return wrote_all


def _phases(groups: Iterable[GroupObject]) -> dict[str, Counter[str]]:
    """Per queue, its groups counted by the phase Volcano's status of each says."""
    counts: dict[str, Counter[str]] = {}
    for group in groups:
        queue = counts.get(group.spec.queue)
        if queue is None:
            queue = counts[group.spec.queue] = Counter()
        queue[written_phase(group.status).value] += 1
    return counts
