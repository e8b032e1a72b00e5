"""Queue status: what each Queue holds, lends and waits for, written back to it.

:func:`derive_queue_status` is pure: the core's numbers for the queue
(:class:`~coscheduler.core.quota.QueueUsage`) and the counts of its groups by
phase become a ``QueueStatus`` with one condition, ``Active``: True while
groups may draw from the queue, False with the reason (``QueueClosed``,
``QueueInvalid``) otherwise. :class:`QueueStatusWriter` runs it for every
Queue object after a short debounce whenever a queue or a group changed,
writes the status when it differs from what the server holds, records an
event when ``Active`` changes, and sets the per-queue metrics; then Volcano's
Queues (:mod:`~coscheduler.controller.volcano_queues`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from collections import Counter
from collections.abc import Mapping

import structlog

from coscheduler.api.labels import GROUP, VERSION
from coscheduler.api.podgroup import ConditionStatus, PodGroupCondition, PodGroupPhase
from coscheduler.api.quantity import format_resource_list
from coscheduler.api.queue import PLURAL, Queue, QueueState, QueueStatus
from coscheduler.api.reasons import Reason
from coscheduler.api.timestamps import utc_now
from coscheduler.controller.backoff import RoundBackoff
from coscheduler.controller.volcano_queues import VolcanoQueueStatusWriter
from coscheduler.controller.writer import FAILED, UNCHANGED, Written
from coscheduler.core.quota import QueueUsage
from coscheduler.runtime.errors import ApiError, NotFound
from coscheduler.runtime.events import ObjectRef
from coscheduler.runtime.kube import MERGE_PATCH, Response
from coscheduler.runtime.readmodel import Marks, ReadModel
from coscheduler.runtime.reporter import Reporter

__all__ = ["ACTIVE", "QueueStatusWriter", "derive_queue_status"]

log = structlog.get_logger(__name__)

#: The condition a Queue carries: True while groups may draw from it.
ACTIVE = "Active"
#: How long one count of the groups by queue serves the queues' handlers: they
#: are all woken by the same change of a group, within a second of each other.
COUNTS_KEPT_SECONDS = 0.5
_PENDING_PHASES = frozenset({PodGroupPhase.PENDING, PodGroupPhase.SCHEDULING})


def derive_queue_status(
    queue: Queue,
    usage: QueueUsage,
    groups: Mapping[str, int],
    now: datetime.datetime,
) -> QueueStatus:
    """The status of ``queue``; ``groups`` counts its groups as pending/admitted/running."""
    if usage.problem is not None:
        active = (ConditionStatus.FALSE, Reason.QUEUE_INVALID.value, usage.problem)
    elif queue.spec.state is QueueState.CLOSED:
        active = (
            ConditionStatus.FALSE,
            Reason.QUEUE_CLOSED.value,
            "the queue is Closed: it admits no new group; running groups keep running",
        )
    else:
        active = (ConditionStatus.TRUE, Reason.OPEN.value, "groups may draw from the queue")
    previous = next((c for c in queue.status.conditions if c.type == ACTIVE), None)
    status, reason, message = active
    changed = previous is None or previous.status != status or previous.reason != reason
    condition = PodGroupCondition(
        type=ACTIVE,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=now if changed or previous is None else previous.last_transition_time,
    )
    return QueueStatus(
        allocated=_list(usage.allocated),
        borrowed=_list(usage.borrowed),
        nominal=_list(usage.nominal),
        max=_list(usage.max),
        lending_limit=_list(usage.lending_limit),
        recent_usage=_list(_rounded(usage.recent)),
        dominant_share=f"{usage.share:.0%}",
        pending_groups=groups.get("pending", 0),
        admitted_groups=groups.get("admitted", 0),
        running_groups=groups.get("running", 0),
        conditions=[condition],
    )


def answered_version(answer: Response) -> str | None:
    """The resourceVersion of the object a write answered with."""
    body = answer.json()
    version = body.get("metadata", {}).get("resourceVersion") if isinstance(body, dict) else None
    return version if isinstance(version, str) else None


def _rounded(amounts: Mapping[str, int]) -> dict[str, int]:
    """To three significant digits: recent usage decays every second, and a status that
    changed in its last digit at every round would be written at every round."""
    return {r: int(float(f"{a:.3g}")) for r, a in amounts.items()}


def _list(amounts: Mapping[str, int]) -> dict[str, str | int] | None:
    shown = {r: a for r, a in amounts.items() if a}
    return dict(format_resource_list(shown)) if shown else None


class QueueStatusWriter:
    """Writes each Queue's status (see the module docstring)."""

    def __init__(
        self,
        *,
        view: ReadModel,
        changed: Marks[str],
        reporter: Reporter,
        debounce_seconds: float = 1.0,
        followed: bool = False,
    ) -> None:
        self._view = view
        #: Our Queues each followed by a Kopf handler (:mod:`.handlers`), which writes
        #: them through :meth:`reconcile`: the rounds then write Volcano's Queues only.
        self._followed = followed
        self._changed = changed
        self._client = reporter.client
        self._events = reporter.events
        self._metrics = reporter.metrics
        self._backoff = RoundBackoff(debounce_seconds)
        #: What was last written per queue, to skip writing it again.
        self._written: dict[str, QueueStatus] = {}
        self._metric_resources: dict[str, set[str]] = {}
        self._counts: tuple[float, dict[str, Counter[str]]] | None = None
        self.writes = 0
        self.volcano = VolcanoQueueStatusWriter(view=view, reporter=reporter)

    async def run(self, refresh_seconds: float = 15.0) -> None:
        """Rounds after each change (debounced), and every ``refresh_seconds`` regardless."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wake.wait(), timeout=refresh_seconds)
            await asyncio.sleep(self._backoff.pause)
            self._changed.take()  # every round looks at every queue
            wrote_all = await self.write_round()
            if not wrote_all:
                self._changed.mark("")
            self._backoff.round_done(failed=not wrote_all)

    def group_counts(self) -> dict[str, Counter[str]]:
        """Per queue, its PodGroups counted as pending, admitted or running."""
        counts: dict[str, Counter[str]] = {}
        for group in self._view.groups():
            phase = group.status.phase
            if phase in _PENDING_PHASES:
                bucket = "pending"
            elif phase is PodGroupPhase.SCHEDULED:
                bucket = "admitted"
            elif phase is PodGroupPhase.RUNNING:
                bucket = "running"
            else:
                continue
            queue = counts.get(group.spec.queue)
            if queue is None:  # not setdefault: it would make a Counter per group
                queue = counts[group.spec.queue] = Counter()
            queue[bucket] += 1
        return counts

    async def write_round(self) -> bool:
        """One pass over the queues; False when a write failed and waits for the next."""
        counts = self.group_counts()
        now = utc_now(whole_seconds=True)
        written = (
            []
            if self._followed
            else [
                await self._write(queue, counts.get(name, Counter()), now)
                for name, queue in sorted(self._view.queues().items())
            ]
        )
        wrote_all = all(outcome.ok for outcome in written)
        if not await self.volcano.write_round():
            wrote_all = False
        return wrote_all

    async def reconcile(self, name: str) -> Written:
        """Derive and write one Queue's status now (its Kopf handler's step)."""
        queue = self._view.queues().get(name)
        if queue is None:
            return UNCHANGED
        counts = self._recent_counts()
        return await self._write(queue, counts.get(name, Counter()), utc_now(whole_seconds=True))

    def _recent_counts(self) -> dict[str, Counter[str]]:
        """:meth:`group_counts`, counted once for all the queues woken by one change."""
        now = asyncio.get_running_loop().time()
        if self._counts is None or now - self._counts[0] > COUNTS_KEPT_SECONDS:
            self._counts = (now, self.group_counts())
        return self._counts[1]

    async def _write(self, queue: Queue, groups: Counter[str], now: datetime.datetime) -> Written:
        name = queue.name
        usage = self._view.queue_usage(name)
        self._report_metrics(name, usage, groups)
        status = derive_queue_status(queue, usage, groups, now)
        body = status.model_dump(by_alias=True, exclude_none=True, mode="json")
        # Compared but for an unchanged condition's transition time: a round in the next
        # second, before our write's echo reaches the read model, would move it and write.
        last = self._written.get(name)
        if (last is not None and _same(last, status)) or _same(queue.status, status):
            return UNCHANGED
        try:
            answer = await self._client.send(
                "PATCH",
                f"/apis/{GROUP}/{VERSION}/{PLURAL}/{name}/status",
                body={"status": body},
                content_type=MERGE_PATCH,
            )
        except NotFound:
            return UNCHANGED
        except ApiError as error:
            log.warning("queue status not written", queue=name, error=str(error))
            return FAILED if error.retryable else UNCHANGED
        self.writes += 1
        self._written[name] = status
        self._record_transition(queue, status)
        return Written(ok=True, version=answered_version(answer))

    def _record_transition(self, queue: Queue, status: QueueStatus) -> None:
        before = next((c for c in queue.status.conditions if c.type == ACTIVE), None)
        after = status.conditions[0]
        if before is not None and (before.status, before.reason) == (after.status, after.reason):
            return
        ref = ObjectRef(f"{GROUP}/{VERSION}", "Queue", "", queue.name, queue.uid or "")
        if after.status is ConditionStatus.TRUE:
            self._events.record(
                ref, "Normal", Reason.QUEUE_OPEN, "the queue is Open: groups may draw from it"
            )
        else:
            self._events.record(ref, "Warning", after.reason or "", after.message or "")

    def _report_metrics(self, name: str, usage: QueueUsage, groups: Mapping[str, int]) -> None:
        # A resource no longer allocated reads 0, not its last amount.
        seen = self._metric_resources.setdefault(name, set())
        seen |= set(usage.allocated)
        for resource in seen:
            amount = usage.allocated.get(resource, 0)
            self._metrics.queue_allocated.labels(queue=name, resource=resource).set(
                _in_base_units(resource, amount)
            )
        for resource, amount in usage.nominal.items():
            self._metrics.queue_nominal.labels(queue=name, resource=resource).set(
                _in_base_units(resource, amount)
            )
        self._metrics.queue_share.labels(queue=name).set(usage.share)
        self._metrics.queue_pending_groups.labels(queue=name).set(groups.get("pending", 0))


def _same(old: QueueStatus, new: QueueStatus) -> bool:
    """Equal but for the transition time of an unchanged condition."""
    return old.model_dump(exclude={"conditions"}) == new.model_dump(exclude={"conditions"}) and [
        (c.type, c.status, c.reason, c.message) for c in old.conditions
    ] == [(c.type, c.status, c.reason, c.message) for c in new.conditions]


def _in_base_units(resource: str, amount: int) -> float:
    """The scheduler's integers (millicores for cpu) in Prometheus' base units."""
    return amount / 1000 if resource == "cpu" else float(amount)
