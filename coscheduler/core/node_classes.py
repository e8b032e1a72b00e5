"""Nodes grouped into classes that static filters judge once, and the cached verdicts.

Filters 1-3 (cordon, taints, affinity) read only what a node *is*. Nodes with
equal taints and cordon share a taint class, nodes with equal labels a label
class; a class is judged once per set of tolerations (or of selectors) and the
verdict kept, so a new node or a new pod shape costs one evaluation per class,
not per node. Class ids are recycled when their last node leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np
import numpy.typing as npt

from coscheduler.api.node import NodeInfo

__all__ = ["ClassVerdicts", "NodeClasses"]

BoolArray = npt.NDArray[np.bool_]


class NodeClasses:
    """Interned keys with reference counts; ids are recycled when unused."""

    __slots__ = ("_free", "_ids", "keys", "refs", "samples")

    def __init__(self) -> None:
        self._ids: dict[Hashable, int] = {}
        self._free: list[int] = []
        self.keys: list[Hashable | None] = []
        self.refs: list[int] = []
        self.samples: list[NodeInfo | None] = []

    def acquire(self, key: Hashable, node: NodeInfo) -> tuple[int, bool]:
        """The class id of ``key``; True when the id is new or recycled."""
        known = self._ids.get(key)
        if known is not None:
            self.refs[known] += 1
            return known, False
        if self._free:
            new = self._free.pop()
            self.keys[new], self.refs[new], self.samples[new] = key, 1, node
        else:
            new = len(self.keys)
            self.keys.append(key)
            self.refs.append(1)
            self.samples.append(node)
        self._ids[key] = new
        return new, True

    def release(self, class_id: int) -> None:
        self.refs[class_id] -= 1
        if self.refs[class_id] == 0:
            del self._ids[self.keys[class_id]]
            self.keys[class_id] = None
            self.samples[class_id] = None
            self._free.append(class_id)

    def __len__(self) -> int:
        return len(self.keys)


class ClassVerdicts:
    """Cached filter verdicts per class id: -1 unknown, 0 refused, 1 accepted."""

    __slots__ = ("_by_key", "classes")

    def __init__(self, classes: NodeClasses) -> None:
        self.classes = classes
        self._by_key: dict[Hashable, npt.NDArray[np.int8]] = {}

    def forget_class(self, class_id: int) -> None:
        for verdicts in self._by_key.values():
            if class_id < len(verdicts):
                verdicts[class_id] = -1

    def mask(self, key: Hashable, accepts: Callable[[NodeInfo], bool]) -> BoolArray:
        """Per class id, whether the class accepts pods with this ``key``."""
        size = len(self.classes)
        verdicts = self._by_key.get(key)
        if verdicts is None or len(verdicts) < size:
            grown = np.full(max(size, 1), -1, dtype=np.int8)
            if verdicts is not None:
                grown[: len(verdicts)] = verdicts
            verdicts = grown
            self._by_key[key] = verdicts
        unknown = np.flatnonzero(verdicts[:size] < 0)
        for class_id in unknown.tolist():
            sample = self.classes.samples[class_id]
            verdicts[class_id] = 0 if sample is None or not accepts(sample) else 1
        return verdicts[:size] > 0
