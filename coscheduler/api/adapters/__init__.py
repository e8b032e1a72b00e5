"""The PodGroup APIs coscheduler reads, each behind an adapter to the one group model.

``ADAPTERS`` is in order of precedence: when a namespace holds a PodGroup of
the same name in two APIs, the first one's is the group (ours, so that a
group a person wrote for coscheduler is never overridden by one an operator
generated), and the other is left alone, its status unwritten.
"""

from __future__ import annotations

from typing import Final

from coscheduler.api.adapters import sigs, xk8s
from coscheduler.api.adapters.base import GroupAdapter, GroupApi, GroupObject

__all__ = ["ADAPTERS", "GroupAdapter", "GroupApi", "GroupObject"]

ADAPTERS: Final[tuple[GroupAdapter, ...]] = (sigs.ADAPTER, xk8s.ADAPTER)
