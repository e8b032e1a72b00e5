"""The scheduling brain: pure, synchronous and deterministic.

The core takes plain data (nodes, pods, groups, cluster events) and returns
decisions (bindings, or reasons why not). It never awaits, never performs I/O
and never imports asyncio, Kopf or a Kubernetes client: that keeps it testable
by unit and property tests and usable offline by ``coscheduler simulate``.

The runtime uses :class:`Scheduler` (feed it nodes, pods and group policies;
ask :meth:`Scheduler.next_decision`; report :meth:`Scheduler.binding_failed`).
The pieces underneath are usable on their own: :class:`Snapshot`,
:func:`plan`, :class:`GroupQueue`, :class:`Statement`.
"""

# The names below are imported when first asked for, not with the package: the
# settings and the start-up path import light modules of the core (an enum, the
# preemption mode) without NumPy and the planner (issue #28).
from __future__ import annotations

from typing import TYPE_CHECKING

from coscheduler.core.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from coscheduler.core.diagnosis import Diagnosis
    from coscheduler.core.group import GroupKey, GroupPolicy
    from coscheduler.core.planner import Decision, plan
    from coscheduler.core.queue import ClusterEvent, GroupQueue, QueueSettings
    from coscheduler.core.quota import QueuePolicy, Quotas
    from coscheduler.core.scheduler import Scheduler, SchedulerSettings
    from coscheduler.core.snapshot import Snapshot
    from coscheduler.core.statement import Binding, Statement
    from coscheduler.core.status import Code, Status
    from coscheduler.core.strategy import Strategy

__all__ = [
    "Binding",
    "ClusterEvent",
    "Code",
    "Decision",
    "Diagnosis",
    "GroupKey",
    "GroupPolicy",
    "GroupQueue",
    "QueuePolicy",
    "QueueSettings",
    "Quotas",
    "Scheduler",
    "SchedulerSettings",
    "Snapshot",
    "Statement",
    "Status",
    "Strategy",
    "plan",
]

#: Where each name is defined: imported on first use (PEP 562).
_HOME = {
    "Diagnosis": "coscheduler.core.diagnosis",
    "GroupKey": "coscheduler.core.group",
    "GroupPolicy": "coscheduler.core.group",
    "Decision": "coscheduler.core.planner",
    "plan": "coscheduler.core.planner",
    "ClusterEvent": "coscheduler.core.queue",
    "GroupQueue": "coscheduler.core.queue",
    "QueueSettings": "coscheduler.core.queue",
    "QueuePolicy": "coscheduler.core.quota",
    "Quotas": "coscheduler.core.quota",
    "Scheduler": "coscheduler.core.scheduler",
    "SchedulerSettings": "coscheduler.core.scheduler",
    "Snapshot": "coscheduler.core.snapshot",
    "Binding": "coscheduler.core.statement",
    "Statement": "coscheduler.core.statement",
    "Code": "coscheduler.core.status",
    "Status": "coscheduler.core.status",
    "Strategy": "coscheduler.core.strategy",
}


__getattr__ = lazy_getattr(__name__, _HOME, globals())
