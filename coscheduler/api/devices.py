"""Devices through Dynamic Resource Allocation (``resource.k8s.io/v1``), as scheduling reads them.

Four kinds: a driver publishes its devices in *ResourceSlices* (one pool,
split over ``resourceSliceCount`` slices of one ``generation``, reachable from
one node, a node selector or every node); an administrator describes kinds of
device in *DeviceClasses* (CEL selectors); a workload asks for devices in
*ResourceClaims*, often made per pod from a *ResourceClaimTemplate* by
kube-controller-manager. A pod names its claims in ``spec.resourceClaims``;
the claim generated for a template entry is named in
``status.resourceClaimStatuses``.

These records keep what allocating reads, parsed once. Anything malformed
raises :class:`DeviceParseError` naming the object and the field; so does a
feature the allocator does not implement (partitionable devices, consumable
capacity, binding conditions, admin access, ``distinctAttribute``): it is
refused, never allocated as if it were absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from typing import Any, Final

from coscheduler.api.fields import FieldReader, ObjectParseError
from coscheduler.api.node_selector import NodeSelectorTerm, parse_node_selector
from coscheduler.api.quantity import QuantityError, parse_quantity

__all__ = [
    "DEVICE_CLASS_RESOURCE",
    "AllocatedDevice",
    "AttributeValue",
    "ClaimSpec",
    "Device",
    "DeviceChoice",
    "DeviceClassInfo",
    "DeviceParseError",
    "DeviceRequest",
    "DeviceTaint",
    "DeviceToleration",
    "MatchAttribute",
    "PodClaim",
    "ResourceClaimInfo",
    "ResourceClaimTemplateInfo",
    "ResourceSliceInfo",
    "Version",
    "read_pod_claims",
]

#: Kubernetes' implicit extended resource name of a DeviceClass: how queues count its devices.
DEVICE_CLASS_RESOURCE: Final = "deviceclass.resource.kubernetes.io/"

_TAINT_EFFECTS: Final = frozenset({"NoSchedule", "NoExecute", "None"})
_TOLERATION_OPERATORS: Final = frozenset({"Equal", "Exists"})
_MODES: Final = frozenset({"ExactCount", "All"})
#: Slice fields of partitionable devices (counters shared between devices).
_UNSUPPORTED_SLICE_FIELDS: Final = ("sharedCounters", "perDeviceNodeSelection")
#: Device fields of features the allocator does not implement.
_UNSUPPORTED_DEVICE_FIELDS: Final = (
    "consumesCounters",
    "nodeName",
    "nodeSelector",
    "allNodes",
    "bindsToNode",
    "bindingConditions",
    "bindingFailureConditions",
)
#: Request fields of features the allocator does not implement.
_UNSUPPORTED_REQUEST_FIELDS: Final = ("capacity",)


class DeviceParseError(ObjectParseError):
    """A ResourceSlice, DeviceClass, ResourceClaim or template the scheduler cannot read."""

    kind = "DRA object"


@dataclass(frozen=True, slots=True)
class Version:
    """A ``version`` attribute: a semantic version (CEL sees it as ``semver``)."""

    text: str


#: An attribute's value: ``int``, ``bool``, ``string`` or ``version``.
AttributeValue = int | bool | str | Version


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: DeviceTaint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


@dataclass(frozen=True, slots=True)
class Device:
    """One device of a slice: its attributes and capacity by domain, then name."""

    name: str
    #: domain -> name -> value; an unqualified name is in the driver's domain.
    attributes: Mapping[str, Mapping[str, AttributeValue]]
    #: domain -> name -> exact amount.
    capacity: Mapping[str, Mapping[str, Fraction]]
    taints: tuple[DeviceTaint, ...] = ()

    def attribute(self, qualified: str, driver: str) -> AttributeValue | None:
        """A qualified attribute's value (``domain/name``, or ``name`` in ``driver``'s domain)."""
        domain, _, name = qualified.rpartition("/")
        return self.attributes.get(domain or driver, {}).get(name)


@dataclass(frozen=True, slots=True)
class ResourceSliceInfo:
    """A ResourceSlice: some devices of one pool, and where they can be reached."""

    name: str
    driver: str
    pool: str
    generation: int
    #: ``pool.resourceSliceCount``: a pool is used only once all slices of its generation are seen.
    slice_count: int
    #: Exactly one of these three says where the devices are reached.
    node_name: str | None
    node_selector: tuple[NodeSelectorTerm, ...] | None
    all_nodes: bool
    devices: tuple[Device, ...]

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> ResourceSliceInfo:
        meta = _metadata(raw)
        reader = _reader(f"ResourceSlice {meta.get('name')}")
        spec = reader.mapping(raw.get("spec"), "spec")
        for field in _UNSUPPORTED_SLICE_FIELDS:
            if spec.get(field):
                raise reader.fail(f"spec.{field} (partitionable devices) is not supported")
        driver = reader.text(spec.get("driver"), "spec.driver")
        if not driver:
            raise reader.fail("spec.driver is missing")
        pool = reader.mapping(spec.get("pool"), "spec.pool")
        node_name = reader.text(spec.get("nodeName"), "spec.nodeName") or None
        selector_raw = spec.get("nodeSelector")
        node_selector = (
            None
            if selector_raw is None
            else parse_node_selector(reader, selector_raw, "spec.nodeSelector")
        )
        all_nodes = spec.get("allNodes") is True
        if sum((node_name is not None, node_selector is not None, all_nodes)) != 1:
            raise reader.fail("exactly one of spec.nodeName, spec.nodeSelector, spec.allNodes")
        slice_count = reader.integer(pool.get("resourceSliceCount"), "spec.pool.resourceSliceCount")
        if slice_count < 1:
            raise reader.fail(f"spec.pool.resourceSliceCount = {slice_count} must be at least 1")
        devices = tuple(
            _device(reader, item, f"spec.devices[{index}]", driver)
            for index, item in enumerate(reader.items(spec.get("devices"), "spec.devices"))
        )
        return cls(
            name=reader.text(meta.get("name"), "metadata.name"),
            driver=driver,
            pool=reader.text(pool.get("name"), "spec.pool.name"),
            generation=reader.integer(pool.get("generation"), "spec.pool.generation"),
            slice_count=slice_count,
            node_name=node_name,
            node_selector=node_selector,
            all_nodes=all_nodes,
            devices=devices,
        )


@dataclass(frozen=True, slots=True)
class DeviceClassInfo:
    """A DeviceClass: the CEL selectors every device of the class satisfies."""

    name: str
    selectors: tuple[str, ...]

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> DeviceClassInfo:
        meta = _metadata(raw)
        reader = _reader(f"DeviceClass {meta.get('name')}")
        spec = reader.mapping(raw.get("spec"), "spec")
        # spec.config is for the driver on the node; it does not change where devices go.
        return cls(
            name=reader.text(meta.get("name"), "metadata.name"),
            selectors=_selectors(reader, spec.get("selectors"), "spec.selectors"),
        )


@dataclass(frozen=True, slots=True)
class DeviceChoice:
    """What one request (``exactly``) or one of its alternatives (``firstAvailable``) asks."""

    #: The name results carry: ``request`` or ``request/subrequest``.
    name: str
    device_class: str
    selectors: tuple[str, ...]
    #: ``allocationMode: All``: every matching device, at least one.
    all: bool
    count: int
    tolerations: tuple[DeviceToleration, ...]


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One ``spec.devices.requests`` entry: its choices, in order of preference."""

    name: str
    choices: tuple[DeviceChoice, ...]


