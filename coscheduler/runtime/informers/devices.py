"""The DRA kinds, one family: ResourceSlices, DeviceClasses, ResourceClaims and
ResourceClaimTemplates (``resource.k8s.io/v1``), read into the core's device index.

A template tells how many devices of each class its pods count in their
queue, and what the allocator refuses in it is reported early (an event on
the template naming the field); the claims kube-controller-manager makes
from it arrive as claims. Each change tells the core, so groups waiting
for devices are looked at again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

import structlog

from coscheduler.api.devices import (
    DeviceClassInfo,
    DeviceParseError,
    ResourceClaimInfo,
    ResourceClaimTemplateInfo,
    ResourceSliceInfo,
)
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.informers.base import Complaints, InvalidObject, KeyedInformer, meta

__all__ = ["DeviceInformers"]

log = structlog.get_logger(__name__)

_Read = TypeVar("_Read")


class _DeviceInformer(KeyedInformer[str], Generic[_Read]):
    """One DRA kind: read each object, hand it to the core."""

    def __init__(
        self,
        kind: str,
        *,
        read: Callable[[Mapping[str, Any]], _Read],
        key: Callable[[_Read], str],
        put: Callable[[_Read], None],
        drop: Callable[[str], None],
        complaints: Complaints,
        namespaced: bool = False,
    ) -> None:
        self._kind = kind
        self._read = read
        self._key = key
        self._put = put
        self._drop = drop
        self._complaints = complaints
        self._namespaced = namespaced
        self._keys: set[str] = set()

    def upsert(self, raw: Mapping[str, Any]) -> str | None:
        try:
            read = self._read(raw)
        except DeviceParseError as error:
            invalid = InvalidObject.of(self._kind, raw, error)
            log.warning("object skipped", kind=self._kind, name=invalid.name, error=invalid.message)
            self._complaints.invalid(invalid)
            # What was known of it is stale: a slice's pool becomes incomplete, a claim missing.
            key = self.key_of(raw)
            if key is not None and key in self._keys:
                self.forget(key)
            return None
        key = self._key(read)
        self._keys.add(key)
        self._put(read)
        return key

    def known(self) -> Iterable[str]:
        return self._keys

    def forget(self, key: str) -> None:
        self._keys.discard(key)
        self._drop(key)

    def key_of(self, raw: Mapping[str, Any]) -> str | None:
        fields = meta(raw)
        if self._namespaced:
            return f"{fields.get('namespace')}/{fields.get('name')}"
        return str(fields.get("name"))


class DeviceInformers:
    """The four informers of the DRA family, over one scheduler."""

    def __init__(self, scheduler: Scheduler, complaints: Complaints) -> None:
        self.slices = _DeviceInformer[ResourceSliceInfo](
            "ResourceSlice",
            read=ResourceSliceInfo.from_object,
            key=lambda resource_slice: resource_slice.name,
            put=scheduler.upsert_resource_slice,
            drop=scheduler.remove_resource_slice,
            complaints=complaints,
        )
        self.classes = _DeviceInformer[DeviceClassInfo](
            "DeviceClass",
            read=DeviceClassInfo.from_object,
            key=lambda device_class: device_class.name,
            put=scheduler.upsert_device_class,
            drop=scheduler.remove_device_class,
            complaints=complaints,
        )
        self.claims = _DeviceInformer[ResourceClaimInfo](
            "ResourceClaim",
            read=ResourceClaimInfo.from_object,
            key=lambda claim: claim.key,
            put=scheduler.upsert_resource_claim,
            drop=scheduler.remove_resource_claim,
            complaints=complaints,
            namespaced=True,
        )
        self.templates = _DeviceInformer[ResourceClaimTemplateInfo](
            "ResourceClaimTemplate",
            read=ResourceClaimTemplateInfo.from_object,
            key=lambda template: template.key,
            put=scheduler.upsert_claim_template,
            drop=scheduler.remove_claim_template,
            complaints=complaints,
            namespaced=True,
        )
