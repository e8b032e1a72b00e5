"""PodDisruptionBudgets (``policy/v1``), read while preemption is on: the core judges
each plan against them (the preempter reads them again before evicting)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from coscheduler.api.disruption import DisruptionBudget, DisruptionBudgetParseError
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.informers.base import Complaints, InvalidObject, meta

__all__ = ["BudgetInformer", "read_budget"]

log = structlog.get_logger(__name__)


def read_budget(raw: Mapping[str, Any], complaints: Complaints) -> DisruptionBudget | None:
    """A budget, or None (and a complaint) when it cannot be read."""
    try:
        return DisruptionBudget.from_object(raw)
    except DisruptionBudgetParseError as error:
        log.warning("PodDisruptionBudget skipped", error=str(error))
        complaints.invalid(InvalidObject.of("PodDisruptionBudget", raw, error))
        return None


class BudgetInformer:
    def __init__(self, scheduler: Scheduler, complaints: Complaints) -> None:
        self._preemptions = scheduler.preemptions
        self._complaints = complaints

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None:
        self._preemptions.budgets.clear()
        for raw in objects:
            self.upsert(raw)

    def upsert(self, raw: Mapping[str, Any]) -> None:
        budget = read_budget(raw, self._complaints)
        if budget is not None:
            self._preemptions.upsert_budget(budget)

    def remove(self, raw: Mapping[str, Any]) -> None:
        fields = meta(raw)
        self._preemptions.remove_budget(f"{fields.get('namespace')}/{fields.get('name')}")