@dataclass(frozen=True, slots=True)
class MatchAttribute:
    """A claim's ``matchAttribute`` constraint: every device of these requests agrees on it."""

    #: Request names (a subrequest's request covers it); empty: every request of the claim.
    requests: tuple[str, ...]
    #: Fully qualified attribute name, ``domain/name``.
    attribute: str

    def covers(self, choice_name: str) -> bool:
        return not self.requests or choice_name.split("/", 1)[0] in self.requests


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    """What a claim (or a template's claim) asks: requests and constraints."""

    requests: tuple[DeviceRequest, ...]
    constraints: tuple[MatchAttribute, ...]


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    """One ``status.allocation.devices.results`` entry."""

    request: str
    driver: str
    pool: str
    device: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device)


@dataclass(frozen=True, slots=True)
class ResourceClaimInfo:
    """A ResourceClaim: what it asks, what it was given, and who uses it."""

    namespace: str
    name: str
    uid: str
    spec: ClaimSpec
    #: ``status.allocation.devices.results``; None while not allocated.
    allocation: tuple[AllocatedDevice, ...] | None
    #: ``status.allocation.nodeSelector``: None for devices reachable from every node.
    allocation_nodes: tuple[NodeSelectorTerm, ...] | None
    #: ``status.reservedFor`` as (apiGroup, resource, name, uid): the pods (or others) using it.
    consumers: tuple[tuple[str, str, str, str], ...]
    deleting: bool
    resource_version: str = ""
    finalizers: tuple[str, ...] = ()
    #: Made by kube-controller-manager for a native PodGroup (its controlling owner):
    #: the members share it.
    for_group: bool = False

    @property
    def reserved_for(self) -> tuple[str, ...]:
        """The uids of its consumers."""
        return tuple(uid for _, _, _, uid in self.consumers)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> ResourceClaimInfo:
        meta = _metadata(raw)
        namespace = str(meta.get("namespace") or "default")
        reader = _reader(f"ResourceClaim {namespace}/{meta.get('name')}")
        spec = _claim_spec(reader, reader.mapping(raw.get("spec"), "spec"), "spec")
        status = reader.mapping(raw.get("status"), "status")
        allocation_raw = status.get("allocation")
        allocation = None
        allocation_nodes = None
        if allocation_raw is not None:
            here = "status.allocation"
            allocated = reader.mapping(allocation_raw, here)
            devices = reader.mapping(allocated.get("devices"), f"{here}.devices")
            results = []
            for index, item in enumerate(
                reader.items(devices.get("results"), f"{here}.devices.results")
            ):
                at = f"{here}.devices.results[{index}]"
                entry = reader.mapping(item, at)
                results.append(
                    AllocatedDevice(
                        request=reader.text(entry.get("request"), f"{at}.request"),
                        driver=reader.text(entry.get("driver"), f"{at}.driver"),
                        pool=reader.text(entry.get("pool"), f"{at}.pool"),
                        device=reader.text(entry.get("device"), f"{at}.device"),
                    )
                )
            allocation = tuple(results)
            if allocated.get("nodeSelector") is not None:
                allocation_nodes = parse_node_selector(
                    reader, allocated.get("nodeSelector"), f"{here}.nodeSelector"
                )
        reserved = []
        for index, item in enumerate(reader.items(status.get("reservedFor"), "status.reservedFor")):
            at = f"status.reservedFor[{index}]"
            entry = reader.mapping(item, at)
            reserved.append(
                (
                    reader.text(entry.get("apiGroup"), f"{at}.apiGroup"),
                    reader.text(entry.get("resource"), f"{at}.resource"),
                    reader.text(entry.get("name"), f"{at}.name"),
                    reader.text(entry.get("uid"), f"{at}.uid"),
                )
            )
        return cls(
            namespace=namespace,
            name=reader.text(meta.get("name"), "metadata.name"),
            uid=reader.text(meta.get("uid"), "metadata.uid"),
            spec=spec,
            allocation=allocation,
            allocation_nodes=allocation_nodes,
            consumers=tuple(reserved),
            deleting=meta.get("deletionTimestamp") is not None,
            resource_version=reader.text(meta.get("resourceVersion"), "metadata.resourceVersion"),
            finalizers=tuple(
                reader.text(f, "metadata.finalizers")
                for f in reader.items(meta.get("finalizers"), "metadata.finalizers")
            ),
            for_group=any(
                isinstance(owner, Mapping)
                and owner.get("controller") is True
                and owner.get("kind") == "PodGroup"
                and str(owner.get("apiVersion", "")).startswith("scheduling.k8s.io/")
                for owner in reader.items(meta.get("ownerReferences"), "metadata.ownerReferences")
            ),
        )


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplateInfo:
    """A ResourceClaimTemplate: the claim kube-controller-manager makes per pod from it."""

    namespace: str
    name: str
    spec: ClaimSpec

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> ResourceClaimTemplateInfo:
        meta = _metadata(raw)
        namespace = str(meta.get("namespace") or "default")
        reader = _reader(f"ResourceClaimTemplate {namespace}/{meta.get('name')}")
        outer = reader.mapping(raw.get("spec"), "spec")
        return cls(
            namespace=namespace,
            name=reader.text(meta.get("name"), "metadata.name"),
            spec=_claim_spec(reader, reader.mapping(outer.get("spec"), "spec.spec"), "spec.spec"),
        )


