"""The volume kinds, one family: PersistentVolumeClaims, PersistentVolumes, StorageClasses
and CSINodes, read into the core's volume index (and each node's attach limits).

Each change tells the core (``volumes_changed``), so groups waiting on a claim
that is not ready are looked at again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

import structlog

from coscheduler.api.volumes import (
    AttachLimits,
    ClaimInfo,
    StorageClassInfo,
    VolumeInfo,
    VolumeParseError,
)
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.informers.base import Complaints, InvalidObject, KeyedInformer, meta

__all__ = ["VolumeInformers"]

log = structlog.get_logger(__name__)

_Read = TypeVar("_Read")


class _VolumeInformer(KeyedInformer[str], Generic[_Read]):
    """One volume kind: read each object, put it in the index, tell the core."""

    def __init__(
        self,
        kind: str,
        *,
        read: Callable[[Mapping[str, Any]], _Read],
        key: Callable[[_Read], str],
        put: Callable[[_Read], None],
        drop: Callable[[str], None],
        changed: Callable[[], None],
        complaints: Complaints,
        namespaced: bool = False,
    ) -> None:
        self._kind = kind
        self._read = read
        self._key = key
        self._put = put
        self._drop = drop
        self._changed = changed
        self._complaints = complaints
        self._namespaced = namespaced
        self._keys: set[str] = set()

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None:
        super().replace(objects)
        self._changed()

    def upsert(self, raw: Mapping[str, Any]) -> str | None:
        try:
            read = self._read(raw)
        except VolumeParseError as error:
            invalid = InvalidObject.of(self._kind, raw, error)
            log.warning("object skipped", kind=self._kind, name=invalid.name, error=invalid.message)
            self._complaints.invalid(invalid)
            return None
        key = self._key(read)
        self._keys.add(key)
        self._put(read)
        self._changed()
        return key

    def known(self) -> Iterable[str]:
        return self._keys

    def forget(self, key: str) -> None:
        self._keys.discard(key)
        self._drop(key)
        self._changed()

    def key_of(self, raw: Mapping[str, Any]) -> str | None:
        fields = meta(raw)
        if self._namespaced:
            return f"{fields.get('namespace')}/{fields.get('name')}"
        return str(fields.get("name"))


class VolumeInformers:
    """The four informers of the volume family, over one scheduler."""

    def __init__(self, scheduler: Scheduler, complaints: Complaints) -> None:
        index = scheduler.volumes
        changed = scheduler.volumes_changed

        def limits(limits: AttachLimits) -> None:
            scheduler.set_attach_limits(limits.node, limits.limits)

        def no_limits(node: str) -> None:
            scheduler.set_attach_limits(node, None)

        self.claims = _VolumeInformer[ClaimInfo](
            "PersistentVolumeClaim",
            read=ClaimInfo.from_object,
            key=lambda claim: claim.key,
            put=index.upsert_claim,
            drop=index.remove_claim,
            changed=changed,
            complaints=complaints,
            namespaced=True,
        )
        self.volumes = _VolumeInformer[VolumeInfo](
            "PersistentVolume",
            read=VolumeInfo.from_object,
            key=lambda volume: volume.name,
            put=index.upsert_volume,
            drop=index.remove_volume,
            changed=changed,
            complaints=complaints,
        )
        self.storage_classes = _VolumeInformer[StorageClassInfo](
            "StorageClass",
            read=StorageClassInfo.from_object,
            key=lambda storage_class: storage_class.name,
            put=index.upsert_class,
            drop=index.remove_class,
            changed=changed,
            complaints=complaints,
        )
        # A CSINode changes limits, not the index: the core requeues on its own.
        self.csinodes = _VolumeInformer[AttachLimits](
            "CSINode",
            read=AttachLimits.from_object,
            key=lambda limits: limits.node,
            put=limits,
            drop=no_limits,
            changed=lambda: None,
            complaints=complaints,
        )
