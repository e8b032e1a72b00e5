"""Resource columns and how amounts read to a person.

The snapshot keeps allocatable and allocated amounts as integer matrices, one
column per resource name. :class:`ResourceColumns` hands out those columns:
the four that every node has come first, in a fixed order, and any other
(extended resources such as ``nvidia.com/gpu``, hugepages) is appended the
first time a node or a pod names it. Columns are never removed or reordered,
so a column number handed out stays valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from coscheduler.api.quantity import format_resource_list
from coscheduler.api.requests import POD_RESOURCE

__all__ = ["BASE_RESOURCES", "ResourceColumns", "format_amounts"]

#: Columns 0..3, always present.
BASE_RESOURCES: Final = ("cpu", "memory", "ephemeral-storage", POD_RESOURCE)


class ResourceColumns:
    """A stable mapping between resource names and matrix columns."""

    __slots__ = ("_columns", "_names")

    def __init__(self) -> None:
        self._names: list[str] = list(BASE_RESOURCES)
        self._columns: dict[str, int] = {name: i for i, name in enumerate(self._names)}

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def column(self, name: str) -> int:
        """The column of ``name``, creating it on first use."""
        column = self._columns.get(name)
        if column is None:
            column = len(self._names)
            self._names.append(name)
            self._columns[name] = column
        return column

    def name(self, column: int) -> str:
        return self._names[column]

    def ensure(self, names: Iterable[str]) -> bool:
        """Create columns for ``names``; True when any was new."""
        before = len(self._names)
        for name in names:
            self.column(name)
        return len(self._names) != before


def format_amounts(amounts: Mapping[str, int]) -> str:
    """``cpu=64 memory=256Gi``, resources in name order."""
    return " ".join(f"{name}={text}" for name, text in format_resource_list(dict(amounts)).items())
