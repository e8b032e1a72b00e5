"""PodDisruptionBudgets (``policy/v1``), read while preemption is on: the core judges
each plan against them (the preempter reads them again before evicting)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from coscheduler.api.disruption import DisruptionBudget, DisruptionBudgetParseError
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import Complaints, InvalidObject, meta

__all__ = ["BudgetHandler", "read_budget"]

log = structlog.get_logger(__name__)


def read_budget(raw: Mapping[str, Any], complaints: Complaints) -> DisruptionBudget | None:
    """A budget, or None (and a complaint) when it cannot be read."""
    try:
        return DisruptionBudget.from_object(raw)
    except DisruptionBudgetParseError as error:
        log.warning("PodDisruptionBudget skipped", error=str(error))
        complaints.invalid(InvalidObject.of("PodDisruptionBudget", raw, error))
        return None


class BudgetHandler:
    def __init__(self, scheduler: Scheduler, complaints: Complaints) -> None:
        self._scheduler = scheduler
        self._complaints = complaints

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None:
        read = (read_budget(raw, self._complaints) for raw in objects)
        self._scheduler.replace_budgets(budget for budget in read if budget is not None)

    def upsert(self, raw: Mapping[str, Any]) -> None:
        budget = read_budget(raw, self._complaints)
        if budget is not None:
            self._scheduler.upsert_budget(budget)

    def remove(self, raw: Mapping[str, Any]) -> None:
        fields = meta(raw)
        self._scheduler.remove_budget(f"{fields.get('namespace')}/{fields.get('name')}")