@dataclass(frozen=True, slots=True)
class PodClaim:
    """One ``spec.resourceClaims`` entry of a pod, resolved to a claim name when it can be."""

    #: The entry's name in the pod.
    name: str
    #: The ResourceClaim in the pod's namespace: ``resourceClaimName``, or the one
    #: ``status.resourceClaimStatuses`` names for a template; None while not made yet.
    claim: str | None
    #: ``resourceClaimTemplateName``, when the claim is made from a template.
    template: str | None


def read_pod_claims(
    reader: FieldReader, spec: Mapping[str, Any], status: Mapping[str, Any]
) -> tuple[PodClaim, ...]:
    """A pod's ``spec.resourceClaims``, each with its claim's name when known."""
    generated: dict[str, str | None] = {}
    where = "status.resourceClaimStatuses"
    for index, item in enumerate(reader.items(status.get("resourceClaimStatuses"), where)):
        entry = reader.mapping(item, f"{where}[{index}]")
        name = reader.text(entry.get("name"), f"{where}[{index}].name")
        generated[name] = (
            reader.text(entry.get("resourceClaimName"), f"{where}[{index}].resourceClaimName")
            or None
        )
    claims = []
    for index, item in enumerate(reader.items(spec.get("resourceClaims"), "spec.resourceClaims")):
        here = f"spec.resourceClaims[{index}]"
        entry = reader.mapping(item, here)
        name = reader.text(entry.get("name"), f"{here}.name")
        claim_name = reader.text(entry.get("resourceClaimName"), f"{here}.resourceClaimName")
        template = reader.text(
            entry.get("resourceClaimTemplateName"), f"{here}.resourceClaimTemplateName"
        )
        if bool(claim_name) == bool(template):
            raise reader.fail(
                f"{here}: exactly one of resourceClaimName and resourceClaimTemplateName"
            )
        claims.append(
            PodClaim(
                name=name,
                claim=claim_name or generated.get(name),
                template=template or None,
            )
        )
    return tuple(claims)


