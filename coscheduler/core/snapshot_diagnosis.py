"""Why each node refuses a pod: the snapshot's filters, replayed in order.

:class:`SnapshotDiagnosis` runs filters 1-7 as :meth:`~SnapshotQueries.feasible`
does, but counts at each one the nodes it is the first to refuse, for a
:class:`~coscheduler.core.diagnosis.Diagnosis` (events and the group's status).
It is asked once per failed attempt, never on the planner's hot path.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np

from coscheduler.api.pod import PodInfo
from coscheduler.core.devices import CANNOT_ALLOCATE, DEVICES, DeviceRefusalError
from coscheduler.core.diagnosis import Diagnosis
from coscheduler.core.filters import affinity, features, fit, ports, taints, unschedulable
from coscheduler.core.snapshot_queries import BoolArray, SnapshotQueries

__all__ = ["SnapshotDiagnosis"]


class SnapshotDiagnosis(SnapshotQueries):
    """The snapshot's queries, and the explanation of a refusal."""

    def diagnose(self, pod: PodInfo) -> Diagnosis:
        """Why each node refuses the pod now, by the first failing filter."""
        size = len(self._nodes)
        remaining = self._live[:size].copy()
        reasons: Counter[str] = Counter()
        by_filter: Counter[str] = Counter()
        for class_id in np.unique(self._taint_class[:size][remaining]).tolist():
            sample = self._taint_classes.samples[class_id]
            assert sample is not None
            for name, check in (
                (unschedulable.NAME, unschedulable.check),
                (taints.NAME, taints.check),
                (features.NAME, features.check),
            ):
                reason = check(pod, sample)
                if reason is not None:
                    refused = remaining & (self._taint_class[:size] == class_id)
                    count = int(refused.sum())
                    reasons[reason] += count
                    by_filter[name] += count
                    remaining &= ~refused
                    break
        label_filters = [(affinity.NAME, affinity.REASON, self.static_mask(pod))]
        if pod.volume_affinity:
            own = dataclasses.replace(pod, volume_affinity=())
            label_filters.insert(0, (affinity.NAME, affinity.REASON, self.static_mask(own)))
            label_filters[1] = (affinity.VOLUME_NAME, affinity.VOLUME_REASON, label_filters[1][2])
        for name, reason, matching in label_filters:
            refused = remaining & ~matching
            if refused.any():
                reasons[reason] += int(refused.sum())
                by_filter[name] += int(refused.sum())
                remaining &= matching
        if pod.host_ports:
            free = remaining.copy()
            self._refuse_ports(free, pod.host_ports)
            refused = remaining & ~free
            if refused.any():
                reasons[ports.REASON] += int(refused.sum())
                by_filter[ports.NAME] += int(refused.sum())
                remaining = free
        columns, amounts = self._vector(pod.requests)
        short = np.zeros(size, dtype=np.bool_)
        for column, amount in zip(columns, amounts.tolist(), strict=True):
            if amount <= 0:
                continue
            lacking = remaining & (
                (self._alloc[:size, column] - self._used[:size, column]) < amount
            )
            if lacking.any():
                reasons[fit.reason(self.columns.name(column))] += int(lacking.sum())
                short |= lacking
        if short.any():
            by_filter[fit.NAME] += int(short.sum())
            remaining &= ~short
        if pod.volume_attach and self.attach_limits:
            slots = np.flatnonzero(remaining)
            room = self.attach_room(pod, slots)
            if room is not None and (room <= 0).any():
                full = slots[room <= 0]
                reasons[affinity.ATTACH_REASON] += len(full)
                by_filter[affinity.ATTACH_NAME] += len(full)
                remaining[full] = False
        rules = self.rules(pod)
        for name, reason, refused_here in rules.refusals if rules is not None else ():
            refused = remaining & refused_here
            if refused.any():
                reasons[reason] += int(refused.sum())
                by_filter[name] += int(refused.sum())
                remaining &= ~refused
        if pod.device_claims:
            self._diagnose_devices(pod, remaining, reasons, by_filter)
        return Diagnosis(
            nodes=len(self._slots),
            available=int(remaining.sum()),
            reasons=dict(reasons),
            by_filter=dict(by_filter),
        )

    def _diagnose_devices(
        self, pod: PodInfo, remaining: BoolArray, reasons: Counter[str], by_filter: Counter[str]
    ) -> None:
        """The nodes left whose devices cannot satisfy the pod's claims (DRA), and why."""
        slots = np.flatnonzero(remaining).tolist()
        try:
            claims = self.devices.claim_keys(pod.namespace, pod.name, pod.device_claims)
        except DeviceRefusalError as refusal:
            refused: list[tuple[int, str]] = [(slot, refusal.reason) for slot in slots]
        else:
            refused = []
            need = self.devices.least_need(claims)
            room = self.device_room(np.array(slots, dtype=np.intp)).tolist() if slots else []
            for slot, free in zip(slots, room, strict=True):
                if free < need:
                    refused.append((slot, CANNOT_ALLOCATE))  # too few devices left: no search
                    continue
                node = self._nodes[slot]
                assert node is not None
                try:
                    self.devices.fit(pod.uid, claims, node)
                except DeviceRefusalError as refusal:
                    refused.append((slot, refusal.reason))
        for slot, reason in refused:
            reasons[reason] += 1
            by_filter[DEVICES] += 1
            remaining[slot] = False
