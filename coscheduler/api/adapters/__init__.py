"""The PodGroup APIs coscheduler reads, each behind an adapter to the one group model.

``ADAPTERS`` is in order of precedence: when a namespace holds a PodGroup of
the same name in two APIs, the first one's is the group (ours, so that a
group a person wrote for coscheduler is never overridden by one an operator
generated), and the other is left alone, its status unwritten.

Kubernetes' native ``Workload`` (``workload``) is not among them: it is not a
PodGroup, its gangs are keyed apart (a pod names one with ``spec.workloadRef``),
so its names never meet a PodGroup's.
"""

from __future__ import annotations

from typing import Final

from coscheduler.api.adapters import sigs, t9k, volcano, xk8s
from coscheduler.api.adapters.base import GroupAdapter, GroupApi, GroupObject, StatusAdapter

__all__ = ["ADAPTERS", "GroupAdapter", "GroupApi", "GroupObject", "StatusAdapter"]

ADAPTERS: Final[tuple[GroupAdapter, ...]] = (
    sigs.ADAPTER,
    xk8s.ADAPTER,
    volcano.ADAPTER,
    t9k.ADAPTER,
)