# -- parsing helpers ---------------------------------------------------------


def _reader(name: str) -> FieldReader:
    return FieldReader(partial(DeviceParseError, name))


def _metadata(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str):
        raise DeviceParseError("<unknown>", f"metadata.name is missing in {raw!r:.200}")
    return meta


def _domain_and_name(qualified: str, driver: str) -> tuple[str, str]:
    domain, _, name = qualified.rpartition("/")
    return (domain or driver, name)


def _device(reader: FieldReader, raw: object, where: str, driver: str) -> Device:
    entry = reader.mapping(raw, where)
    for field in _UNSUPPORTED_DEVICE_FIELDS:
        if entry.get(field):
            raise reader.fail(f"{where}.{field} is not supported")
    if entry.get("allowMultipleAllocations") is True:
        raise reader.fail(
            f"{where}.allowMultipleAllocations (consumable capacity) is not supported"
        )
    attributes: dict[str, dict[str, AttributeValue]] = {}
    for qualified, value in reader.mapping(entry.get("attributes"), f"{where}.attributes").items():
        domain, name = _domain_and_name(qualified, driver)
        attributes.setdefault(domain, {})[name] = _attribute(
            reader, value, f"{where}.attributes[{qualified!r}]"
        )
    capacity: dict[str, dict[str, Fraction]] = {}
    for qualified, value in reader.mapping(entry.get("capacity"), f"{where}.capacity").items():
        here = f"{where}.capacity[{qualified!r}]"
        item = reader.mapping(value, here)
        if item.get("requestPolicy") is not None:
            raise reader.fail(f"{here}.requestPolicy (consumable capacity) is not supported")
        try:
            amount = parse_quantity(item.get("value"))  # type: ignore[arg-type]
        except QuantityError as error:
            raise reader.fail(f"{here}.value: {error}") from error
        domain, name = _domain_and_name(qualified, driver)
        capacity.setdefault(domain, {})[name] = amount
    taints = []
    for index, item in enumerate(reader.items(entry.get("taints"), f"{where}.taints")):
        here = f"{where}.taints[{index}]"
        taint = reader.mapping(item, here)
        effect = reader.text(taint.get("effect"), f"{here}.effect")
        if effect not in _TAINT_EFFECTS:
            raise reader.fail(f"{here}.effect = {effect!r} is not NoSchedule, NoExecute or None")
        taints.append(
            DeviceTaint(
                key=reader.text(taint.get("key"), f"{here}.key"),
                value=reader.text(taint.get("value"), f"{here}.value"),
                effect=effect,
            )
        )
    name = reader.text(entry.get("name"), f"{where}.name")
    if not name:
        raise reader.fail(f"{where}.name is missing")
    return Device(name=name, attributes=attributes, capacity=capacity, taints=tuple(taints))


