"""Kubernetes' own Workloads of 1.36 and later (``scheduling.k8s.io`` v1beta1 / v1alpha2).

Their gangs are PodGroups (read by the PodGroup handler); of a Workload only
its queue label and its controller are read (:mod:`coscheduler.api.native_workload`)
and kept in :class:`~coscheduler.runtime.groups.Groups`, which gives them to
the native PodGroups that name the Workload.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from coscheduler.api.native_workload import NativeWorkload, read_native_workload
from coscheduler.runtime.groups import Groups
from coscheduler.runtime.handlers.base import Complaints, NamespacedHandler
from coscheduler.runtime.handlers.base import ObjectName as WorkloadName

__all__ = ["NativeWorkloadHandler"]


class NativeWorkloadHandler(NamespacedHandler[NativeWorkload]):
    kind = "Workload"

    def __init__(
        self, groups: Groups, complaints: Complaints, *, namespaces: frozenset[str] = frozenset()
    ) -> None:
        super().__init__(complaints, namespaces=namespaces)
        self._groups = groups
        self._known: set[WorkloadName] = set()

    def read(self, raw: Mapping[str, Any]) -> NativeWorkload:
        return read_native_workload(raw)

    def take(self, where: WorkloadName, read: NativeWorkload, raw: Mapping[str, Any]) -> None:
        self._known.add(where)
        self._groups.set_workload(*where, read)

    def known(self) -> Iterable[WorkloadName]:
        return list(self._known)

    def forget(self, key: WorkloadName) -> None:
        self._known.discard(key)
        self._groups.set_workload(*key, None)
