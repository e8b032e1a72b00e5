"""PriorityClasses (``scheduling.k8s.io/v1``): a group's priority when its spec names a class."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from coscheduler.runtime.groups import Groups
from coscheduler.runtime.handlers.base import name_of

__all__ = ["PriorityClassHandler"]


class PriorityClassHandler:
    """Each class's value, given to the groups (whose policies name it)."""

    def __init__(self, groups: Groups) -> None:
        self._groups = groups

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None:
        self._groups.clear_priority_classes()
        for raw in objects:
            self.upsert(raw)

    def upsert(self, raw: Mapping[str, Any]) -> None:
        name, value = name_of(raw), raw.get("value")
        if name is not None:
            self._groups.set_priority_class(name, value if isinstance(value, int) else None)

    def remove(self, raw: Mapping[str, Any]) -> None:
        name = name_of(raw)
        if name is not None:
            self._groups.set_priority_class(name, None)
