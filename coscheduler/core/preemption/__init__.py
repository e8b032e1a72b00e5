"""Gang preemption: plan which running gangs to evict, whole, so a waiting gang fits.

:mod:`.victims` says who may be evicted and in what units, :mod:`.search`
finds the smallest sufficient set by simulating the planner's own attempt.
"""

# Imported when first asked for, as in coscheduler/core/__init__.py (issue #28).
from __future__ import annotations

from typing import TYPE_CHECKING

from coscheduler.core.lazy_exports import lazy_getattr

if TYPE_CHECKING:
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

#: Where each name is defined: imported on first use (PEP 562).
_HOME = {
    "Order": "coscheduler.core.decision",
    "PreemptionPlan": "coscheduler.core.decision",
    "Attempted": "coscheduler.core.preemption.interface",
    "Mode": "coscheduler.core.preemption.mode",
    "PreemptionSettings": "coscheduler.core.preemption.interface",
    "RunningPriorities": "coscheduler.core.preemption.running",
    "running_groups": "coscheduler.core.preemption.running",
    "DEFAULT_BUDGET": "coscheduler.core.preemption.interface",
    "Admits": "coscheduler.core.preemption.search",
    "Preemptor": "coscheduler.core.preemption.search",
    "find_plan": "coscheduler.core.preemption.search",
    "Hold": "coscheduler.core.preemption.tracker",
    "Preemptions": "coscheduler.core.preemption.tracker",
    "Cost": "coscheduler.core.victims",
    "RunningGroup": "coscheduler.core.victims",
    "Victim": "coscheduler.core.victims",
    "VictimRule": "coscheduler.core.victims",
    "lower_priority": "coscheduler.core.victims",
    "plan_cost": "coscheduler.core.victims",
}


__getattr__ = lazy_getattr(__name__, _HOME, globals())
