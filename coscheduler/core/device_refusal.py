"""A device's key and the refusal of a member's claims: what the rest of the core catches.

Apart from :mod:`~coscheduler.core.device_search` so that catching a refusal
(the planner, the pipeline) does not import the search and the CEL runtime
behind it: those load with the first claim a member asks for (issue #28).
"""

from __future__ import annotations

__all__ = ["DeviceKey", "DeviceRefusalError"]

#: (driver, pool, device): a device cluster-wide.
DeviceKey = tuple[str, str, str]


class DeviceRefusalError(Exception):
    """Why a member's claims cannot be satisfied on a node (or anywhere)."""

    def __init__(self, reason: str, *, anywhere: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        #: True when no node can help (a missing claim or class, a CEL error).
        self.anywhere = anywhere
