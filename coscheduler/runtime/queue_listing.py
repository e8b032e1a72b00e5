"""The pending groups in line, as ``/debug/queue`` serves them (read-only).

Rows come from the core's positions (:mod:`~coscheduler.core.positions`),
exact and current, in cluster order; the filters choose rows and never
renumber them, so a group's numbers read the same in every view. Every kind
is listed: a lone pod, Kubernetes' own PodGroups and other projects'
PodGroups whose status has no field for a position.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coscheduler.core.group import GroupKey
from coscheduler.core.scheduler_reads import SchedulerReads
from coscheduler.core.status import Status

__all__ = ["QueueListing"]


class QueueListing:
    """The rows of ``/debug/queue`` from the scheduler's reads and the loop's verdicts, while
    ``leading`` says this replica decides (a standby's line is nobody's)."""

    def __init__(
        self,
        reads: SchedulerReads,
        verdict: Callable[[GroupKey], Status | None],
        *,
        leading: Callable[[], bool] = lambda: True,
    ) -> None:
        self._reads = reads
        self._verdict = verdict
        self._leading = leading

    def rows(self, *, namespace: str | None = None, queue: str | None = None) -> list[Any] | None:
        """The rows in cluster order; None while this replica does not lead."""
        if not self._leading():
            return None
        placed = self._reads.queue_positions()
        rows: list[Any] = []
        for key, position in sorted(placed.items(), key=lambda item: item[1].in_cluster):
            if namespace is not None and key.namespace != namespace:
                continue
            if queue is not None and position.queue != queue:
                continue
            verdict = self._verdict(key)
            rows.append(
                {
                    "namespace": key.namespace,
                    "name": key.name,
                    "kind": key.kind,
                    "queue": position.queue,
                    "queuePosition": position.in_queue,
                    "clusterPosition": position.in_cluster,
                    "priority": position.priority,
                    "state": self._reads.queue_pool(key),
                    "reason": verdict.reason.value if verdict is not None else None,
                    "message": verdict.message if verdict is not None else None,
                }
            )
        return rows
