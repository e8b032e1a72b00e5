"""Devices (DRA) in a simulation: what a scenario's device counts become for the core.

A node pool's ``devices: {gpu: 8}`` becomes, per node, a ResourceSlice of 8
devices of one simulated driver, each with a ``class`` attribute naming its
class; the class becomes a DeviceClass whose selector takes the driver's
devices of that class. A gang's ``devices: {gpu: 2}`` becomes a
ResourceClaimTemplate asking 2 devices of class ``gpu`` per pod, and each pod
gets its own claim made from it (as kube-controller-manager would make it),
so the core allocates devices with its pods in the same trial: a gang gets
its devices whole or not at all, and queues count them per DeviceClass
(``deviceclass.resource.kubernetes.io/<class>``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from coscheduler.api.devices import (
    DeviceClassInfo,
    PodClaim,
    ResourceClaimInfo,
    ResourceClaimTemplateInfo,
    ResourceSliceInfo,
)

__all__ = [
    "DRIVER",
    "claim",
    "device_classes",
    "pod_claims",
    "pod_entries",
    "slices",
    "template",
]

#: The simulated driver publishing every device.
DRIVER: Final = "sim.coscheduler.dev"
#: The entry name of a pod's claim in its ``spec.resourceClaims``.
_ENTRY: Final = "devices"


def slices(node: str, counts: Mapping[str, int]) -> Iterator[ResourceSliceInfo]:
    """The node's devices: one slice (one pool) per class."""
    for name, count in sorted(counts.items()):
        devices = [
            {"name": f"{name}-{index}", "attributes": {"class": {"string": name}}}
            for index in range(count)
        ]
        yield ResourceSliceInfo.from_object(
            {
                "metadata": {"name": f"{node}-{name}"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": node,
                    "pool": {"name": f"{node}-{name}", "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )


def device_classes(names: set[str]) -> Iterator[DeviceClassInfo]:
    for name in sorted(names):
        selector = f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].class == "{name}"'
        yield DeviceClassInfo.from_object(
            {"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": selector}}]}}
        )


def _spec(counts: Mapping[str, int]) -> dict[str, Any]:
    requests = [
        {"name": name, "exactly": {"deviceClassName": name, "count": count}}
        for name, count in sorted(counts.items())
    ]
    return {"devices": {"requests": requests}}


def template(namespace: str, gang: str, counts: Mapping[str, int]) -> ResourceClaimTemplateInfo:
    """The gang's template: what each of its pods asks."""
    return ResourceClaimTemplateInfo.from_object(
        {"metadata": {"name": gang, "namespace": namespace}, "spec": {"spec": _spec(counts)}}
    )


def claim(namespace: str, pod: str, counts: Mapping[str, int]) -> ResourceClaimInfo:
    """The pod's own claim, made from its gang's template (named after the pod)."""
    return ResourceClaimInfo.from_object(
        {
            "metadata": {"name": pod, "namespace": namespace, "uid": f"claim-{pod}"},
            "spec": _spec(counts),
        }
    )


def pod_claims(gang: str, pod: str) -> tuple[PodClaim, ...]:
    """The pod's ``spec.resourceClaims``, resolved to its claim."""
    return (PodClaim(_ENTRY, pod, gang),)


def pod_entries(gang: str) -> list[dict[str, str]]:
    """``spec.resourceClaims`` of a raw pod of the gang."""
    return [{"name": _ENTRY, "resourceClaimTemplateName": gang}]
