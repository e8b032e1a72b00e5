"""An adapter named by its module, imported when it is first used (issue #28).

A PodGroup API that the cluster does not serve, or serves with no objects,
never needs its adapter's models: :class:`DeferredAdapter` stands in the
table of adapters with the API's name (light, read at start: discovery and
the table of kinds ask only for ``api``) and imports the adapter's module on
the first call that reads or writes an object. The module's ``ADAPTER`` must
serve the same API (checked then).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from coscheduler.api.adapters.base import GroupAdapter, GroupApi, GroupObject

if TYPE_CHECKING:
    from coscheduler.api.pod import PodInfo
    from coscheduler.api.podgroup import PodGroupStatus

__all__ = ["DeferredAdapter"]


class DeferredAdapter:
    """``module``'s ``ADAPTER``, which serves ``api``, imported on first use."""

    __slots__ = ("_adapter", "api", "module")

    def __init__(self, api: GroupApi, module: str) -> None:
        self.api = api
        self.module = module
        self._adapter: GroupAdapter | None = None

    def load(self) -> GroupAdapter:
        """The adapter itself (its module imported the first time)."""
        if self._adapter is None:
            adapter: GroupAdapter = importlib.import_module(self.module).ADAPTER
            if adapter.api != self.api:
                raise RuntimeError(f"{self.module}.ADAPTER serves {adapter.api}, not {self.api}")
            self._adapter = adapter
        return self._adapter

    @property
    def loaded(self) -> bool:
        return self._adapter is not None

    @property
    def shared(self) -> bool:
        return self.load().shared

    def parse(self, raw: Mapping[str, Any]) -> GroupObject:
        return self.load().parse(raw)

    def read_status(self, wire: Mapping[str, Any]) -> PodGroupStatus:
        return self.load().read_status(wire)

    def stored_form(self, wire: Mapping[str, Any]) -> object:
        return self.load().stored_form(wire)

    def conclude(self, status: PodGroupStatus) -> PodGroupStatus:
        return self.load().conclude(status)

    def render_status(self, status: PodGroupStatus, members: Sequence[PodInfo]) -> dict[str, Any]:
        return self.load().render_status(status, members)

    def __repr__(self) -> str:
        return f"DeferredAdapter({self.api}, {self.module!r}, loaded={self.loaded})"
