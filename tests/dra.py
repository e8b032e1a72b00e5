"""Raw DRA objects for tests: slices of GPUs, classes, claims, as the API server serves them."""

from __future__ import annotations

from typing import Any

DRIVER = "gpu.example.com"


def gpu(
    index: int, *, model: str = "H100", domain: str = "d0", taints: Any = None
) -> dict[str, Any]:
    device: dict[str, Any] = {
        "name": f"gpu-{index}",
        "attributes": {
            "model": {"string": model},
            "index": {"int": index},
            f"{DRIVER}/nvlink": {"string": domain},
            "driverVersion": {"version": "1.2.3"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }
    if taints:
        device["taints"] = taints
    return device


def gpu_slice(
    node: str,
    count: int = 8,
    *,
    model: str = "H100",
    domain: str = "d0",
    generation: int = 1,
    slice_count: int = 1,
    name: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name or f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": slice_count},
            "nodeName": node,
            "devices": [gpu(i, model=model, domain=domain) for i in range(count)],
            **spec,
        },
    }


def device_class(name: str = "gpu", *selectors: str) -> dict[str, Any]:
    expressions = selectors or (f'device.driver == "{DRIVER}"',)
    return {
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions]},
    }


def exactly(count: int = 1, device_class: str = "gpu", **more: Any) -> dict[str, Any]:
    return {"deviceClassName": device_class, "count": count, **more}


def claim(
    name: str,
    *requests: dict[str, Any],
    namespace: str = "default",
    constraints: Any = None,
    status: Any = None,
) -> dict[str, Any]:
    devices: dict[str, Any] = {
        "requests": list(requests or ({"name": "gpus", "exactly": exactly()},))
    }
    if constraints:
        devices["constraints"] = constraints
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"devices": devices},
    }
    if status:
        raw["status"] = status
    return raw
