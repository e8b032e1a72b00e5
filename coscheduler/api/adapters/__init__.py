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

The other projects' adapters (``xk8s``, ``volcano``, ``t9k``) are named by
their module and imported when their first object is read
(:class:`~coscheduler.api.adapters.deferred.DeferredAdapter`): a cluster that
does not serve their APIs, or holds none of their objects, never imports their
models (issue #28). A new one: its ``API`` in :mod:`~coscheduler.api.adapters.apis`,
its module exporting ``ADAPTER``, and one row below.

Kubernetes' 1.35 ``Workload`` (``workload``) is not among them: it is not a
PodGroup, its gangs are keyed apart (a pod names one with ``spec.workloadRef``),
so its names never meet a PodGroup's.
"""

from __future__ import annotations

from typing import Final

from coscheduler.api.adapters import apis, native, sigs
from coscheduler.api.adapters.base import GroupAdapter, GroupApi, GroupObject, StatusAdapter
from coscheduler.api.adapters.deferred import DeferredAdapter

__all__ = ["ADAPTERS", "GroupAdapter", "GroupApi", "GroupObject", "StatusAdapter"]

ADAPTERS: Final[tuple[GroupAdapter, ...]] = (
    sigs.ADAPTER,
    DeferredAdapter(apis.XK8S, "coscheduler.api.adapters.xk8s"),
    DeferredAdapter(apis.VOLCANO, "coscheduler.api.adapters.volcano"),
    DeferredAdapter(apis.T9K, "coscheduler.api.adapters.t9k"),
    *native.ADAPTERS,
)
