"""What the planner asks of the snapshot: which nodes take a pod, and how well.

:class:`SnapshotQueries` answers for all slots at once, in a handful of NumPy
operations per shape of pod, reading the arrays :class:`SnapshotState`
declares; it changes nothing but caches (class verdicts, request vectors, the
name ranking). Filters 1-3 (cordon, taints, affinity) are judged once per class
of equal nodes (:mod:`~coscheduler.core.node_classes`), filter 4 (host ports)
per node holding ports, filter 5 (resources, volume attach limits) on the
matrices, filters 6-7 (spread, inter-pod affinity) through
:mod:`~coscheduler.core.topology`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from coscheduler.api.pod import HostPort, PodInfo
from coscheduler.core.filters import affinity, features, taints, unschedulable
from coscheduler.core.preferences import DomainTally, RunPreferences
from coscheduler.core.snapshot_state import SnapshotState
from coscheduler.core.topology import RunRules

__all__ = ["SnapshotQueries"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class SnapshotQueries(SnapshotState):
    """The planner's read-only vector queries over the snapshot's slots."""

    def request(self, pod: PodInfo) -> dict[int, int]:
        """The pod's requests by column."""
        columns, amounts = self._vector(pod.requests)
        return dict(zip(columns, amounts.tolist(), strict=True))

    def static_mask(self, pod: PodInfo) -> BoolArray:
        """Per slot: live, and filters 1-3 accept the pod."""
        mask = self._live[: len(self._nodes)].copy()
        if not mask.any():
            return mask
        mask &= self._tolerated(pod)
        return self._match_labels(pod, mask)

    def _tolerated(self, pod: PodInfo) -> BoolArray:
        """Per slot: filters 1-2 (cordon, taints, declared features) accept the pod."""
        size = len(self._nodes)
        return self._taint_verdicts.mask(
            (pod.tolerations, pod.node_features) if pod.node_features else pod.tolerations,
            lambda node: (
                unschedulable.check(pod, node) is None
                and taints.check(pod, node) is None
                and features.check(pod, node) is None
            ),
        )[self._taint_class[:size]]

    def _match_labels(self, pod: PodInfo, mask: BoolArray) -> BoolArray:
        """``mask`` narrowed to the slots filter 3 (node selector, affinity) accepts."""
        size = len(mask)
        if affinity.selects_all(pod):
            return mask
        if affinity.uses_node_name(pod):
            for slot in np.flatnonzero(mask).tolist():
                node = self._nodes[slot]
                mask[slot] = node is not None and affinity.matches(pod, node.labels, node.name)
            return mask
        mask &= self._label_verdicts.mask(
            affinity.verdict_key(pod), lambda node: affinity.matches(pod, node.labels, node.name)
        )[self._label_class[:size]]
        return mask

    def feasible(self, pod: PodInfo) -> BoolArray:
        """Per slot: filters 1-7 accept the pod now."""
        mask = self.fits(pod)
        rules = self.rules(pod)
        if rules is not None:
            mask &= rules.mask
        return mask

    def rules(self, pod: PodInfo) -> RunRules | None:
        """Filters 6-7 for the pod now (None when neither applies)."""
        size = len(self._nodes)
        if not pod.topology and not self.topology.has_anti_terms:
            return None
        live = self._live[:size]
        counted = []
        for constraint in pod.topology.spread:
            nodes = live & self._tolerated(pod) if constraint.honor_node_taints else live.copy()
            if constraint.honor_node_affinity:
                nodes = self._match_labels(pod, nodes)
            counted.append(nodes)
        return self.topology.rules(pod, size, counted)

    def preferences(self, pod: PodInfo, slots: npt.NDArray[np.intp]) -> RunPreferences | None:
        """What the pod prefers, scored at ``slots`` (None when it prefers nothing)."""
        wanted = pod.preferences
        if not wanted:
            return None
        size = len(self._nodes)
        nodes = np.zeros(len(slots), dtype=np.float64)
        for index, slot in enumerate(slots.tolist() if wanted.nodes else ()):
            node = self._nodes[slot]
            if node is not None:
                nodes[index] = sum(
                    weight
                    for weight, term in wanted.nodes
                    if affinity.term_matches(term, node.labels, node.name)
                )
        namespaces = self.topology.namespace_labels
        pods = []
        for sign, terms in ((1.0, wanted.affinity), (-1.0, wanted.anti_affinity)):
            for weight, term in terms:
                domains, counts = self.topology.selected_counts(term, term.topology_key, size)
                mine = term.selects(pod.namespace, pod.labels, namespaces)
                pods.append(DomainTally(domains[slots], counts, sign * weight, mine))
        spread = []
        for constraint in wanted.spread:
            domains, counts = self.topology.spread_counts(pod, constraint, size)
            spread.append(DomainTally(domains[slots], counts, -1.0, constraint.selects(pod.labels)))
        return RunPreferences(nodes, pods, spread)

    def fits(self, pod: PodInfo) -> BoolArray:
        """Per slot: filters 1-5 accept the pod now."""
        mask = self.static_mask(pod)
        size = len(mask)
        if pod.host_ports:
            self._refuse_ports(mask, pod.host_ports)
        columns, amounts = self._vector(pod.requests)
        for column, amount in zip(columns, amounts.tolist(), strict=True):
            if amount > 0:
                mask &= (self._alloc[:size, column] - self._used[:size, column]) >= amount
        if pod.volume_attach and self.attach_limits:
            slots = np.flatnonzero(mask)
            room = self.attach_room(pod, slots)
            if room is not None:
                mask[slots[room <= 0]] = False
        return mask

    def attach_room(self, pod: PodInfo, slots: npt.NDArray[np.intp]) -> IntArray | None:
        """How many pods like this one each slot can still attach the volumes of (None: no limit).

        As kube-scheduler's NodeVolumeLimits: per CSI driver the node publishes
        a count for, the distinct volumes attached by the pods on it (bound or
        assumed) plus the pod's volumes not attached there yet stay within it.
        """
        if not pod.volume_attach or not self.attach_limits:
            return None
        room = np.full(len(slots), np.iinfo(np.int64).max, dtype=np.int64)
        for index, slot in enumerate(slots.tolist()):
            node = self._nodes[slot]
            limits = None if node is None else self.attach_limits.get(node.name)
            if not limits:
                continue
            attached: dict[str, set[str]] = {}
            for uid in self._on_node.get(node.name, ()) if node else ():
                for driver, volume in self._pods[uid].pod.volume_attach:
                    attached.setdefault(driver, set()).add(volume)
            for driver, limit in limits.items():
                new = [
                    v
                    for d, v in pod.volume_attach
                    if d == driver and v not in attached.get(driver, set())
                ]
                if new:
                    left = max(0, limit - len(attached.get(driver, ())))
                    room[index] = min(room[index], left // len(new))
        return room

    def room(self, pod: PodInfo, slots: npt.NDArray[np.intp]) -> IntArray:
        """How many pods of this one's shape each of ``slots`` has free room for."""
        columns, amounts = self._vector(pod.requests)
        wanted = [(c, a) for c, a in zip(columns, amounts.tolist(), strict=True) if a > 0]
        chosen = [c for c, _ in wanted]
        free = self._alloc.take(slots, axis=0).take(chosen, axis=1) - self._used.take(
            slots, axis=0
        ).take(chosen, axis=1)
        room: IntArray = (free // np.array([a for _, a in wanted], dtype=np.int64)).min(axis=1)
        attach = self.attach_room(pod, slots)
        if attach is not None:
            room = np.minimum(room, attach)
        return np.minimum(room, 1) if pod.host_ports else room

    def rows(self, slots: npt.NDArray[np.intp]) -> tuple[IntArray, IntArray]:
        """Allocatable and allocated rows of these slots (copies).

        ``take``, not ``matrix[slots]``: the same rows, read several times faster
        (the planner reads them for every feasible node at every decision).
        """
        return self._alloc.take(slots, axis=0), self._used.take(slots, axis=0)

    def ranks(self, slots: npt.NDArray[np.intp]) -> IntArray:
        """Each slot's position in node-name order (the tie-break)."""
        if self._rank_stale:
            for position, name in enumerate(sorted(self._slots)):
                self._rank[self._slots[name]] = position
            self._rank_stale = False
        return self._rank[slots]

    def device_room(self, slots: npt.NDArray[np.intp]) -> IntArray:
        """Per slot: how many devices (DRA) its node could still be given, an upper bound."""
        changed = self.devices.changed_rooms()
        names = self._slots if changed is None else changed | self._device_room_stale
        self._device_room_stale = set()
        for name in names:
            slot = self._slots.get(name)
            if slot is not None:
                self._device_room[slot] = self.devices.room_on(name)
        room: IntArray = self._device_room[slots]
        return room

    def name_of(self, slot: int) -> str:
        node = self._nodes[slot]
        assert node is not None
        return node.name

    # -- internals ---------------------------------------------------------

    def _refuse_ports(self, mask: BoolArray, wanted: tuple[HostPort, ...]) -> None:
        for name, used in self._ports.items():
            slot = self._slots.get(name)
            if slot is not None and mask[slot] and used.conflicts(wanted):
                mask[slot] = False
