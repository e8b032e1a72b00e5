"""How the core decides: the settings the scheduler is built with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from coscheduler.api.labels import DEFAULT_SCHEDULER_NAME
from coscheduler.core.preemption import Mode, PreemptionSettings
from coscheduler.core.queue import QueueSettings
from coscheduler.core.strategy import Strategy

__all__ = ["SchedulerSettings"]


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    """How the core decides."""

    #: The ``spec.schedulerName`` whose pods we place.
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    #: How nodes are ranked.
    strategy: Strategy = Strategy.MOST_ALLOCATED
    #: Per resource scoring weights (default 1 for every requested resource).
    weights: Mapping[str, float] = field(default_factory=dict)
    #: Queue timings.
    queue: QueueSettings = field(default_factory=QueueSettings)
    #: Half-life of a queue's recent usage, which counts beside its usage when queues are
    #: ordered (:mod:`~coscheduler.core.recent_usage`); 0: off, the past is not looked at.
    usage_half_life_seconds: float = 0.0
    #: Place pods that name a missing PodGroup as gangs of one instead of waiting.
    lone_when_group_missing: bool = False
    #: Gang preemption (:mod:`~coscheduler.core.preemption`); off unless asked.
    preemption: PreemptionSettings = field(
        default_factory=lambda: PreemptionSettings(mode=Mode.OFF)
    )