def _attribute(reader: FieldReader, raw: object, where: str) -> AttributeValue:
    entry = reader.mapping(raw, where)
    present = [key for key in ("int", "bool", "string", "version") if entry.get(key) is not None]
    if len(present) != 1:
        lists = [key for key in entry if key.endswith("s")]
        if lists:
            raise reader.fail(f"{where}.{lists[0]} (list-typed attributes) is not supported")
        raise reader.fail(f"{where}: exactly one of int, bool, string, version")
    kind = present[0]
    value = entry[kind]
    if kind == "int":
        return reader.integer(value, f"{where}.int")
    if kind == "bool":
        if not isinstance(value, bool):
            raise reader.fail(f"{where}.bool must be a boolean, got {value!r}")
        return value
    if kind == "string":
        return reader.text(value, f"{where}.string")
    return Version(reader.text(value, f"{where}.version"))


def _selectors(reader: FieldReader, raw: object, where: str) -> tuple[str, ...]:
    expressions = []
    for index, item in enumerate(reader.items(raw, where)):
        here = f"{where}[{index}]"
        cel = reader.mapping(reader.mapping(item, here).get("cel"), f"{here}.cel")
        expression = reader.text(cel.get("expression"), f"{here}.cel.expression")
        if not expression:
            raise reader.fail(f"{here}.cel.expression is missing")
        expressions.append(expression)
    return tuple(expressions)


def _tolerations(reader: FieldReader, raw: object, where: str) -> tuple[DeviceToleration, ...]:
    tolerations = []
    for index, item in enumerate(reader.items(raw, where)):
        here = f"{where}[{index}]"
        entry = reader.mapping(item, here)
        operator = reader.text(entry.get("operator"), f"{here}.operator", "Equal") or "Equal"
        if operator not in _TOLERATION_OPERATORS:
            raise reader.fail(f"{here}.operator = {operator!r} is not Equal or Exists")
        effect = reader.text(entry.get("effect"), f"{here}.effect")
        if effect and effect not in _TAINT_EFFECTS:
            raise reader.fail(f"{here}.effect = {effect!r} is not a device taint effect")
        tolerations.append(
            DeviceToleration(
                key=reader.text(entry.get("key"), f"{here}.key"),
                operator=operator,
                value=reader.text(entry.get("value"), f"{here}.value"),
                effect=effect,
            )
        )
    return tuple(tolerations)


