"""Queues (``scheduling.sigs.k8s.io/v1alpha1``, cluster-scoped): the core's quota policies,
and the objects as read, from which the controller writes each Queue's status."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog
from pydantic import ValidationError

from coscheduler.api import validation
from coscheduler.api.labels import GROUP, VERSION
from coscheduler.api.pod_topology import LabelRequirement, LabelSelector
from coscheduler.api.quantity import QuantityError
from coscheduler.api.queue import Queue, WireSelector
from coscheduler.core.quota import QueuePolicy
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import Complaints, InvalidObject, KeyedHandler, name_of

__all__ = ["QueueHandler", "queue_policy", "skipped"]

log = structlog.get_logger(__name__)


class QueueHandler(KeyedHandler[str]):
    """Each Queue as a :class:`QueuePolicy` for the core; ``objects`` as last read."""

    def __init__(
        self, scheduler: Scheduler, complaints: Complaints, changed: Callable[[str], None]
    ) -> None:
        self._scheduler = scheduler
        self._complaints = complaints
        self._changed = changed
        #: Queue objects as last read, by name (their status is written from here).
        self.objects: dict[str, Queue] = {}
        #: The policy of another API's queue of that name, which stands once ours goes
        #: (:mod:`~coscheduler.runtime.handlers.volcano_queues`).
        self.fallback: Callable[[str], QueuePolicy | None] = lambda _name: None

    def upsert(self, raw: Mapping[str, Any]) -> str | None:
        try:
            queue = Queue.model_validate(raw)
            policy = queue_policy(queue)
        except (ValidationError, QuantityError) as error:
            # The CRD's schema should have refused it; the previous spec, if any, stays.
            skipped(self._complaints, raw, error, f"{GROUP}/{VERSION}")
            return None
        self.objects[queue.name] = queue
        self._scheduler.upsert_queue(policy)
        self._changed(queue.name)
        return queue.name

    def known(self) -> Iterable[str]:
        return self.objects

    def forget(self, key: str) -> None:
        self.objects.pop(key, None)
        other = self.fallback(key)
        if other is None:
            self._scheduler.remove_queue(key)
        else:
            self._scheduler.upsert_queue(other)
        self._changed(key)

    def key_of(self, raw: Mapping[str, Any]) -> str | None:
        return name_of(raw)


def skipped(
    complaints: Complaints, raw: Mapping[str, Any], error: ValueError, api_version: str
) -> None:
    """Tell of a queue that could not be read (of either API), in a person's words."""
    message = (
        "; ".join(validation.problems(error, with_input=False))
        if isinstance(error, ValidationError)
        else str(error)
    )
    log.warning("Queue skipped", queue=str(name_of(raw)), api=api_version, error=message)
    complaints.invalid(InvalidObject.of("Queue", raw, ValueError(message), api_version=api_version))


def queue_policy(queue: Queue) -> QueuePolicy:
    """A Queue object as the core's plain policy."""
    spec = queue.spec
    return QueuePolicy(
        name=queue.name,
        nominal=dict(spec.nominal_amounts()),
        max=dict(spec.max_amounts()),
        lending_limit=dict(spec.lending_limit_amounts()),
        weight=spec.weight,
        open=spec.state == "Open",
        parent=spec.parent,
        namespaces=frozenset(spec.namespaces or ()),
        selector=None if spec.namespace_selector is None else _selector(spec.namespace_selector),
    )


def _selector(wire: WireSelector) -> LabelSelector:
    requirements = [
        LabelRequirement(key, "In", frozenset([value]))
        for key, value in sorted((wire.match_labels or {}).items())
    ]
    requirements += [
        LabelRequirement(item.key, item.operator, frozenset(item.values or ()))
        for item in wire.match_expressions or ()
    ]
    return LabelSelector(tuple(requirements))
