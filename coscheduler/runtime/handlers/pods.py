"""Pods (``/api/v1/pods``): every pod, ours to place or not (all count on their nodes).

Each pod is read once into a :class:`~coscheduler.api.pod.PodInfo` and fed
to the core as it should see it, by asking the resolvers in this order:

0. its ``spec.schedulingGroup`` (Kubernetes' own PodGroup): that group, or
   the gang of the CompositePodGroup the group is a child of
   (:class:`~.composites.CompositeIndex`);
1. its Workload reference (:class:`~.workloads.WorkloadGangs`): a gang, a
   lone pod (``basic``), or a wait;
2. the Kueue Workload that admitted it (:class:`~.kueue.KueueGangs`): its gang, or a
   wait while it is not known or not admitted;
3. else its controlling Job (:class:`~.jobs.JobOwners`): the group named
   after the Job, when it asks for a gang or is not known yet.

A group label wins over both. The pod is then indexed as a member of its
group in :class:`~coscheduler.runtime.groups.Groups` (for status, whatever
its phase). Pods outside ``namespaces`` still count on their nodes but are
not ours to place. A known pod's update that changes only its progress
(bound, then running: :func:`~coscheduler.api.pod.progress_fingerprint`
unchanged) is not read in full again, and one that changes nothing read (a condition, an
IP, a container's state) is not fed again. An unreadable pod is
reported once (with ``waiting`` when it is ours and not bound, so its
condition says why), and any readable version of it is forgotten.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import structlog

from coscheduler.api.pod import PodInfo, PodParseError, progress_fingerprint
from coscheduler.api.quantity import QuantityError
from coscheduler.core.group import KIND_KUEUE
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.groups import Groups
from coscheduler.runtime.handlers.base import Complaints, InvalidObject, KeyedHandler, meta
from coscheduler.runtime.handlers.composites import CompositeIndex
from coscheduler.runtime.handlers.jobs import JobOwners
from coscheduler.runtime.handlers.kueue import KueueGangs
from coscheduler.runtime.handlers.workloads import WorkloadGangs

__all__ = ["PodHandler", "UnreadablePods"]

log = structlog.get_logger(__name__)


class UnreadablePods(Complaints, Protocol):
    """What the pod handler tells of the pods it cannot read.

    The reporter implements it: an unreadable pod of ours that waits keeps its
    ``PodScheduled=False`` condition until it is readable or gone.
    """

    def waiting(self, uid: str, waits: bool) -> None:
        """Whether an unreadable pod is ours and waits (False: readable or gone)."""


class PodHandler(KeyedHandler[str]):
    def __init__(
        self,
        scheduler: Scheduler,
        groups: Groups,
        *,
        owners: JobOwners,
        gangs: WorkloadGangs,
        complaints: UnreadablePods,
        namespaces: frozenset[str] = frozenset(),
        composites: CompositeIndex | None = None,
        kueue: KueueGangs | None = None,
    ) -> None:
        self._scheduler = scheduler
        self._groups = groups
        self._owners = owners
        self._gangs = gangs
        self._composites = composites or CompositeIndex()
        self._kueue = kueue or KueueGangs(scheduler, groups)
        self._complaints = complaints
        self._namespaces = namespaces
        self._uids: set[str] = set()
        #: Each pod as last read, before resolving, and the fingerprint it was read from.
        self._read: dict[str, tuple[bytes, PodInfo]] = {}
        #: Unreadable pods already reported (each of their events does not report again).
        self._invalid: set[str] = set()

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None:
        # One queue refresh per group at the end, not one per pod (a gang's size squared).
        with self._scheduler.batch():
            super().replace(objects)

    def upsert(self, raw: Mapping[str, Any]) -> str | None:
        """Read a pod and feed it in; None (and an :class:`InvalidObject`) if unreadable."""
        try:
            pod, unchanged = self._parse(raw)
        except (PodParseError, QuantityError) as error:
            self._unreadable(raw, error)
            return None
        if unchanged:
            # Nothing read changed (a condition, an IP, a container's state): fed as it is.
            return pod.uid
        if self._namespaces and pod.namespace not in self._namespaces:
            pod = dataclasses.replace(pod, scheduler_name="")  # not ours to place
        self._invalid.discard(pod.uid)
        self._complaints.waiting(pod.uid, False)
        self._uids.add(pod.uid)
        self._owners.index(pod, self._scheduler.pod(pod.uid))
        self._gangs.track(pod)
        self._composites.track(pod)
        self._kueue.track(pod)
        return self._feed(pod).uid

    def _parse(self, raw: Mapping[str, Any]) -> tuple[PodInfo, bool]:
        """The pod of ``raw``, and whether it is the one last read and fed, unchanged.

        Only its progress is read when nothing else changed.
        """
        uid = meta(raw).get("uid")
        fingerprint = progress_fingerprint(raw) if isinstance(uid, str) and uid else None
        if fingerprint is None or not isinstance(uid, str):
            return PodInfo.from_object(raw), False
        known = self._read.get(uid)
        if known is not None and known[0] == fingerprint:
            pod = known[1].progressed(raw)
            # A pod with claims is fed again all the same: what the core counts of
            # it (devices, volume attachments) is read from the claims as they are now.
            if pod is known[1] and not pod.device_claims and not pod.claims:
                return pod, True
        else:
            pod = PodInfo.from_object(raw)
        self._read[pod.uid] = (fingerprint, pod)
        return pod, False

    def _feed(self, pod: PodInfo) -> PodInfo:
        pod = self._gangs.resolve(pod)
        pod = self._composites.resolve(pod)
        pod = self._kueue.resolve(pod)
        # Native fields too: a Job annotated for us is our gang even where 1.37's
        # WorkloadWithJob gave its pods a native group (GroupKey.of_pod).
        pod = self._owners.assign(pod)
        self._scheduler.upsert_pod(pod)
        self._groups.index_member(pod)
        return pod

    def _unreadable(self, raw: Mapping[str, Any], error: Exception) -> None:
        invalid = InvalidObject.of("Pod", raw, error)
        invalid = dataclasses.replace(invalid, waiting=self._waits_for_us(raw, invalid))
        uid = invalid.uid
        if uid not in self._invalid:
            self._invalid.add(uid)
            log.warning(
                "pod skipped", pod=f"{invalid.namespace}/{invalid.name}", error=invalid.message
            )
            self._complaints.invalid(invalid)
        if uid:
            # Forget any readable version we had, but remember it was
            # reported, so each of its events does not report it again.
            self.forget(uid)
            self._invalid.add(uid)
            self._complaints.waiting(uid, invalid.waiting)

    def _waits_for_us(self, raw: Mapping[str, Any], invalid: InvalidObject) -> bool:
        """Whether an unreadable pod, as far as it can be read, is ours and not bound."""
        spec = raw.get("spec")
        if not isinstance(spec, Mapping) or spec.get("nodeName"):
            return False
        if self._namespaces and invalid.namespace not in self._namespaces:
            return False
        return bool(spec.get("schedulerName") == self._scheduler.settings.scheduler_name)

    def known(self) -> Iterable[str]:
        return self._uids

    def forget(self, key: str) -> None:
        known = self._scheduler.pod(key)
        if known is not None and known.owner_uid:
            self._owners.unindex(known.owner_uid, key)
        self._invalid.discard(key)
        self._complaints.waiting(key, False)
        self._uids.discard(key)
        self._read.pop(key, None)
        self._scheduler.remove_pod(key)
        self._gangs.untrack(key)
        self._composites.untrack(key)
        self._kueue.untrack(key)
        emptied = self._groups.remove_member(key)
        if emptied is not None and emptied.kind == KIND_KUEUE:
            self._kueue.drop(emptied)
        elif emptied is not None:
            self._gangs.drop(emptied)

    def key_of(self, raw: Mapping[str, Any]) -> str | None:
        uid = meta(raw).get("uid")
        return uid if isinstance(uid, str) else None

    # -- asked by the resolvers' handlers ---------------------------------------

    def refeed(self, uids: Iterable[str]) -> None:
        """A Job's answer, a native PodGroup's composite or a Kueue Workload's admission
        changed: its pods' groups follow."""
        for uid in uids:
            pod = self._scheduler.pod(uid)
            if pod is not None:
                self._feed(pod)

    def regroup(self, pods: Iterable[PodInfo]) -> None:
        """A Workload came, changed or went: its pods (as read) are resolved again."""
        for pod in pods:
            resolved = self._gangs.resolve(pod)
            fed = self._scheduler.pod(pod.uid)
            if fed is not None and fed.workload == resolved.workload:
                continue  # the same key: its group's policy came or went, the pod stays
            self._scheduler.upsert_pod(resolved)
            self._groups.index_member(resolved)
