"""What every handler shares: the contract, the unreadable object, reading metadata.

A :class:`Handler` is one kind's way in (a Kubernetes informer's event
handlers): ``replace`` with a fresh list, ``upsert`` an added or modified
object, ``remove`` a deleted one. It reads the raw object once, feeds the
core through the :class:`~coscheduler.core.scheduler.Scheduler`'s public
upsert/remove methods, and keeps what the runtime needs of the kind. It
decides nothing. An object that cannot be read becomes an
:class:`InvalidObject` told to a :class:`Complaints` (the reporter turns it
into an Event, and for a pod of ours a condition), never an exception: one
bad object must not stop the others.
"""

from __future__ import annotations

import abc
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import structlog

__all__ = [
    "Complaints",
    "Handler",
    "InvalidObject",
    "KeyedHandler",
    "NamespacedHandler",
    "ObjectName",
    "meta",
    "name_of",
]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class InvalidObject:
    """An object that could not be read, with the reason in a person's words."""

    kind: str
    namespace: str
    name: str
    uid: str
    message: str
    #: The object's apiVersion, where its kind alone does not say it (a PodGroup).
    api_version: str = ""
    #: A pod of ours not bound yet: it waits, and its condition must say why.
    waiting: bool = False

    @classmethod
    def of(
        cls, kind: str, raw: Mapping[str, Any], error: Exception, *, api_version: str = ""
    ) -> InvalidObject:
        """The object as far as its metadata can be read, and what is wrong with it."""
        fields = meta(raw)
        return cls(
            kind,
            str(fields.get("namespace", "")),
            str(fields.get("name", "")),
            str(fields.get("uid", "")),
            str(error),
            api_version or str(raw.get("apiVersion", "")),
        )


class Complaints(Protocol):
    """Where handlers tell what they cannot read (the runtime's reporter)."""

    def invalid(self, obj: InvalidObject) -> None: ...


def meta(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """An object's metadata, or nothing when it has none that reads."""
    fields = raw.get("metadata")
    return fields if isinstance(fields, Mapping) else {}


def name_of(raw: Mapping[str, Any]) -> str | None:
    name = meta(raw).get("name")
    return name if isinstance(name, str) else None


class Handler(Protocol):
    """One kind's way in: a fresh list, an added or modified object, a deleted one."""

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None: ...
    def upsert(self, raw: Mapping[str, Any]) -> object: ...
    def remove(self, raw: Mapping[str, Any]) -> None: ...


_Key = TypeVar("_Key", bound=Hashable)


class KeyedHandler(abc.ABC, Generic[_Key]):
    """A handler whose objects have a key: ``replace`` forgets the keys a list lacks.

    What it knew is read before the list is applied: a key it held that the
    list lacks was deleted while nobody watched.
    """

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None:
        known = list(self.known())
        seen = {key for raw in objects if (key := self.upsert(raw)) is not None}
        for key in known:
            if key not in seen:
                self.forget(key)

    def remove(self, raw: Mapping[str, Any]) -> None:
        key = self.key_of(raw)
        if key is not None:
            self.forget(key)

    @abc.abstractmethod
    def upsert(self, raw: Mapping[str, Any]) -> _Key | None:
        """Read and feed in one object; its key, or None when it was not taken."""

    @abc.abstractmethod
    def known(self) -> Iterable[_Key]:
        """The keys fed in so far."""

    @abc.abstractmethod
    def forget(self, key: _Key) -> None:
        """The object of ``key`` is gone."""

    @abc.abstractmethod
    def key_of(self, raw: Mapping[str, Any]) -> _Key | None:
        """A deleted object's key, as far as it can be read."""


#: A namespaced object's namespace and name.
ObjectName = tuple[str, str]

_Read = TypeVar("_Read")


class NamespacedHandler(KeyedHandler[ObjectName], Generic[_Read]):
    """A namespaced kind read by one function (:meth:`read`), then taken (:meth:`take`).

    An object outside ``namespaces`` (when given) is not taken; one that does not
    read is told to ``complaints`` and forgotten, as if deleted: what the older
    version fed in must not outlive it.
    """

    #: The kind, as events and logs name it.
    kind: str
    #: The kind's apiVersion where it alone does not say it (several APIs share the kind).
    api_version: str = ""

    def __init__(self, complaints: Complaints, *, namespaces: frozenset[str]) -> None:
        self._complaints = complaints
        self._namespaces = namespaces

    def upsert(self, raw: Mapping[str, Any]) -> ObjectName | None:
        where = self.key_of(raw)
        if self._namespaces and where[0] not in self._namespaces:
            return None
        try:
            read = self.read(raw)
        except ValueError as error:
            log.warning(f"{self.kind} skipped", name="/".join(where), error=str(error))
            self._complaints.invalid(
                InvalidObject.of(self.kind, raw, error, api_version=self.api_version)
            )
            self.forget(where)
            return None
        self.take(where, read, raw)
        return where

    def key_of(self, raw: Mapping[str, Any]) -> ObjectName:
        fields = meta(raw)
        return (str(fields.get("namespace", "")), str(fields.get("name", "")))

    @abc.abstractmethod
    def read(self, raw: Mapping[str, Any]) -> _Read:
        """The object as the kind's adapter reads it; ValueError when it does not read."""

    @abc.abstractmethod
    def take(self, where: ObjectName, read: _Read, raw: Mapping[str, Any]) -> None:
        """Feed in the object read."""
