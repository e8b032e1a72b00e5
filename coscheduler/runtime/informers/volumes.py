"""The volume kinds, one family: PersistentVolumeClaims, PersistentVolumes, StorageClasses
and CSINodes, read into the core's volume index (and each node's attach limits).

Each change tells the core (``volumes_changed``), so groups waiting on a claim
that is not ready are looked at again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from coscheduler.api.fields import ObjectParseError
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.informers.base import Complaints
from coscheduler.runtime.informers.reading import ReadingInformer

if TYPE_CHECKING:
    from coscheduler.api.volumes import AttachLimits, ClaimInfo, StorageClassInfo, VolumeInfo

__all__ = ["VolumeInformers"]


def _reader(kind: str) -> Callable[[Mapping[str, Any]], Any]:
    """``kind.from_object`` of :mod:`coscheduler.api.volumes`, imported with the first
    object read: a cluster without volumes never loads it (issue #28). Its readers
    raise only its ``VolumeParseError``, an :class:`ObjectParseError`."""

    def read(raw: Mapping[str, Any]) -> Any:
        from coscheduler.api import volumes

        return getattr(volumes, kind).from_object(raw)

    return read


class VolumeInformers:
    """The four informers of the volume family, over one scheduler."""

    def __init__(self, scheduler: Scheduler, complaints: Complaints) -> None:
        index = scheduler.volumes
        changed = scheduler.volumes_changed

        def limits(limits: AttachLimits) -> None:
            scheduler.set_attach_limits(limits.node, limits.limits)

        def no_limits(node: str) -> None:
            scheduler.set_attach_limits(node, None)

        self.claims: ReadingInformer[ClaimInfo] = ReadingInformer(
            "PersistentVolumeClaim",
            read=_reader("ClaimInfo"),
            parse_error=ObjectParseError,
            key=lambda claim: claim.key,
            put=index.upsert_claim,
            drop=index.remove_claim,
            changed=changed,
            complaints=complaints,
            namespaced=True,
        )
        self.volumes: ReadingInformer[VolumeInfo] = ReadingInformer(
            "PersistentVolume",
            read=_reader("VolumeInfo"),
            parse_error=ObjectParseError,
            key=lambda volume: volume.name,
            put=index.upsert_volume,
            drop=index.remove_volume,
            changed=changed,
            complaints=complaints,
        )
        self.storage_classes: ReadingInformer[StorageClassInfo] = ReadingInformer(
            "StorageClass",
            read=_reader("StorageClassInfo"),
            parse_error=ObjectParseError,
            key=lambda storage_class: storage_class.name,
            put=index.upsert_class,
            drop=index.remove_class,
            changed=changed,
            complaints=complaints,
        )
        # A CSINode changes limits, not the index: the core requeues on its own.
        self.csinodes: ReadingInformer[AttachLimits] = ReadingInformer(
            "CSINode",
            read=_reader("AttachLimits"),
            parse_error=ObjectParseError,
            key=lambda limits: limits.node,
            put=limits,
            drop=no_limits,
            changed=lambda: None,
            complaints=complaints,
        )
