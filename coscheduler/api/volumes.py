"""Persistent volumes as the scheduler sees them: claims, volumes, storage classes.

A pod's ``persistentVolumeClaim`` (and generic ``ephemeral``) volumes tie it
to a claim; a bound claim ties it to a PersistentVolume, whose node affinity
says where the disk can be reached (a local disk: one node; a zonal cloud
disk: one zone). These records keep only what placing a pod reads, parsed
once, like :mod:`~coscheduler.api.pod`; anything malformed raises
:class:`VolumeParseError` naming the object and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from coscheduler.api.fields import FieldReader, ObjectParseError
from coscheduler.api.labels import SELECTED_NODE_ANNOTATION
from coscheduler.api.node_selector import NodeSelectorTerm, parse_node_selector
from coscheduler.api.volume_zone import zone_terms

__all__ = [
    "SELECTED_NODE_ANNOTATION",
    "AttachLimits",
    "ClaimInfo",
    "StorageClassInfo",
    "VolumeInfo",
    "VolumeParseError",
]

_DEFAULT_CLASS_ANNOTATION: Final = "storageclass.kubernetes.io/is-default-class"
_NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
#: The access mode that lets one pod, cluster-wide, use the claim.
READ_WRITE_ONCE_POD: Final = "ReadWriteOncePod"


class VolumeParseError(ObjectParseError):
    """A claim, volume or storage class the scheduler cannot read."""

    kind = "volume object"


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    """A PersistentVolumeClaim: which volume it is bound to, and how it binds."""

    namespace: str
    name: str
    uid: str
    #: ``spec.volumeName``: the PersistentVolume it is bound to, if any.
    volume_name: str | None
    #: ``spec.storageClassName``: None when unset (the default class applies).
    storage_class: str | None
    access_modes: frozenset[str]
    deleting: bool
    #: The node a scheduler chose for its provisioning, if any.
    selected_node: str | None
    #: ``spec.resources.requests.storage`` in bytes (0 when not given).
    storage: int = 0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def once_per_pod(self) -> bool:
        return READ_WRITE_ONCE_POD in self.access_modes

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> ClaimInfo:
        meta = _metadata(raw)
        namespace = str(meta.get("namespace") or "default")
        reader = FieldReader(partial(VolumeParseError, f"claim {namespace}/{meta.get('name')}"))
        spec = reader.mapping(raw.get("spec"), "spec")
        annotations = reader.strings(meta.get("annotations"), "metadata.annotations")
        storage_class = spec.get("storageClassName")
        resources = reader.mapping(spec.get("resources"), "spec.resources")
        requests = reader.resources(resources.get("requests"), "spec.resources.requests")
        return cls(
            namespace=namespace,
            name=reader.text(meta.get("name"), "metadata.name"),
            uid=reader.text(meta.get("uid"), "metadata.uid"),
            volume_name=reader.text(spec.get("volumeName"), "spec.volumeName") or None,
            storage_class=None
            if storage_class is None
            else reader.text(storage_class, "spec.storageClassName"),
            access_modes=frozenset(
                reader.text(mode, "spec.accessModes")
                for mode in reader.items(spec.get("accessModes"), "spec.accessModes")
            ),
            deleting=meta.get("deletionTimestamp") is not None,
            selected_node=annotations.get(SELECTED_NODE_ANNOTATION) or None,
            storage=requests.get("storage", 0),
        )


@dataclass(frozen=True, slots=True)
class VolumeInfo:
    """A PersistentVolume: where it can be reached."""

    name: str
    #: ``spec.nodeAffinity.required``: None when the volume is reachable from any node.
    node_affinity: tuple[NodeSelectorTerm, ...] | None
    storage_class: str = ""
    #: ``spec.capacity.storage`` in bytes.
    storage: int = 0
    access_modes: frozenset[str] = frozenset()
    #: ``spec.claimRef`` as ``namespace/name``: the claim it is bound or promised to.
    claim: str | None = None
    #: ``spec.csi.driver``: whose attach limit the volume counts against.
    csi_driver: str | None = None
    #: Its zone and region labels as terms (:mod:`~coscheduler.api.volume_zone`); None: none.
    zone_affinity: tuple[NodeSelectorTerm, ...] | None = None

    @property
    def available(self) -> bool:
        """Promised to no claim: a claim waiting for its first consumer may take it."""
        return self.claim is None

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> VolumeInfo:
        meta = _metadata(raw)
        reader = FieldReader(partial(VolumeParseError, f"volume {meta.get('name')}"))
        spec = reader.mapping(raw.get("spec"), "spec")
        affinity = reader.mapping(spec.get("nodeAffinity"), "spec.nodeAffinity")
        required = affinity.get("required")
        claim_ref = reader.mapping(spec.get("claimRef"), "spec.claimRef")
        claim = None
        if claim_ref.get("name"):
            namespace = reader.text(claim_ref.get("namespace"), "spec.claimRef.namespace")
            claim = f"{namespace}/{reader.text(claim_ref.get('name'), 'spec.claimRef.name')}"
        return cls(
            name=reader.text(meta.get("name"), "metadata.name"),
            node_affinity=None
            if required is None
            else parse_node_selector(reader, required, "spec.nodeAffinity.required"),
            storage_class=reader.text(spec.get("storageClassName"), "spec.storageClassName"),
            storage=reader.resources(spec.get("capacity"), "spec.capacity").get("storage", 0),
            access_modes=frozenset(
                reader.text(mode, "spec.accessModes")
                for mode in reader.items(spec.get("accessModes"), "spec.accessModes")
            ),
            claim=claim,
            csi_driver=reader.text(
                reader.mapping(spec.get("csi"), "spec.csi").get("driver"), "spec.csi.driver"
            )
            or None,
            zone_affinity=zone_terms(reader.strings(meta.get("labels"), "metadata.labels")),
        )


@dataclass(frozen=True, slots=True)
class StorageClassInfo:
    """A StorageClass: when its claims bind, and whether it is the default."""

    name: str
    wait_for_first_consumer: bool
    default: bool
    #: Whether a provisioner makes volumes for its claims (not ``kubernetes.io/no-provisioner``).
    provisions: bool = False

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> StorageClassInfo:
        meta = _metadata(raw)
        reader = FieldReader(partial(VolumeParseError, f"storage class {meta.get('name')}"))
        annotations = reader.strings(meta.get("annotations"), "metadata.annotations")
        mode = reader.text(raw.get("volumeBindingMode"), "volumeBindingMode", "Immediate")
        provisioner = reader.text(raw.get("provisioner"), "provisioner")
        return cls(
            name=reader.text(meta.get("name"), "metadata.name"),
            wait_for_first_consumer=mode == "WaitForFirstConsumer",
            default=annotations.get(_DEFAULT_CLASS_ANNOTATION) == "true",
            provisions=bool(provisioner) and provisioner != _NO_PROVISIONER,
        )


@dataclass(frozen=True, slots=True)
class AttachLimits:
    """A CSINode: how many volumes of each driver its node can have attached."""

    node: str
    #: Driver name -> ``allocatable.count``; drivers without a count have no limit.
    limits: Mapping[str, int]

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> AttachLimits:
        meta = _metadata(raw)
        reader = FieldReader(partial(VolumeParseError, f"CSINode {meta.get('name')}"))
        spec = reader.mapping(raw.get("spec"), "spec")
        limits = {}
        for index, item in enumerate(reader.items(spec.get("drivers"), "spec.drivers")):
            driver = reader.mapping(item, f"spec.drivers[{index}]")
            allocatable = reader.mapping(
                driver.get("allocatable"), f"spec.drivers[{index}].allocatable"
            )
            if allocatable.get("count") is not None:
                name = reader.text(driver.get("name"), f"spec.drivers[{index}].name")
                limits[name] = reader.integer(
                    allocatable.get("count"), f"spec.drivers[{index}].allocatable.count"
                )
        return cls(node=reader.text(meta.get("name"), "metadata.name"), limits=limits)


def _metadata(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str):
        raise VolumeParseError("<unknown>", f"metadata.name is missing in {raw!r:.200}")
    return meta
