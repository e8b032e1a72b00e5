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

The class is cut by responsibility: the arrays and indexes are declared in
:mod:`~coscheduler.core.snapshot_state`, the planner's read-only queries live
in :mod:`~coscheduler.core.snapshot_queries`, ``diagnose`` in
:mod:`~coscheduler.core.snapshot_diagnosis`; this module builds the snapshot,
keeps it current and answers the plain readings (a node, its pods, totals).
Inherited methods cost nothing more per call than methods defined here.

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

from collections import Counter
from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.core.devices import DeviceIndex
from coscheduler.core.filters import ports
from coscheduler.core.node_classes import ClassVerdicts, NodeClasses
from coscheduler.core.resources import ResourceColumns
from coscheduler.core.snapshot_diagnosis import SnapshotDiagnosis
from coscheduler.core.snapshot_state import Placed, Vector
from coscheduler.core.topology import TopologyIndex

__all__ = ["Snapshot"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class Snapshot(SnapshotDiagnosis):
    """Nodes and allocations, with vector queries for the planner.

    Built and changed here; the planner's queries are inherited from
    :class:`~coscheduler.core.snapshot_queries.SnapshotQueries` and ``diagnose``
    from :class:`~coscheduler.core.snapshot_diagnosis.SnapshotDiagnosis`.
    """

    def __init__(self, capacity: int = 64) -> None:
        # The attributes are declared, typed and described in SnapshotState.
        self.columns = ResourceColumns()
        capacity = max(capacity, 1)
        width = len(self.columns)
        self._alloc = np.zeros((capacity, width), dtype=np.int64)
        self._used = np.zeros((capacity, width), dtype=np.int64)
        self._live = np.zeros(capacity, dtype=np.bool_)
        self._open = np.zeros(capacity, dtype=np.bool_)
        self._taint_class = np.zeros(capacity, dtype=np.int64)
        self._label_class = np.zeros(capacity, dtype=np.int64)
        self._rank = np.zeros(capacity, dtype=np.int64)
        self._rank_stale = False
        self._nodes = []
        self._slots = {}
        self._free_slots = []
        self._taint_classes = NodeClasses()
        self._label_classes = NodeClasses()
        self._taint_verdicts = ClassVerdicts(self._taint_classes)
        self._label_verdicts = ClassVerdicts(self._label_classes)
        self._pods = {}
        self._on_node = {}
        self._ports = {}
        self._vectors = {}
        self.topology = TopologyIndex(self._nodes, self._slots, self._pods)
        self.attach_limits = {}
        self.devices = DeviceIndex()
        self._device_room = np.zeros(capacity, dtype=np.int64)
        self._device_room_stale = set()
        #: Nodes where room was freed, or that were added or changed, since the
        #: scheduler last took them (:mod:`~coscheduler.core.requeue`).
        self.opened: set[str] = set()
        #: A pod with anti-affinity terms left a node: every node of its domains may take more.
        self.anti_affinity_left = False
        #: A known node's labels changed: the domains it was in, and that its pods pin
        #: their groups to, may have moved.
        self.relabelled = False

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
        live: BoolArray = (self._open if schedulable_only else self._live)[:size]
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
            before = self._nodes[slot]
            self.relabelled |= before is not None and before.labels != node.labels
            self._release_classes(slot)
        self._nodes[slot] = node
        self._live[slot] = True
        self._open[slot] = not node.unschedulable
        row = self._alloc[slot]
        row[:] = 0
        for resource, amount in node.allocatable.items():
            row[self.columns.column(resource)] = amount
        taint_id, fresh = self._taint_classes.acquire(
            (node.taints, node.unschedulable, node.declared_features), node
        )
        if fresh:
            self._taint_verdicts.forget_class(taint_id)
        label_id, fresh = self._label_classes.acquire(node.signature[0], node)
        if fresh:
            self._label_verdicts.forget_class(label_id)
        self._taint_class[slot] = taint_id
        self._label_class[slot] = label_id
        self.topology.node_changed(slot, node)
        self._device_room_stale.add(node.name)
        self.opened.add(node.name)
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
            if counts and placed.node == pod.node_name and _counts_alike(placed.pod, pod):
                # Bound where it was assumed, asking the same: it counts as it did.
                self.devices.settled(pod.uid)
                self._refresh(placed, pod)
                placed.assumed = False
                return
            self._unplace(pod.uid)
            if placed.assumed:
                # Bound (its claims were written first), or gone: devices follow the claims now.
                self.devices.settled(pod.uid)
        if counts and pod.node_name is not None:
            self._place(pod, pod.node_name, assumed=False, times=1)

    def remove_pod(self, uid: str) -> None:
        """A pod was deleted: whatever it held is free (devices: once its claims say so)."""
        placed = self._pods.get(uid)
        if placed is not None:
            self._unplace(uid)
            if placed.assumed:
                self.devices.forget_pod(uid)

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
            self._pods[pod.uid] = Placed(pod, node, vector, assumed=True)
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
        self.devices.forget_pod(uid)
        return True

    # -- internals ---------------------------------------------------------

    def _count(self, slot: int, vector: Vector, times: int) -> None:
        # Column by column on the row (a view): a pod asks for a few resources, and
        # a fancy-indexed ``+=`` costs several times more (twice per pod update).
        columns, amounts = vector
        row = self._used[slot]
        for column, amount in zip(columns, amounts.tolist(), strict=True):
            row[column] += amount * times

    def _place(self, pod: PodInfo, node: str, *, assumed: bool, times: int) -> None:
        vector = self._vector(pod.requests)
        self._pods[pod.uid] = Placed(pod, node, vector, assumed)
        self._on_node.setdefault(node, set()).add(pod.uid)
        self.topology.add(pod, node)
        slot = self._slots.get(node)
        if slot is not None:
            self._count(slot, vector, times)
        if pod.host_ports:
            self._ports.setdefault(node, ports.PortSet()).add(pod.host_ports)

    def _unplace(self, uid: str) -> None:
        placed = self._pods.pop(uid)
        self.opened.add(placed.node)
        if placed.pod.topology.anti_affinity:
            self.anti_affinity_left = True
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

    def _refresh(self, placed: Placed, pod: PodInfo) -> None:
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
            self._device_room = np.concatenate([self._device_room, np.zeros(grow, np.int64)])
        return slot

    def _release_classes(self, slot: int) -> None:
        self._taint_classes.release(int(self._taint_class[slot]))
        self._label_classes.release(int(self._label_class[slot]))


def _counts_alike(before: PodInfo, after: PodInfo) -> bool:
    """Whether two copies of a pod count alike on one node (its requests and host ports)."""
    return before.requests == after.requests and before.host_ports == after.host_ports
