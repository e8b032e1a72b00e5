"""The cluster as the planner sees it: nodes, and what is allocated on them.

Why it is shaped like this: the planner asks "which nodes can take a pod of
this shape, and which is best?" thousands of times per second over thousands
of nodes. Answering with a Python loop over nodes per pod would cost
milliseconds per pod. So the snapshot keeps nodes in *slots* of NumPy arrays
(allocatable and allocated amounts as int64 matrices, one column per
resource) and answers for all nodes at once, in a handful of vector
operations per shape of pod.

Filters 1-3 (cordon, taints, affinity) are judged once per class of equal
nodes (:mod:`~coscheduler.core.node_classes`), not per node. A pod whose
affinity names nodes (``matchFields``) is judged node by node; such pods are
rare. Filters 6-7 (spread, inter-pod affinity) read the pods around each node
through :mod:`~coscheduler.core.topology`; a pod that asks for neither pays
nothing for them while no placed pod carries a required anti-affinity term.
:meth:`Snapshot.diagnose` explains a refusal as a
:class:`~coscheduler.core.diagnosis.Diagnosis`.

Every update is O(1) (amortised; O(resources) NumPy scalars) or O(log n):
node added, changed or removed; pod added, bound, finished or deleted;
``assume`` (a planned binding counts at once) and ``forget`` (a binding that
failed). The ranking by node name, which breaks score ties, is rebuilt lazily
after nodes come or go (never on pod changes).

Invariants:

1. A pod counts on a node when it is bound (``spec.nodeName``) and not
   terminal, whichever scheduler bound it, or when it is assumed there.
2. Pods may name nodes the snapshot does not know (yet); their usage applies
   when the node arrives, and stays remembered when it leaves.
3. An assumed pod stays assumed while the API still shows it unbound, until it
   is seen bound (then it counts as bound), is forgotten, or is deleted.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import HostPort, PodInfo
from coscheduler.core.diagnosis import Diagnosis
from coscheduler.core.filters import affinity, fit, ports, taints, unschedulable
from coscheduler.core.node_classes import ClassVerdicts, NodeClasses
from coscheduler.core.preferences import DomainTally, RunPreferences
from coscheduler.core.resources import ResourceColumns
from coscheduler.core.topology import RunRules, TopologyIndex

__all__ = ["Snapshot"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
_Vector = tuple[tuple[int, ...], IntArray]


@dataclass(slots=True)
class _Placed:
    pod: PodInfo
    node: str
    vector: _Vector
    assumed: bool


class Snapshot:
    """Nodes and allocations, with vector queries for the planner."""

    def __init__(self, capacity: int = 64) -> None:
        self.columns = ResourceColumns()
        capacity = max(capacity, 1)
        width = len(self.columns)
        self._alloc: IntArray = np.zeros((capacity, width), dtype=np.int64)
        self._used: IntArray = np.zeros((capacity, width), dtype=np.int64)
        self._live: BoolArray = np.zeros(capacity, dtype=np.bool_)
        #: Live and not cordoned: kept per slot so capacity sums stay vector operations.
        self._open: BoolArray = np.zeros(capacity, dtype=np.bool_)
        self._taint_class = np.zeros(capacity, dtype=np.int64)
        self._label_class = np.zeros(capacity, dtype=np.int64)
        self._rank: IntArray = np.zeros(capacity, dtype=np.int64)
        self._rank_stale = False
        self._nodes: list[NodeInfo | None] = []
        self._slots: dict[str, int] = {}
        self._free_slots: list[int] = []
        self._taint_classes = NodeClasses()
        self._label_classes = NodeClasses()
        self._taint_verdicts = ClassVerdicts(self._taint_classes)
        self._label_verdicts = ClassVerdicts(self._label_classes)
        self._pods: dict[str, _Placed] = {}
        self._on_node: dict[str, set[str]] = {}
        self._ports: dict[str, ports.PortSet] = {}
        self._vectors: dict[tuple[tuple[str, int], ...], _Vector] = {}
        self.topology = TopologyIndex(self._nodes, self._slots, self._pods)
        #: CSINode limits: node -> CSI driver -> volumes it can have attached.
        self.attach_limits: dict[str, Mapping[str, int]] = {}

    # -- reading -----------------------------------------------------------

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, name: object) -> bool:
        return name in self._slots

    @property
    def slot_count(self) -> int:
        """How long the per-slot masks are (slots of removed nodes included)."""
        return len(self._nodes)

    def slot_of(self, name: str) -> int | None:
        return self._slots.get(name)

    def node(self, name: str) -> NodeInfo | None:
        slot = self._slots.get(name)
        return None if slot is None else self._nodes[slot]

    def nodes(self) -> Iterator[NodeInfo]:
        """The nodes, in name order."""
        for name in sorted(self._slots):
            node = self._nodes[self._slots[name]]
            assert node is not None
            yield node

    def allocated(self, name: str) -> dict[str, int]:
        """What is allocated on a node (bound and assumed pods), non-zero amounts only."""
        totals: Counter[str] = Counter()
        for uid in self._on_node.get(name, ()):
            for resource, amount in self._pods[uid].pod.requests.items():
                totals[resource] += amount
        return {resource: amount for resource, amount in totals.items() if amount}

    def pods_on(self, name: str) -> list[PodInfo]:
        return [self._pods[uid].pod for uid in sorted(self._on_node.get(name, ()))]

    def ports_on(self, name: str) -> ports.PortSet:
        return self._ports.get(name) or ports.PortSet()

    def pod(self, uid: str) -> PodInfo | None:
        """The pod as it was placed (bound or assumed), or None."""
        placed = self._pods.get(uid)
        return None if placed is None else placed.pod

    def node_of(self, uid: str) -> str | None:
        """The node a pod counts on (bound or assumed), or None."""
        placed = self._pods.get(uid)
        return None if placed is None else placed.node

    def is_assumed(self, uid: str) -> bool:
        placed = self._pods.get(uid)
        return placed is not None and placed.assumed

    def free_capacity(self, *, schedulable_only: bool = True) -> dict[str, int]:
        """Free capacity summed over nodes (a node's overcommit counts as zero).

        Cordoned nodes are left out by default: they take no new pods.
        """
        live = self._live_slots(schedulable_only)
        size = len(live)
        free = np.maximum(self._alloc[:size][live] - self._used[:size][live], 0).sum(axis=0)
        return {self.columns.name(c): int(free[c]) for c in range(len(self.columns))}

    def capacity(self) -> dict[str, int]:
        """Allocatable capacity summed over schedulable nodes (what queues share)."""
        live = self._live_slots(True)
        total = self._alloc[: len(live)][live].sum(axis=0)
        return {self.columns.name(c): int(total[c]) for c in range(len(self.columns))}

    def _live_slots(self, schedulable_only: bool) -> BoolArray:
        size = len(self._nodes)
        live: BoolArray = (self._open if schedulable_only else self._live)[:size].copy()
        return live

    # -- nodes -------------------------------------------------------------

    def upsert_node(self, node: NodeInfo) -> bool:
        """Add or replace a node; True when it was new."""
        self._ensure_columns(node.allocatable)
        slot = self._slots.get(node.name)
        added = slot is None
        if slot is None:
            slot = self._take_slot()
            self._slots[node.name] = slot
            self._rank_stale = True
            self._used[slot] = 0
            for uid in self._on_node.get(node.name, ()):
                self._count(slot, self._pods[uid].vector, 1)
        else:
            self._release_classes(slot)
        self._nodes[slot] = node
        self._live[slot] = True
        self._open[slot] = not node.unschedulable
        row = self._alloc[slot]
        row[:] = 0
        for resource, amount in node.allocatable.items():
            row[self.columns.column(resource)] = amount
        taint_id, fresh = self._taint_classes.acquire((node.taints, node.unschedulable), node)
        if fresh:
            self._taint_verdicts.forget_class(taint_id)
        label_id, fresh = self._label_classes.acquire(node.signature[0], node)
        if fresh:
            self._label_verdicts.forget_class(label_id)
        self._taint_class[slot] = taint_id
        self._label_class[slot] = label_id
        self.topology.node_changed(slot, node)
        return added

    def remove_node(self, name: str) -> bool:
        """Remove a node (its pods stay remembered); True when it was known."""
        slot = self._slots.pop(name, None)
        if slot is None:
            return False
        self._release_classes(slot)
        self._nodes[slot] = None
        self._live[slot] = False
        self._open[slot] = False
        self._alloc[slot] = 0
        self._used[slot] = 0
        self._free_slots.append(slot)
        self._rank_stale = True
        self.topology.node_changed(slot, None)
        return True

    # -- pods --------------------------------------------------------------

    def update_pod(self, pod: PodInfo) -> None:
        """Take in a pod as the API shows it (rules 1 and 3)."""
        placed = self._pods.get(pod.uid)
        counts = pod.node_name is not None and not pod.terminal
        if placed is not None and placed.assumed and pod.node_name is None and not pod.terminal:
            self._refresh(placed, pod)
            return
        if placed is not None:
            if counts and placed.node == pod.node_name and not placed.assumed:
                self._refresh(placed, pod)
                return
            self._unplace(pod.uid)
        if counts and pod.node_name is not None:
            self._place(pod, pod.node_name, assumed=False, times=1)

    def remove_pod(self, uid: str) -> None:
        """A pod was deleted: whatever it held is free."""
        if uid in self._pods:
            self._unplace(uid)

    def assume(self, pod: PodInfo, node: str) -> None:
        """Count a planned binding at once."""
        self.assume_many((pod,), node)

    def assume_many(self, pods: Iterable[PodInfo], node: str) -> None:
        """Count planned bindings of pods of one shape on one node, in one update."""
        batch = list(pods)
        if not batch:
            return
        for pod in batch:
            if pod.uid in self._pods:
                self._unplace(pod.uid)
        vector = self._vector(batch[0].requests)
        slot = self._slots.get(node)
        for pod in batch:
            self._pods[pod.uid] = _Placed(pod, node, vector, assumed=True)
            self._on_node.setdefault(node, set()).add(pod.uid)
            self.topology.add(pod, node)
        if slot is not None:
            self._count(slot, vector, len(batch))
        if batch[0].host_ports:
            self._ports.setdefault(node, ports.PortSet()).add(batch[0].host_ports, len(batch))

    def forget(self, uid: str) -> bool:
        """Undo an assumption (the binding failed or was discarded); True when assumed."""
        placed = self._pods.get(uid)
        if placed is None or not placed.assumed:
            return False
        self._unplace(uid)
        return True

    # -- queries for the planner -------------------------------------------

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
        """Per slot: filters 1-2 (cordon, taints) accept the pod."""
        size = len(self._nodes)
        return self._taint_verdicts.mask(
            pod.tolerations,
            lambda node: unschedulable.check(pod, node) is None and taints.check(pod, node) is None,
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
        free = (
            self._alloc[slots][:, [c for c, _ in wanted]]
            - self._used[slots][:, [c for c, _ in wanted]]
        )
        room: IntArray = (free // np.array([a for _, a in wanted], dtype=np.int64)).min(axis=1)
        attach = self.attach_room(pod, slots)
        if attach is not None:
            room = np.minimum(room, attach)
        return np.minimum(room, 1) if pod.host_ports else room

    def rows(self, slots: npt.NDArray[np.intp]) -> tuple[IntArray, IntArray]:
        """Allocatable and allocated rows of these slots (copies)."""
        return self._alloc[slots], self._used[slots]

    def ranks(self, slots: npt.NDArray[np.intp]) -> IntArray:
        """Each slot's position in node-name order (the tie-break)."""
        if self._rank_stale:
            for position, name in enumerate(sorted(self._slots)):
                self._rank[self._slots[name]] = position
            self._rank_stale = False
        return self._rank[slots]

    def name_of(self, slot: int) -> str:
        node = self._nodes[slot]
        assert node is not None
        return node.name

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
        return Diagnosis(
            nodes=len(self._slots),
            available=int(remaining.sum()),
            reasons=dict(reasons),
            by_filter=dict(by_filter),
        )

    # -- internals ---------------------------------------------------------

    def _refuse_ports(self, mask: BoolArray, wanted: tuple[HostPort, ...]) -> None:
        for name, used in self._ports.items():
            slot = self._slots.get(name)
            if slot is not None and mask[slot] and used.conflicts(wanted):
                mask[slot] = False

    def _vector(self, requests: Mapping[str, int]) -> _Vector:
        key = tuple(sorted(requests.items()))
        vector = self._vectors.get(key)
        if vector is None:
            self._ensure_columns(requests)
            columns = tuple(self.columns.column(name) for name, _ in key)
            vector = (columns, np.array([amount for _, amount in key], dtype=np.int64))
            self._vectors[key] = vector
        return vector

    def _count(self, slot: int, vector: _Vector, times: int) -> None:
        columns, amounts = vector
        self._used[slot, list(columns)] += amounts * times

    def _place(self, pod: PodInfo, node: str, *, assumed: bool, times: int) -> None:
        vector = self._vector(pod.requests)
        self._pods[pod.uid] = _Placed(pod, node, vector, assumed)
        self._on_node.setdefault(node, set()).add(pod.uid)
        self.topology.add(pod, node)
        slot = self._slots.get(node)
        if slot is not None:
            self._count(slot, vector, times)
        if pod.host_ports:
            self._ports.setdefault(node, ports.PortSet()).add(pod.host_ports)

    def _unplace(self, uid: str) -> None:
        placed = self._pods.pop(uid)
        self.topology.remove(placed.pod, placed.node)
        on_node = self._on_node.get(placed.node)
        if on_node is not None:
            on_node.discard(uid)
            if not on_node:
                del self._on_node[placed.node]
        slot = self._slots.get(placed.node)
        if slot is not None:
            self._count(slot, placed.vector, -1)
        if placed.pod.host_ports:
            used = self._ports.get(placed.node)
            if used is not None:
                used.remove(placed.pod.host_ports)
                if not used:
                    del self._ports[placed.node]

    def _refresh(self, placed: _Placed, pod: PodInfo) -> None:
        """The same placement, a newer copy of the pod (its labels may have changed)."""
        if placed.pod.labels != pod.labels or placed.pod.deleting != pod.deleting:
            self.topology.remove(placed.pod, placed.node)
            self.topology.add(pod, placed.node)
        placed.pod = pod

    def _take_slot(self) -> int:
        if self._free_slots:
            return self._free_slots.pop()
        slot = len(self._nodes)
        self._nodes.append(None)
        if slot >= len(self._live):
            grow = len(self._live)
            self._alloc = np.concatenate([self._alloc, np.zeros_like(self._alloc[:grow])])
            self._used = np.concatenate([self._used, np.zeros_like(self._used[:grow])])
            self._live = np.concatenate([self._live, np.zeros(grow, dtype=np.bool_)])
            self._open = np.concatenate([self._open, np.zeros(grow, dtype=np.bool_)])
            self._taint_class = np.concatenate([self._taint_class, np.zeros(grow, np.int64)])
            self._label_class = np.concatenate([self._label_class, np.zeros(grow, np.int64)])
            self._rank = np.concatenate([self._rank, np.zeros(grow, np.int64)])
        return slot

    def _release_classes(self, slot: int) -> None:
        self._taint_classes.release(int(self._taint_class[slot]))
        self._label_classes.release(int(self._label_class[slot]))

    def _ensure_columns(self, names: Iterable[str]) -> None:
        if self.columns.ensure(names):
            extra = len(self.columns) - self._alloc.shape[1]
            if extra > 0:
                pad = ((0, 0), (0, extra))
                self._alloc = np.pad(self._alloc, pad)
                self._used = np.pad(self._used, pad)
