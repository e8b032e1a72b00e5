"""The DRA kinds, one family: ResourceSlices, DeviceClasses, ResourceClaims and
ResourceClaimTemplates (``resource.k8s.io/v1``), read into the core's device index.

A template tells how many devices of each class its pods count in their
queue, and what the allocator refuses in it is reported early (an event on
the template naming the field); the claims kube-controller-manager makes
from it arrive as claims. Each change tells the core, so groups waiting
for devices are looked at again.
"""

from __future__ import annotations

from coscheduler.api.devices import (
    DeviceClassInfo,
    DeviceParseError,
    ResourceClaimInfo,
    ResourceClaimTemplateInfo,
    ResourceSliceInfo,
)
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import Complaints
from coscheduler.runtime.handlers.reading import ReadingHandler

__all__ = ["DeviceHandlers"]


class DeviceHandlers:
    """The four handlers of the DRA family, over one scheduler."""

    def __init__(self, scheduler: Scheduler, complaints: Complaints) -> None:
        self.slices = ReadingHandler[ResourceSliceInfo](
            "ResourceSlice",
            read=ResourceSliceInfo.from_object,
            parse_error=DeviceParseError,
            forget_unreadable=True,
            key=lambda resource_slice: resource_slice.name,
            put=scheduler.upsert_resource_slice,
            drop=scheduler.remove_resource_slice,
            complaints=complaints,
        )
        self.classes = ReadingHandler[DeviceClassInfo](
            "DeviceClass",
            read=DeviceClassInfo.from_object,
            parse_error=DeviceParseError,
            forget_unreadable=True,
            key=lambda device_class: device_class.name,
            put=scheduler.upsert_device_class,
            drop=scheduler.remove_device_class,
            complaints=complaints,
        )
        self.claims = ReadingHandler[ResourceClaimInfo](
            "ResourceClaim",
            read=ResourceClaimInfo.from_object,
            parse_error=DeviceParseError,
            forget_unreadable=True,
            key=lambda claim: claim.key,
            put=scheduler.upsert_resource_claim,
            drop=scheduler.remove_resource_claim,
            complaints=complaints,
            namespaced=True,
        )
        self.templates = ReadingHandler[ResourceClaimTemplateInfo](
            "ResourceClaimTemplate",
            read=ResourceClaimTemplateInfo.from_object,
            parse_error=DeviceParseError,
            forget_unreadable=True,
            key=lambda template: template.key,
            put=scheduler.upsert_claim_template,
            drop=scheduler.remove_claim_template,
            complaints=complaints,
            namespaced=True,
        )
