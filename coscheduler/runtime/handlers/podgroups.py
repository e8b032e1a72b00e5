"""PodGroups, one handler per API read (``scheduling.sigs.k8s.io``, ``scheduling.x-k8s.io``,
Volcano's, T9k's, and Kubernetes' own ``scheduling.k8s.io``, whose groups are keyed apart).

Each object is read through its API's adapter into one
:class:`~coscheduler.api.adapters.GroupObject` and kept in
:class:`~coscheduler.runtime.groups.Groups`, which says which API wins a
name held in two. An event that changes only the status (most often our own
write coming back) teaches the queue nothing: a status someone else wrote is
put right, nothing else. A PodGroup that cannot be read counts as missing,
and its pods say why it cannot be read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog
from pydantic import ValidationError

from coscheduler.api import validation
from coscheduler.api.adapters.base import GroupAdapter, GroupObject
from coscheduler.api.native_podgroup import GROUP as NATIVE_GROUP
from coscheduler.api.podgroup import PodGroupStatus
from coscheduler.core.group import KIND_NATIVE_POD_GROUP, KIND_POD_GROUP, GroupKey
from coscheduler.runtime.groups import Groups
from coscheduler.runtime.handlers.base import Complaints, InvalidObject, meta

__all__ = ["PodGroupHandler"]

log = structlog.get_logger(__name__)


def group_key(raw: Mapping[str, Any], kind: str = KIND_POD_GROUP) -> GroupKey:
    fields = meta(raw)
    return GroupKey(str(fields.get("namespace", "")), str(fields.get("name", "")), kind)


def key_kind(adapter: GroupAdapter) -> str:
    """Kubernetes' own PodGroups are a kind of key apart: pods name them by a field, not a label."""
    return KIND_NATIVE_POD_GROUP if adapter.api.group == NATIVE_GROUP else KIND_POD_GROUP


class PodGroupHandler:
    """The PodGroups of one API."""

    def __init__(
        self,
        adapter: GroupAdapter,
        groups: Groups,
        complaints: Complaints,
        *,
        refeed: Callable[[Iterable[str]], None],
        namespaces: frozenset[str] = frozenset(),
    ) -> None:
        self.adapter = adapter
        self._kind = key_kind(adapter)
        self._groups = groups
        #: Feeds in again the pods whose native PodGroup changed composite.
        self._refeed = refeed
        self._complaints = complaints
        self._namespaces = namespaces

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """A fresh list of every PodGroup of the API: forget the ones it no longer has."""
        known = self._groups.known(self.adapter.api)
        seen: set[GroupKey] = set()
        for raw in objects:
            self.upsert(raw)
            seen.add(group_key(raw, self._kind))
        for key in known - seen:
            self._moved(self._groups.remove(self.adapter, key))

    def upsert(self, raw: Mapping[str, Any]) -> GroupKey | None:
        adapter, key = self.adapter, group_key(raw, self._kind)
        if self._namespaces and key.namespace not in self._namespaces:
            # Another instance may own it: never write its status or events.
            return None
        known = self._groups.of_api(adapter.api, key)
        if known is not None and _same_generation(known.metadata, meta(raw)):
            wire = raw.get("status") or {}
            stored = adapter.stored_form(wire)
            if stored is not None:
                if stored != known.stored:
                    status = _read(adapter, wire, known)
                    self._moved(self._groups.store(adapter, key, known.with_status(status, stored)))
                return key
        try:
            group = adapter.parse(raw)
        except ValueError as error:
            # The CRD's schema should have refused this object; it may predate it.
            if isinstance(error, ValidationError):
                message = "; ".join(validation.problems(error, with_input=False))
            else:
                message = str(error)
            log.warning("PodGroup skipped", group=str(key), api=str(adapter.api), error=message)
            self._complaints.invalid(
                InvalidObject(
                    adapter.api.kind,
                    key.namespace,
                    key.name,
                    str(meta(raw).get("uid", "")),
                    message,
                    adapter.api.api_version,
                )
            )
            self._moved(self._groups.refuse(adapter, key, message))
            return None
        # A CRD without a /status subresource (Volcano's) counts a status write
        # as a new generation: only what the group's policy reads is a change,
        # and a status the server holds as we last knew it keeps ours in full
        # (read back through a poorer shape, it would lose what it cannot hold).
        changed = known is None or _policy_inputs(known) != _policy_inputs(group)
        if known is not None and group.stored is not None and group.stored == known.stored:
            group = group.with_status(known.status, known.stored)
        self._moved(self._groups.store(adapter, key, group, spec_changed=changed))
        return key

    def remove(self, raw: Mapping[str, Any]) -> None:
        self._moved(self._groups.remove(self.adapter, group_key(raw, self._kind)))

    def _moved(self, uids: tuple[str, ...]) -> None:
        if uids:
            self._refeed(uids)


def _read(adapter: GroupAdapter, wire: Mapping[str, Any], known: GroupObject) -> PodGroupStatus:
    """A status someone else wrote, as ours; what its shape cannot hold is kept from before."""
    try:
        status = adapter.read_status(wire)
    except ValueError:
        return known.status
    if not status.conditions and known.status.conditions:
        status = status.model_copy(update={"conditions": known.status.conditions})
    return status


def _policy_inputs(group: GroupObject) -> tuple[object, ...]:
    """What the core's policy of a group is made from."""
    return (group.spec, group.uid, group.creation_timestamp, group.metadata.get("annotations"))


def _same_generation(known: Mapping[str, Any], fields: Mapping[str, Any]) -> bool:
    """The same object with the same spec: a status write does not bump ``generation``."""
    generation = fields.get("generation")
    return (
        generation is not None
        and known.get("generation") == generation
        and known.get("uid") == fields.get("uid")
        and known.get("deletionTimestamp") == fields.get("deletionTimestamp")
    )
