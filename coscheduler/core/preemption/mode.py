"""``--preemption``: its own module, so the settings read it without the search (issue #28)."""

from __future__ import annotations

import enum

__all__ = ["Mode"]


class Mode(enum.StrEnum):
    """``--preemption``: evict, only say what would be evicted, or neither."""

    ON = "on"
    DRY_RUN = "dry-run"
    OFF = "off"
