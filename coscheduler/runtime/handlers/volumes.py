"""The volume kinds, one family: PersistentVolumeClaims, PersistentVolumes, StorageClasses
and CSINodes, read into the core's volume index (and each node's attach limits).

Each change tells the core (``volumes_changed``), so groups waiting on a claim
that is not ready are looked at again.
"""

from __future__ import annotations

from coscheduler.api.fields import ObjectParseError
from coscheduler.api.volumes import AttachLimits, ClaimInfo, StorageClassInfo, VolumeInfo
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import Complaints
from coscheduler.runtime.handlers.reading import ReadingHandler

__all__ = ["VolumeHandlers"]


class VolumeHandlers:
    """The four handlers of the volume family, over one scheduler."""

    def __init__(self, scheduler: Scheduler, complaints: Complaints) -> None:
        index = scheduler.volumes
        changed = scheduler.volumes_changed

        def limits(limits: AttachLimits) -> None:
            scheduler.set_attach_limits(limits.node, limits.limits)

        def no_limits(node: str) -> None:
            scheduler.set_attach_limits(node, None)

        self.claims: ReadingHandler[ClaimInfo] = ReadingHandler(
            "PersistentVolumeClaim",
            read=ClaimInfo.from_object,
            parse_error=ObjectParseError,
            key=lambda claim: claim.key,
            put=index.upsert_claim,
            drop=index.remove_claim,
            changed=changed,
            complaints=complaints,
            namespaced=True,
        )
        self.volumes: ReadingHandler[VolumeInfo] = ReadingHandler(
            "PersistentVolume",
            read=VolumeInfo.from_object,
            parse_error=ObjectParseError,
            key=lambda volume: volume.name,
            put=index.upsert_volume,
            drop=index.remove_volume,
            changed=changed,
            complaints=complaints,
        )
        self.storage_classes: ReadingHandler[StorageClassInfo] = ReadingHandler(
            "StorageClass",
            read=StorageClassInfo.from_object,
            parse_error=ObjectParseError,
            key=lambda storage_class: storage_class.name,
            put=index.upsert_class,
            drop=index.remove_class,
            changed=changed,
            complaints=complaints,
        )
        # A CSINode changes limits, not the index: the core requeues on its own.
        self.csinodes: ReadingHandler[AttachLimits] = ReadingHandler(
            "CSINode",
            read=AttachLimits.from_object,
            parse_error=ObjectParseError,
            key=lambda limits: limits.node,
            put=limits,
            drop=no_limits,
            changed=lambda: None,
            complaints=complaints,
        )
