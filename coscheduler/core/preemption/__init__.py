"""Gang preemption: plan which running gangs to evict, whole, so a waiting gang fits.

:mod:`.victims` says who may be evicted and in what units, :mod:`.search`
finds the smallest sufficient set by simulating the planner's own attempt.
"""

from __future__ import annotations

from coscheduler.core.decision import Order, PreemptionPlan
from coscheduler.core.preemption.interface import DEFAULT_BUDGET, Attempted, PreemptionSettings
from coscheduler.core.preemption.mode import Mode
from coscheduler.core.preemption.running import RunningPriorities, running_groups
from coscheduler.core.preemption.search import Admits, Preemptor, find_plan
from coscheduler.core.preemption.tracker import Hold, Preemptions
from coscheduler.core.victims import (
    Cost,
    RunningGroup,
    Victim,
    VictimRule,
    lower_priority,
    plan_cost,
)

__all__ = [
    "DEFAULT_BUDGET",
    "Admits",
    "Attempted",
    "Cost",
    "Hold",
    "Mode",
    "Order",
    "PreemptionPlan",
    "PreemptionSettings",
    "Preemptions",
    "Preemptor",
    "RunningGroup",
    "RunningPriorities",
    "Victim",
    "VictimRule",
    "find_plan",
    "lower_priority",
    "plan_cost",
    "running_groups",
]
