"""Namespaces (``/api/v1/namespaces``): their labels, for pod affinity's ``namespaceSelector``
and a Queue's ``namespaceSelector``; and which exist, for the controller's followers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import KeyedHandler, meta, name_of

__all__ = ["NamespaceHandler"]


class NamespaceHandler(KeyedHandler[str]):
    def __init__(
        self, scheduler: Scheduler, changed: Callable[[str], None] = lambda _name: None
    ) -> None:
        self._scheduler = scheduler
        #: Told each namespace that came, changed or went (the controller's followers).
        self._changed = changed
        #: Each namespace's resourceVersion ("" when it has none).
        self._versions: dict[str, str] = {}

    def upsert(self, raw: Mapping[str, Any]) -> str | None:
        fields = meta(raw)
        name, labels = fields.get("name"), fields.get("labels") or {}
        if not isinstance(name, str) or not isinstance(labels, Mapping):
            return None
        self._versions[name] = str(fields.get("resourceVersion") or "")
        self._scheduler.upsert_namespace(name, {str(k): str(v) for k, v in labels.items()})
        self._changed(name)
        return name

    def known(self) -> Iterable[str]:
        return self._versions

    def version(self, name: str) -> str | None:
        """The namespace's resourceVersion as last read; None once it is gone."""
        return self._versions.get(name)

    def forget(self, key: str) -> None:
        self._versions.pop(key, None)
        self._scheduler.remove_namespace(key)
        self._changed(key)

    def key_of(self, raw: Mapping[str, Any]) -> str | None:
        return name_of(raw)
