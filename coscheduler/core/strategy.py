"""The ways nodes can be ranked: one enum for the core, the settings and the flags.

Values are spelled as users write them (``--score-strategy most-allocated``),
so nothing translates between two vocabularies.
"""

from __future__ import annotations

import enum

__all__ = ["Strategy"]


class Strategy(enum.StrEnum):
    """How nodes are ranked for a pod that fits on several (values as flags spell them)."""

    #: Pack: prefer the fullest nodes, keeping whole nodes free for the next gang.
    MOST_ALLOCATED = "most-allocated"
    #: Spread: prefer the emptiest nodes.
    LEAST_ALLOCATED = "least-allocated"

    @property
    def packs(self) -> bool:
        """True when placing a pod never lowers the chosen node's rank."""
        return self is Strategy.MOST_ALLOCATED
