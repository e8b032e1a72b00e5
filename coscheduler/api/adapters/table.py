"""The table of adapters: each PodGroup API of :data:`~coscheduler.api.adapters.apis.PODGROUPS`
with the adapter that reads it, in that order (see :mod:`coscheduler.api.adapters`)."""

from __future__ import annotations

from typing import Final

from coscheduler.api.adapters import apis, native, sigs, t9k, volcano, xk8s
from coscheduler.api.adapters.base import GroupAdapter

__all__ = ["ADAPTERS"]

ADAPTERS: Final[tuple[GroupAdapter, ...]] = (
    sigs.ADAPTER,
    xk8s.ADAPTER,
    volcano.ADAPTER,
    t9k.ADAPTER,
    *native.ADAPTERS,
)

# apis.PODGROUPS (the table of kinds, discovery) names the same APIs in the same order.
if tuple(adapter.api for adapter in ADAPTERS) != apis.PODGROUPS:
    raise ImportError("ADAPTERS and apis.PODGROUPS name different APIs, or in another order")
