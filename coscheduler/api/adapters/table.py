"""The table of adapters: each PodGroup API of :data:`~coscheduler.api.adapters.apis.PODGROUPS`
with the adapter that reads it, in that order (see :mod:`coscheduler.api.adapters`)."""

from __future__ import annotations

from typing import Final

from coscheduler.api.adapters import apis, native, sigs
from coscheduler.api.adapters.base import GroupAdapter
from coscheduler.api.adapters.deferred import DeferredAdapter

__all__ = ["ADAPTERS"]

ADAPTERS: Final[tuple[GroupAdapter, ...]] = (
    sigs.ADAPTER,
    DeferredAdapter(apis.XK8S, "coscheduler.api.adapters.xk8s"),
    DeferredAdapter(apis.VOLCANO, "coscheduler.api.adapters.volcano"),
    DeferredAdapter(apis.T9K, "coscheduler.api.adapters.t9k"),
    *native.ADAPTERS,
)

# The table of kinds reads apis.PODGROUPS before this module is imported: the two agree.
if tuple(adapter.api for adapter in ADAPTERS) != apis.PODGROUPS:
    raise ImportError("ADAPTERS and apis.PODGROUPS name different APIs, or in another order")
