"""Why nodes refused a pod: what a failure message is made of."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Diagnosis"]


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Why nodes refused one pod: the node count and a reason histogram.

    ``by_filter`` counts the nodes refused by each filter (a node is refused
    by the first failing filter, but may carry several resource reasons).
    """

    nodes: int
    available: int
    reasons: Mapping[str, int]
    by_filter: Mapping[str, int]

    @property
    def filter(self) -> str | None:
        """The filter that refused the most nodes (ties: first in name order)."""
        if not self.by_filter:
            return None
        return min(self.by_filter, key=lambda name: (-self.by_filter[name], name))
