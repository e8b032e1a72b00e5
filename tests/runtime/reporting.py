"""A Reporter for the runtime's unit tests."""

from __future__ import annotations

from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.reporter import Reporter


def quick_reporter(kube: KubeClient, scheduler: Scheduler) -> Reporter:
    """A Reporter that writes each event at once, through one writer."""
    return Reporter(
        kube,
        metrics=Metrics(),
        is_waiting=scheduler.is_waiting,
        event_writers=1,
        event_interval_seconds=0.0,
    )
