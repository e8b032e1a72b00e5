"""A handler of a family of plain kinds: read each object, hand it to the core by key.

The volume kinds and the DRA kinds are each read into a core index the same
way: a parse error is a complaint, never fatal; a read object is put under
its key; a gone one is dropped. What differs is given: the family's parse
error, whether the core is told of each change, and whether an object that
turns unreadable is forgotten (what was known of it is stale).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

import structlog

from coscheduler.runtime.handlers.base import Complaints, InvalidObject, KeyedHandler, meta

__all__ = ["ReadingHandler"]

log = structlog.get_logger(__name__)

_Read = TypeVar("_Read")


class ReadingHandler(KeyedHandler[str], Generic[_Read]):
    """One kind: ``read`` each object, ``put`` it under ``key``, ``drop`` it when gone."""

    def __init__(
        self,
        kind: str,
        *,
        read: Callable[[Mapping[str, Any]], _Read],
        parse_error: type[Exception],
        key: Callable[[_Read], str],
        put: Callable[[_Read], None],
        drop: Callable[[str], None],
        complaints: Complaints,
        namespaced: bool = False,
        changed: Callable[[], None] | None = None,
        forget_unreadable: bool = False,
    ) -> None:
        self._kind = kind
        self._read = read
        self._parse_error = parse_error
        self._key = key
        self._put = put
        self._drop = drop
        self._complaints = complaints
        self._namespaced = namespaced
        self._changed = changed
        self._forget_unreadable = forget_unreadable
        self._keys: set[str] = set()

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None:
        super().replace(objects)
        self._tell()

    def upsert(self, raw: Mapping[str, Any]) -> str | None:
        try:
            read = self._read(raw)
        except self._parse_error as error:
            invalid = InvalidObject.of(self._kind, raw, error)
            log.warning("object skipped", kind=self._kind, name=invalid.name, error=invalid.message)
            self._complaints.invalid(invalid)
            key = self.key_of(raw)
            if self._forget_unreadable and key is not None and key in self._keys:
                self.forget(key)
            return None
        key = self._key(read)
        self._keys.add(key)
        self._put(read)
        self._tell()
        return key

    def known(self) -> Iterable[str]:
        return self._keys

    def forget(self, key: str) -> None:
        self._keys.discard(key)
        self._drop(key)
        self._tell()

    def key_of(self, raw: Mapping[str, Any]) -> str | None:
        fields = meta(raw)
        if self._namespaced:
            return f"{fields.get('namespace')}/{fields.get('name')}"
        return str(fields.get("name"))

    def _tell(self) -> None:
        if self._changed is not None:
            self._changed()
