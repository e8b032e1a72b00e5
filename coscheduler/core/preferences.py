"""Weighing what a pod prefers, as kube-scheduler's scoring plugins do.

Three preferences, each scored 0-100 over the candidate nodes and weighted 2
(kube-scheduler's default plugin weights; the resource score counts 1):

- **preferred node affinity** (NodeAffinity): the sum of the weights of the
  terms a node matches, scaled so the best node scores 100;
- **preferred pod affinity and anti-affinity** (InterPodAffinity): for each
  term, its weight times the pods it selects in the node's domain, added for
  affinity and taken away for anti-affinity, scaled between the worst and the
  best node;
- **ScheduleAnyway spread** (PodTopologySpread): the pods each constraint
  counts in the node's domain, fewer is better, scaled the same way (a node
  without the key counts as the fullest domain).

The verdicts are kept for a run of identical pods and updated as its pods
are placed (:meth:`RunPreferences.placed`): a pod that matches its own
preferred anti-affinity pushes the next one to another domain, as placing
them one by one through kube-scheduler would. Running pods' own preferred
terms towards the pod are not weighed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["PREFERENCE_WEIGHT", "DomainTally", "RunPreferences"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: The weight of each preference's 0-100 score beside the resource score's 0-100.
PREFERENCE_WEIGHT = 2.0


@dataclass(slots=True)
class DomainTally:
    """One preferred pod term or soft spread constraint, at the candidate slots."""

    #: The domain id of each candidate slot (-1: the node has no such label).
    domains: IntArray
    #: Per domain id, the pods counted there.
    counts: IntArray
    #: Signed weight: +w for affinity, -w for anti-affinity, -1 for spread.
    weight: float
    #: Whether the run's own pods count (the term or constraint selects them).
    self_match: bool

    def raw(self) -> FloatArray:
        known = self.domains >= 0
        values = np.zeros(len(self.domains), dtype=np.float64)
        values[known] = self.counts[self.domains[known]]
        if self.weight < 0 and not known.all():
            # For spread, a node outside every domain is no better than the fullest.
            values[~known] = values[known].max() if known.any() else 0.0
        return values * self.weight


class RunPreferences:
    """Preference scores of a run's candidate slots, kept current as its pods are placed."""

    __slots__ = ("_nodes", "_pods", "_spread")

    def __init__(self, nodes: FloatArray, pods: list[DomainTally], spread: list[DomainTally]):
        self._nodes = _scaled_by_best(nodes)
        self._pods = pods
        self._spread = spread

    def scores(self) -> FloatArray:
        """The weighted preference score of each candidate slot (0-600)."""
        total = self._nodes.copy()
        for tallies in (self._pods, self._spread):
            if tallies:
                total += _scaled_between(np.sum([tally.raw() for tally in tallies], axis=0))
        return total * PREFERENCE_WEIGHT

    def placed(self, index: int) -> None:
        """One pod of the run went to the candidate at ``index``."""
        for tally in (*self._pods, *self._spread):
            domain = tally.domains[index]
            if tally.self_match and domain >= 0:
                tally.counts[domain] += 1


def _scaled_by_best(raw: FloatArray) -> FloatArray:
    best = raw.max() if len(raw) else 0.0
    return raw * (100.0 / best) if best > 0 else np.zeros(len(raw), dtype=np.float64)


def _scaled_between(raw: FloatArray) -> FloatArray:
    low, high = (raw.min(), raw.max()) if len(raw) else (0.0, 0.0)
    if high <= low:
        return np.zeros(len(raw), dtype=np.float64)
    return (raw - low) * (100.0 / (high - low))
