"""Kueue's Workloads (``kueue.x-k8s.io/v1beta2``), and the resolver of the pods Kueue admits.

A pod is Kueue's when Kueue marked it: its ``kueue.x-k8s.io/workload`` annotation names
the Workload (on every admitted pod while Kueue's TopologyAwareScheduling feature is on, as
by default), or its ``kueue.x-k8s.io/pod-group-name`` label (plain pods: the Workload has
the group's name), or, without either, its ``kueue.x-k8s.io/podset`` label with a
controlling Job (the Workload is the one that Job controls).
:class:`KueueGangs` files such a pod under its Workload (``PodInfo.kueue_workload``, its pod
set as its role when there are several): an admitted Workload's gang is made on its first
pod of ours; a pod whose Workload is not known yet, or not admitted, waits
(``GroupNotFound``), so no member of an admitted job is ever placed alone because its
Workload's event came after its own. :class:`KueueWorkloadHandler` reads the Workloads: one
whose admission changes (admitted, evicted, counts) makes its pods' gang again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from coscheduler.api.adapters import kueue as kueue_api
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import DEFAULT_QUEUE
from coscheduler.core.group import KIND_KUEUE, GroupKey
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.groups import Groups
from coscheduler.runtime.handlers.base import Complaints, NamespacedHandler, ObjectName

__all__ = ["KueueGangs", "KueueWorkloadHandler"]


WorkloadName = ObjectName
#: What ties pods to a Workload in a namespace: its plain pods' group name, or its owner's uid.
Anchor = tuple[str, str]


def _anchor(pod: PodInfo) -> Anchor | None:
    named = pod.kueue_admitted_by or pod.labels.get(kueue_api.POD_GROUP_LABEL)
    if named:
        return (pod.namespace, f"name {named}")
    if kueue_api.POD_SET_LABEL in pod.labels and pod.owner_kind == "Job" and pod.owner_uid:
        return (pod.namespace, f"owner {pod.owner_uid}")
    return None


def _anchors(workload: kueue_api.KueueWorkload) -> list[Anchor]:
    anchors = [(workload.namespace, f"name {workload.name}")]
    if workload.owner_uid:
        anchors.append((workload.namespace, f"owner {workload.owner_uid}"))
    return anchors


class KueueGangs:
    """Readable Workloads; the pods Kueue labelled, by anchor; the gangs made."""

    def __init__(self, scheduler: Scheduler, groups: Groups, *, queue: str = "") -> None:
        self._scheduler = scheduler
        self._groups = groups
        #: The Queue of ours the gangs draw from (``--kueue-queue``): ``default`` unless set.
        self._queue = queue or DEFAULT_QUEUE
        self.workloads: dict[WorkloadName, kueue_api.KueueWorkload] = {}
        #: Each anchor's Workload name (a Job's Workload, by the Job's uid).
        self._named: dict[Anchor, str] = {}
        self._pods: dict[Anchor, set[str]] = {}
        self._pod_anchor: dict[str, Anchor] = {}
        self._gangs: set[GroupKey] = set()

    def resolve(self, pod: PodInfo) -> PodInfo:
        """The pod as the core gets it: in its Workload's gang, waiting for it, or not Kueue's."""
        anchor = _anchor(pod) if pod.group is None else None
        if anchor is None:
            return pod
        name = self._named.get(anchor)
        if name is None:
            # Its Workload is not known yet: wait under the name of what made the pod.
            name = (
                pod.kueue_admitted_by
                or pod.labels.get(kueue_api.POD_GROUP_LABEL)
                or f"{(pod.owner_kind or 'owner').lower()}-{pod.owner_name or pod.owner_uid}"
            )
        workload = self.workloads.get((pod.namespace, name))
        several = workload is not None and len(workload.admitted) > 1
        role = pod.labels.get(kueue_api.POD_SET_LABEL) if several else None
        pod = dataclasses.replace(pod, kueue_workload=name, role=role)
        gang = kueue_api.gang_object(workload, self._queue) if workload is not None else None
        key = GroupKey(pod.namespace, name, KIND_KUEUE)
        ours = pod.scheduler_name == self._scheduler.settings.scheduler_name
        if gang is not None and ours and key not in self._gangs:
            self._gangs.add(key)
            self._groups.add_gang(key, gang)
        return pod

    def track(self, pod: PodInfo) -> None:
        """Remember the pods Kueue labelled, to resolve them again when their Workload changes."""
        self.untrack(pod.uid)
        anchor = _anchor(pod)
        if anchor is not None:
            self._pods.setdefault(anchor, set()).add(pod.uid)
            self._pod_anchor[pod.uid] = anchor

    def untrack(self, uid: str) -> None:
        anchor = self._pod_anchor.pop(uid, None)
        pods = self._pods.get(anchor) if anchor is not None else None
        if anchor is not None and pods is not None:
            pods.discard(uid)
            if not pods:
                del self._pods[anchor]

    def drop(self, key: GroupKey) -> None:
        """Forget a gang (its last pod went, or its Workload's admission changed)."""
        self._gangs.discard(key)
        self._groups.drop_gang(key)

    def store(self, workload: kueue_api.KueueWorkload) -> list[str]:
        """Keep the Workload; the pods to feed again (its gang is made again), if it changed."""
        where = (workload.namespace, workload.name)
        known = self.workloads.get(where)
        self.workloads[where] = workload
        same = known is not None and (known.uid, known.admitted, known.priority) == (
            workload.uid,
            workload.admitted,
            workload.priority,
        )
        return [] if same else self._ungroup(workload)

    def remove(self, where: WorkloadName) -> list[str]:
        workload = self.workloads.pop(where, None)
        return [] if workload is None else self._ungroup(workload)

    def _ungroup(self, workload: kueue_api.KueueWorkload) -> list[str]:
        for anchor in _anchors(workload):
            if self.workloads.get((workload.namespace, workload.name)) is workload:
                self._named[anchor] = workload.name
            elif self._named.get(anchor) == workload.name:
                del self._named[anchor]
        self.drop(GroupKey(workload.namespace, workload.name, KIND_KUEUE))
        return [uid for anchor in _anchors(workload) for uid in self._pods.get(anchor, ())]


class _Refeed(Protocol):
    def refeed(self, uids: Iterable[str]) -> None: ...


class KueueWorkloadHandler(NamespacedHandler[kueue_api.KueueWorkload]):
    kind = "Workload"
    api_version = kueue_api.API.api_version

    def __init__(
        self,
        gangs: KueueGangs,
        pods: _Refeed,
        complaints: Complaints,
        *,
        namespaces: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(complaints, namespaces=namespaces)
        self._gangs = gangs
        self._pods = pods

    def read(self, raw: Mapping[str, Any]) -> kueue_api.KueueWorkload:
        return kueue_api.read_workload(raw)

    def take(
        self, where: WorkloadName, workload: kueue_api.KueueWorkload, raw: Mapping[str, Any]
    ) -> None:
        self._pods.refeed(self._gangs.store(workload))

    def known(self) -> Iterable[WorkloadName]:
        return list(self._gangs.workloads)

    def forget(self, key: WorkloadName) -> None:
        self._pods.refeed(self._gangs.remove(key))
