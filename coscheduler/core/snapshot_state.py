"""The snapshot's state: the per-slot arrays and the indexes beside them.

:class:`SnapshotState` declares what :class:`~coscheduler.core.snapshot.Snapshot`
holds, so that its queries (:mod:`~coscheduler.core.snapshot_queries`), its
diagnosis (:mod:`~coscheduler.core.snapshot_diagnosis`) and its mutations
(:mod:`~coscheduler.core.snapshot`) read the same typed attributes. It builds
nothing: ``Snapshot.__init__`` does. Besides the declarations it keeps the
two helpers every side needs: a pod's requests as a cached vector of columns,
and growing the matrices when a new resource appears.

A node lives in a *slot*: one row of each matrix and one entry of each mask,
reused after the node leaves. Slots up to ``len(_nodes)`` are in use (a
removed node's slot holds ``None`` until it is taken again); the arrays are
longer, grown by doubling.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from coscheduler.api.devices import DEVICE_CLASS_RESOURCE
from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.core.devices import DeviceIndex
from coscheduler.core.filters import ports
from coscheduler.core.node_classes import ClassVerdicts, NodeClasses
from coscheduler.core.resources import ResourceColumns
from coscheduler.core.topology import TopologyIndex

__all__ = ["Placed", "SnapshotState", "Vector"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
#: A shape of requests: its columns, and the amounts in them.
Vector = tuple[tuple[int, ...], IntArray]


@dataclass(slots=True)
class Placed:
    """A pod that counts on a node: bound there, or assumed."""

    pod: PodInfo
    node: str
    vector: Vector
    assumed: bool


class SnapshotState:
    """The arrays and indexes of a snapshot (declared here, built by ``Snapshot``)."""

    #: The resource of each matrix column.
    columns: ResourceColumns
    #: Per slot and column: allocatable, and allocated (bound and assumed pods).
    _alloc: IntArray
    _used: IntArray
    #: Per slot: a node is there.
    _live: BoolArray
    #: Live and not cordoned: the nodes that take new pods.
    _open: BoolArray
    #: Per slot: the class of its (taints, cordon), and of its labels.
    _taint_class: IntArray
    _label_class: IntArray
    #: Per slot: its node's position in name order; stale after nodes come or go.
    _rank: IntArray
    _rank_stale: bool
    #: Per slot in use: its node, or None once the node left.
    _nodes: list[NodeInfo | None]
    _slots: dict[str, int]
    _free_slots: list[int]
    _taint_classes: NodeClasses
    _label_classes: NodeClasses
    _taint_verdicts: ClassVerdicts
    _label_verdicts: ClassVerdicts
    #: Placed pods by uid, their uids by node name, host ports in use by node name.
    _pods: dict[str, Placed]
    _on_node: dict[str, set[str]]
    _ports: dict[str, ports.PortSet]
    #: Requests (sorted items) -> their vector.
    _vectors: dict[tuple[tuple[str, int], ...], Vector]
    topology: TopologyIndex
    #: CSINode limits: node -> CSI driver -> volumes it can have attached.
    attach_limits: dict[str, Mapping[str, int]]
    #: DRA: slices, classes, claims, and the devices taken (:mod:`~coscheduler.core.devices`).
    devices: DeviceIndex
    #: Per slot: how many devices its node could still be given (refreshed from ``devices``).
    _device_room: IntArray
    #: Nodes (added or changed) whose ``_device_room`` is not set yet.
    _device_room_stale: set[str]

    def _vector(self, requests: Mapping[str, int]) -> Vector:
        key = tuple(sorted(requests.items()))
        vector = self._vectors.get(key)
        if vector is None:
            # Devices (DRA) are counted by queues, not against a node's allocatable.
            kept = [(n, a) for n, a in key if not n.startswith(DEVICE_CLASS_RESOURCE)]
            self._ensure_columns(name for name, _ in kept)
            columns = tuple(self.columns.column(name) for name, _ in kept)
            vector = (columns, np.array([amount for _, amount in kept], dtype=np.int64))
            self._vectors[key] = vector
        return vector

    def _ensure_columns(self, names: Iterable[str]) -> None:
        if self.columns.ensure(names):
            extra = len(self.columns) - self._alloc.shape[1]
            if extra > 0:
                pad = ((0, 0), (0, extra))
                self._alloc = np.pad(self._alloc, pad)
                self._used = np.pad(self._used, pad)
