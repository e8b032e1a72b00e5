"""How many pods of each shape fit the cluster right now.

Why: with a backlog, the core's queue retries every waiting group after every
pod that finishes (a capacity event wakes all of backoff). Each retry is a
vector pass over all nodes, so a replay of 10,000 gangs with thousands
waiting would make tens of millions of failing attempts: O(events x waiting).
The replay instead asks this index first, and hands the core only the group
its queue would pick next *and* that will fit, so every attempt succeeds.

The answer is exact for the pods the simulator makes: all pods of one gang
share one shape (same requests, selector, tolerations, no host ports), so
``k`` of them fit iff the feasible nodes have room for ``k`` in total, where a
node's room is ``min over requested resources of free // request`` (the same
arithmetic as :func:`coscheduler.core.placement.place_run`).

Costs: :meth:`FitIndex.touch` after a change on ``m`` nodes is a handful of
NumPy operations over shapes x ``m``; reading a shape's total is O(1). Nodes
are static during a replay; filters 1-3 (cordon, taints, affinity) come from
the snapshot's own ``static_mask``, so they agree with the core by
construction.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from coscheduler.api.pod import PodInfo
from coscheduler.core.snapshot import Snapshot

__all__ = ["FitIndex"]

IntArray = npt.NDArray[np.int64]
_NO_LIMIT = np.iinfo(np.int64).max


class FitIndex:
    """Room per node and total room per registered pod shape, kept current."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._size = len(snapshot)
        self.slot_of: dict[str, int] = {snapshot.name_of(s): s for s in range(self._size)}
        self._ids: dict[tuple[object, ...], int] = {}
        self._pods: list[PodInfo] = []
        self._requests: IntArray = np.zeros((0, 0), dtype=np.int64)
        self._requested = np.zeros((0, 0), dtype=np.bool_)
        self._masks = np.zeros((0, self._size), dtype=np.bool_)
        self._rooms: IntArray = np.zeros((0, self._size), dtype=np.int64)
        #: Per shape id: how many pods of that shape fit now.
        self.totals: list[int] = []

    def register(self, pod: PodInfo) -> int:
        """The id of the pod's shape (all shapes must be registered before :meth:`build`)."""
        known = self._ids.get(pod.shape)
        if known is not None:
            return known
        self._ids[pod.shape] = len(self._pods)
        self._pods.append(pod)
        return len(self._pods) - 1

    def build(self) -> None:
        """Compute every shape's room from the snapshot as it is now."""
        for pod in self._pods:
            self._snapshot.request(pod)  # makes sure every requested resource has a column
        width = len(self._snapshot.columns)
        count = len(self._pods)
        self._requests = np.ones((count, width), dtype=np.int64)
        self._requested = np.zeros((count, width), dtype=np.bool_)
        self._masks = np.zeros((count, self._size), dtype=np.bool_)
        for shape, pod in enumerate(self._pods):
            for column, amount in self._snapshot.request(pod).items():
                if amount > 0:
                    self._requests[shape, column] = amount
                    self._requested[shape, column] = True
            self._masks[shape] = self._snapshot.static_mask(pod)[: self._size]
        self._rooms = np.zeros((count, self._size), dtype=np.int64)
        self.totals = [0] * count
        self._update(np.arange(self._size, dtype=np.intp))

    def touch(self, nodes: Iterable[str]) -> None:
        """What is allocated on these nodes changed: refresh their room."""
        slots = np.fromiter({self.slot_of[name] for name in nodes}, dtype=np.intp)
        if len(slots):
            self._update(slots)

    def room(self, shape: int) -> IntArray:
        """Per node slot, how many pods of the shape fit (a copy; tests)."""
        room: IntArray = self._rooms[shape].copy()
        return room

    def _update(self, slots: npt.NDArray[np.intp]) -> None:
        allocatable, used = self._snapshot.rows(slots)
        free = allocatable - used  # nodes x resources
        quotient = free[None, :, :] // self._requests[:, None, :]  # shapes x nodes x resources
        quotient = np.where(self._requested[:, None, :], quotient, _NO_LIMIT)
        room = np.maximum(quotient.min(axis=2), 0)
        room = np.where(self._masks[:, slots], room, 0)
        delta = (room - self._rooms[:, slots]).sum(axis=1)
        self._rooms[:, slots] = room
        if delta.any():
            self.totals = [t + d for t, d in zip(self.totals, delta.tolist(), strict=True)]
