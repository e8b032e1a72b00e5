"""Volcano's Queues (``scheduling.volcano.sh/v1beta1``), read as ours when discovery lists
them (:mod:`coscheduler.api.adapters.volcano_queue` says how).

A name held by a Queue of ours and by one of Volcano's is ours: Volcano's is
kept aside (``shadowed``, which the controller tells on it with an event) and
stands again if ours goes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog

from coscheduler.api.adapters.volcano_queue import API_VERSION, ROOT, VolcanoQueue
from coscheduler.api.pod_topology import LabelSelector
from coscheduler.api.quantity import QuantityError
from coscheduler.core.quota import QueuePolicy
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import Complaints, KeyedHandler, name_of
from coscheduler.runtime.handlers.queues import QueueHandler, skipped

__all__ = ["VolcanoQueueHandler", "volcano_policy"]

log = structlog.get_logger(__name__)

#: Every namespace may use a Volcano queue.
_EVERY_NAMESPACE = LabelSelector(())


class VolcanoQueueHandler(KeyedHandler[str]):
    """Each Volcano Queue as a :class:`QueuePolicy`, unless a Queue of ours has its name."""

    def __init__(
        self,
        scheduler: Scheduler,
        complaints: Complaints,
        ours: QueueHandler,
        changed: Callable[[str], None],
    ) -> None:
        self._scheduler = scheduler
        self._complaints = complaints
        self._ours = ours
        self._changed = changed
        #: Volcano Queue objects as last read, by name, with the policy each stands for.
        self.objects: dict[str, tuple[VolcanoQueue, QueuePolicy]] = {}
        ours.fallback = self.policy

    def policy(self, name: str) -> QueuePolicy | None:
        held = self.objects.get(name)
        return None if held is None else held[1]

    def shadowed(self, name: str) -> bool:
        """Whether a Queue of ours holds the name (ours is the one read)."""
        return name in self._ours.objects

    def upsert(self, raw: Mapping[str, Any]) -> str | None:
        if name_of(raw) == ROOT:
            return None  # the top of Volcano's tree: our forest's top, not a queue
        try:
            queue = VolcanoQueue.model_validate(raw)
            policy = volcano_policy(queue)
        except ValueError as error:  # a ValidationError among them
            skipped(self._complaints, raw, error, API_VERSION)
            return None
        self.objects[queue.name] = (queue, policy)
        if not self.shadowed(queue.name):
            self._scheduler.upsert_queue(policy)
        self._changed(queue.name)
        return queue.name

    def known(self) -> Iterable[str]:
        return self.objects

    def forget(self, key: str) -> None:
        if self.objects.pop(key, None) is not None and not self.shadowed(key):
            self._scheduler.remove_queue(key)
        self._changed(key)

    def key_of(self, raw: Mapping[str, Any]) -> str | None:
        return name_of(raw)


def volcano_policy(queue: VolcanoQueue) -> QueuePolicy:
    """A Volcano Queue as the core's plain policy; raises ``ValueError`` (a
    :class:`QuantityError` among them) naming the field that is wrong."""
    try:
        terms = queue.terms()
    except QuantityError as error:
        raise ValueError(str(error)) from error
    return QueuePolicy(
        name=queue.name,
        nominal=terms.nominal,
        max=terms.max,
        lending_limit=terms.lending_limit,
        weight=terms.weight,
        open=terms.open,
        parent=terms.parent,
        selector=_EVERY_NAMESPACE,
        reclaimable=terms.reclaimable,
    )
