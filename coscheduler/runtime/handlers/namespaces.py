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
        self._names: set[str] = set()

    def upsert(self, raw: Mapping[str, Any]) -> str | None:
        fields = meta(raw)
        name, labels = fields.get("name"), fields.get("labels") or {}
        if not isinstance(name, str) or not isinstance(labels, Mapping):
            return None
        self._names.add(name)
        self._scheduler.upsert_namespace(name, {str(k): str(v) for k, v in labels.items()})
        self._changed(name)
        return name

    def known(self) -> Iterable[str]:
        return self._names

    def forget(self, key: str) -> None:
        self._names.discard(key)
        self._scheduler.remove_namespace(key)
        self._changed(key)

    def key_of(self, raw: Mapping[str, Any]) -> str | None:
        return name_of(raw)