def _choice(reader: FieldReader, raw: object, where: str, name: str) -> DeviceChoice:
    entry = reader.mapping(raw, where)
    if entry.get("adminAccess") is True:
        raise reader.fail(f"{where}.adminAccess is not supported")
    for field in _UNSUPPORTED_REQUEST_FIELDS:
        if entry.get(field) is not None:
            raise reader.fail(f"{where}.{field} (consumable capacity) is not supported")
    mode = reader.text(entry.get("allocationMode"), f"{where}.allocationMode", "ExactCount")
    if mode not in _MODES:
        raise reader.fail(f"{where}.allocationMode = {mode!r} is not ExactCount or All")
    count = reader.integer(entry.get("count"), f"{where}.count", 1)
    if mode == "ExactCount" and count < 1:
        raise reader.fail(f"{where}.count = {count} must be at least 1")
    device_class = reader.text(entry.get("deviceClassName"), f"{where}.deviceClassName")
    if not device_class:
        raise reader.fail(f"{where}.deviceClassName is missing")
    return DeviceChoice(
        name=name,
        device_class=device_class,
        selectors=_selectors(reader, entry.get("selectors"), f"{where}.selectors"),
        all=mode == "All",
        count=count if mode == "ExactCount" else 0,
        tolerations=_tolerations(reader, entry.get("tolerations"), f"{where}.tolerations"),
    )


def _claim_spec(reader: FieldReader, spec: Mapping[str, Any], where: str) -> ClaimSpec:
    devices = reader.mapping(spec.get("devices"), f"{where}.devices")
    requests = []
    names: set[str] = set()
    for index, item in enumerate(
        reader.items(devices.get("requests"), f"{where}.devices.requests")
    ):
        here = f"{where}.devices.requests[{index}]"
        entry = reader.mapping(item, here)
        name = reader.text(entry.get("name"), f"{here}.name")
        if not name or name in names:
            raise reader.fail(f"{here}.name = {name!r} must be given and unique")
        names.add(name)
        exactly = entry.get("exactly")
        alternatives = reader.items(entry.get("firstAvailable"), f"{here}.firstAvailable")
        if (exactly is None) == (not alternatives):
            raise reader.fail(f"{here}: exactly one of exactly and firstAvailable")
        if exactly is not None:
            choices: tuple[DeviceChoice, ...] = (_choice(reader, exactly, f"{here}.exactly", name),)
        else:
            picks = []
            for position, alternative in enumerate(alternatives):
                at = f"{here}.firstAvailable[{position}]"
                sub = reader.text(reader.mapping(alternative, at).get("name"), f"{at}.name")
                if not sub:
                    raise reader.fail(f"{at}.name is missing")
                picks.append(_choice(reader, alternative, at, f"{name}/{sub}"))
            choices = tuple(picks)
        requests.append(DeviceRequest(name=name, choices=choices))
    constraints = []
    for index, item in enumerate(
        reader.items(devices.get("constraints"), f"{where}.devices.constraints")
    ):
        here = f"{where}.devices.constraints[{index}]"
        entry = reader.mapping(item, here)
        if entry.get("distinctAttribute") is not None:
            raise reader.fail(f"{here}.distinctAttribute is not supported")
        attribute = reader.text(entry.get("matchAttribute"), f"{here}.matchAttribute")
        if "/" not in attribute:
            raise reader.fail(
                f"{here}.matchAttribute = {attribute!r} must be fully qualified (domain/name)"
            )
        covered = tuple(
            reader.text(name, f"{here}.requests")
            for name in reader.items(entry.get("requests"), f"{here}.requests")
        )
        for name in covered:
            if name.split("/", 1)[0] not in names:
                raise reader.fail(f"{here}.requests names {name!r}, not a request of the claim")
        constraints.append(MatchAttribute(requests=covered, attribute=attribute))
    return ClaimSpec(requests=tuple(requests), constraints=tuple(constraints))
