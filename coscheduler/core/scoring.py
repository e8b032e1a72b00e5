"""Node ranking: pack gangs (most-allocated) or spread pods (least-allocated).

A node's score for a pod is the weighted sum, over the resources the pod
requests (``pods`` aside), of the fraction of the node's allocatable that
would be in use after placing it (most-allocated) or left free
(least-allocated). A pod that requests nothing else is ranked by the pod
count. Higher is better; ties go to the node whose name sorts first, so the
ranking is a total order and decisions are deterministic.

Most-allocated is the default for gangs: it fills nodes that are already in
use and keeps whole nodes free for the next gang. It also has a property the
planner uses: placing a pod on a node only raises that node's score, so a
node that was best for one pod of a shape stays best for the next until it
is full.

Scores are floats computed the same way, operation for operation, by
:func:`scores` (all nodes at once, NumPy) and :func:`score` (one node, plain
Python), so both give bit-identical results for amounts below 2**53.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from coscheduler.api.devices import DEVICE_CLASS_RESOURCE
from coscheduler.api.requests import POD_RESOURCE
from coscheduler.core.resources import ResourceColumns
from coscheduler.core.strategy import Strategy

__all__ = ["Scoring", "score", "scored_columns", "scores"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Scoring:
    """How nodes are ranked: the strategy, and per resource weights (default 1 each)."""

    strategy: Strategy = Strategy.MOST_ALLOCATED
    weights: Mapping[str, float] | None = None


def scored_columns(
    requests: Mapping[str, int],
    columns: ResourceColumns,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[int, float]]:
    """``(column, weight)`` of the resources that rank nodes for these requests."""
    chosen = [
        (columns.column(name), float((weights or {}).get(name, 1.0)))
        for name in sorted(requests)
        if name != POD_RESOURCE
        and requests[name] > 0
        and not name.startswith(DEVICE_CLASS_RESOURCE)
    ]
    chosen = [(column, weight) for column, weight in chosen if weight > 0]
    return chosen or [(columns.column(POD_RESOURCE), 1.0)]


def scores(
    strategy: Strategy,
    allocatable: IntArray,
    used: IntArray,
    request: Mapping[int, int],
    scored: Sequence[tuple[int, float]],
) -> FloatArray:
    """Scores of the nodes (rows) for a pod requesting ``request`` (column → amount)."""
    rows = allocatable.shape[0]
    total = np.zeros(rows, dtype=np.float64)
    for column, weight in scored:
        capacity = allocatable[:, column]
        after = used[:, column] + request.get(column, 0)
        numerator = after if strategy is Strategy.MOST_ALLOCATED else capacity - after
        # A node without this resource scores 0 for it (as :func:`score`), without
        # dividing by zero: cheaper than cleaning NaN and infinities afterwards.
        fraction = np.divide(
            numerator, capacity, out=np.zeros(rows, dtype=np.float64), where=capacity != 0
        )
        total = total + weight * fraction
    return total


def score(
    strategy: Strategy,
    allocatable: Sequence[int],
    used: Sequence[int],
    request: Mapping[int, int],
    scored: Sequence[tuple[int, float]],
) -> float:
    """The score of one node; ``allocatable`` and ``used`` are indexed by column."""
    total = 0.0
    for column, weight in scored:
        capacity = int(allocatable[column])
        after = int(used[column]) + request.get(column, 0)
        if capacity == 0:
            fraction = 0.0
        elif strategy is Strategy.MOST_ALLOCATED:
            fraction = after / capacity
        else:
            fraction = (capacity - after) / capacity
        total = total + weight * fraction
    return total
