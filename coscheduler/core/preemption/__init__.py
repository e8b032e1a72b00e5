"""Gang preemption: plan which running gangs to evict, whole, so a waiting gang fits.

:mod:`coscheduler.core.victims` says who may be evicted and in what units
(its names are imported from there), :mod:`.search` finds the smallest
sufficient set by simulating the planner's own attempt.
"""

from __future__ import annotations

from coscheduler.core.decision import Order, PreemptionPlan
from coscheduler.core.preemption.interface import DEFAULT_BUDGET, Attempted, PreemptionSettings
from coscheduler.core.preemption.mode import Mode
from coscheduler.core.preemption.running import RunningPriorities, running_groups
from coscheduler.core.preemption.search import Admits, Preemptor, find_plan
from coscheduler.core.preemption.tracker import Hold, Preemptions

__all__ = [
    "DEFAULT_BUDGET",
    "Admits",
    "Attempted",
    "Hold",
    "Mode",
    "Order",
    "PreemptionPlan",
    "PreemptionSettings",
    "Preemptions",
    "Preemptor",
    "RunningPriorities",
    "find_plan",
    "running_groups",
]
