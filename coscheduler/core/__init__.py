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

from __future__ import annotations

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
