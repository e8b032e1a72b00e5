"""The PodGroup APIs coscheduler reads, each behind an adapter to the one group model.

``ADAPTERS`` is in order of precedence: when a namespace holds a PodGroup of
the same name in two APIs, the first one's is the group (ours, so that a
group a person wrote for coscheduler is never overridden by one an operator
generated), and the other is left alone, its status unwritten.

Kubernetes' own PodGroup (``native``, one adapter per version, newest first;
discovery reads only the newest served) comes last: its groups are keyed
apart (a pod names one by ``spec.schedulingGroup``, never by label), so its
names never meet ours, scheduler-plugins', Volcano's (``volcano``) or T9k's
(``t9k``), which come before it in that order.

Kubernetes' 1.35 ``Workload`` (``workload``) is not among them: it is not a
PodGroup, its gangs are keyed apart (a pod names one with ``spec.workloadRef``),
so its names never meet a PodGroup's.
"""

from __future__ import annotations

from typing import Final

from coscheduler.api.adapters import native, sigs, t9k, volcano, xk8s
from coscheduler.api.adapters.base import GroupAdapter, GroupApi, GroupObject, StatusAdapter

__all__ = ["ADAPTERS", "GroupAdapter", "GroupApi", "GroupObject", "StatusAdapter"]

ADAPTERS: Final[tuple[GroupAdapter, ...]] = (
    sigs.ADAPTER,
    xk8s.ADAPTER,
    volcano.ADAPTER,
    t9k.ADAPTER,
    *native.ADAPTERS,
)
