"""Kubernetes' own gangs: ``Workload`` (``scheduling.k8s.io/v1alpha1``), and the resolver
of a pod's ``spec.workloadRef``.

A Workload holds several gangs, and which gang a pod joins, if any, depends
on both. :class:`WorkloadGangs` resolves a pod's reference when the pod or
its Workload arrives: a ``gang`` podGroup makes (once per replica key, for
pods of ours) a group keyed ``Workload``; a ``basic`` one makes the pod a
lone pod (the core gets it without its reference); an unknown Workload or
podGroup leaves the reference, and the pod waits for it (``GroupNotFound``).
:class:`WorkloadHandler` reads the Workloads: one that comes, goes or is
recreated makes its pods' gangs again. A gang whose last pod is gone is
forgotten (the pod handler tells :meth:`WorkloadGangs.drop`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from coscheduler.api.adapters import workload as workload_api
from coscheduler.api.pod import PodInfo
from coscheduler.api.workload_ref import WorkloadRef
from coscheduler.core.group import GroupKey
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.groups import Groups
from coscheduler.runtime.handlers.base import Complaints, NamespacedHandler, ObjectName

__all__ = ["WorkloadGangs", "WorkloadHandler"]


WorkloadName = ObjectName


class WorkloadGangs:
    """Readable Workloads; the pods naming each (as read, unresolved); each one's gangs."""

    def __init__(self, scheduler: Scheduler, groups: Groups) -> None:
        self._scheduler = scheduler
        self._groups = groups
        self.workloads: dict[WorkloadName, workload_api.Workload] = {}
        self._pods: dict[WorkloadName, dict[str, PodInfo]] = {}
        self._pod_workload: dict[str, WorkloadName] = {}
        self._gangs: dict[WorkloadName, set[GroupKey]] = {}

    def resolve(self, pod: PodInfo) -> PodInfo:
        """The pod as the core gets it: in its Workload's gang, lone (basic), or waiting."""
        ref = pod.workload
        if ref is None or pod.group is not None:
            return pod
        where = (pod.namespace, ref.workload)
        workload = self.workloads.get(where)
        if workload is None or ref.pod_group not in workload.pod_groups:
            return pod  # no policy for its key: it waits, the message naming the Workload
        gang = workload_api.gang_object(workload, ref)
        if gang is None:
            return dataclasses.replace(pod, workload=None)  # basic: each pod on its own
        key = GroupKey.of_pod(pod)
        ours = pod.scheduler_name == self._scheduler.settings.scheduler_name
        if ours and key not in self._groups.podgroups:
            self._gangs.setdefault(where, set()).add(key)
            self._groups.add_gang(key, gang)
        return pod

    def track(self, pod: PodInfo) -> None:
        """Remember the pods that name each Workload, to resolve them again when it changes."""
        self.untrack(pod.uid)
        if pod.workload is not None and pod.group is None:
            where = (pod.namespace, pod.workload.workload)
            self._pods.setdefault(where, {})[pod.uid] = pod
            self._pod_workload[pod.uid] = where

    def untrack(self, uid: str) -> None:
        where = self._pod_workload.pop(uid, None)
        pods = self._pods.get(where) if where is not None else None
        if where is not None and pods is not None:
            pods.pop(uid, None)
            if not pods:
                del self._pods[where]

    def drop(self, key: GroupKey) -> None:
        """Forget a gang (its last pod went, or its Workload changed)."""
        where = (key.namespace, WorkloadRef.from_gang_name(key.name).workload)
        gangs = self._gangs.get(where)
        if gangs is not None:
            gangs.discard(key)
            if not gangs:
                del self._gangs[where]
        self._groups.drop_gang(key)

    def ungroup(self, where: WorkloadName) -> list[PodInfo]:
        """Drop the Workload's gangs; its pods as read, to be resolved and fed again."""
        for key in list(self._gangs.get(where, ())):
            self.drop(key)
        return list(self._pods.get(where, {}).values())


class _Regroup(Protocol):
    def regroup(self, pods: Iterable[PodInfo]) -> None: ...


class WorkloadHandler(NamespacedHandler[workload_api.Workload]):
    kind = "Workload"
    api_version = workload_api.API.api_version

    def __init__(
        self,
        gangs: WorkloadGangs,
        pods: _Regroup,
        complaints: Complaints,
        *,
        namespaces: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(complaints, namespaces=namespaces)
        self._gangs = gangs
        self._pods = pods

    def read(self, raw: Mapping[str, Any]) -> workload_api.Workload:
        return workload_api.read_workload(raw)

    def take(
        self, where: WorkloadName, workload: workload_api.Workload, raw: Mapping[str, Any]
    ) -> None:
        known = self._gangs.workloads.get(where)
        self._gangs.workloads[where] = workload
        if known is None or known.uid != workload.uid or known.pod_groups != workload.pod_groups:
            # podGroups are immutable: new ones mean a new Workload.
            self._pods.regroup(self._gangs.ungroup(where))

    def known(self) -> Iterable[WorkloadName]:
        return list(self._gangs.workloads)

    def forget(self, key: WorkloadName) -> None:
        if self._gangs.workloads.pop(key, None) is not None:
            self._pods.regroup(self._gangs.ungroup(key))
