"""``--preemption``: whether and how the scheduler evicts running gangs for a waiting one."""

from __future__ import annotations

import enum

__all__ = ["Mode"]


class Mode(enum.StrEnum):
    """``--preemption``: evict, only say what would be evicted, or neither."""

    ON = "on"
    DRY_RUN = "dry-run"
    OFF = "off"
