"""A fake DRA driver: what a GPU driver would publish for KWOK nodes, as plain objects.

No kubelet runs on a KWOK node, so no real driver can; the test (or the benchmark) plays
the driver's part in the API only: one ResourceSlice per node, a pool of its own with
``per_node`` GPUs (a ``model`` attribute, an ``nvlink`` domain shared by
``per_node // domains`` of them, 80Gi of memory), and a DeviceClass whose CEL selector
picks them by driver, model and memory. The e2e tests of devices and the benchmark's
``dra`` suite both publish these, each through its own client.
"""

from __future__ import annotations

from typing import Any, Final

Json = dict[str, Any]

DRIVER: Final = "gpu.e2e.example.com"
RESOURCE_API: Final = "/apis/resource.k8s.io/v1"
SLICES: Final = f"{RESOURCE_API}/resourceslices"
CLASSES: Final = f"{RESOURCE_API}/deviceclasses"
NVLINK: Final = f"{DRIVER}/nvlink"
"""The attribute a claim's ``matchAttribute`` names to keep its GPUs in one NVLink domain."""


def gpu_slice(node: str, per_node: int = 8, domains: int = 2) -> Json:
    """The ResourceSlice of ``node``: a pool of its own, one generation, one slice."""
    devices = [
        {
            "name": f"gpu-{index}",
            "attributes": {
                "model": {"string": "H100"},
                "nvlink": {"string": f"{node}-nvl{index * domains // per_node}"},
            },
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for index in range(per_node)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def gpu_class(name: str) -> Json:
    """A DeviceClass picking the driver's H100s with at least 40Gi, by a CEL selector."""
    selector = (
        f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].model == "H100" '
        f'&& device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'
    )
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": selector}}]},
    }


def gpu_template(name: str, device_class: str, count: int, *, one_domain: bool = False) -> Json:
    """A ResourceClaimTemplate of ``count`` GPUs of the class (in one NVLink domain, if asked)."""
    devices: Json = {
        "requests": [{"name": "gpus", "exactly": {"deviceClassName": device_class, "count": count}}]
    }
    if one_domain:
        devices["constraints"] = [{"matchAttribute": NVLINK}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": devices}},
    }
