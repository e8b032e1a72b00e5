"""Filter 5: the node has room for the pod's effective requests.

As kube-scheduler's NodeResourcesFit: every resource the pod requests (more
than zero of) must fit in ``allocatable - allocated``; a resource the node
does not have is zero there. Every shortfall is reported, each with its fixed
wording (``Insufficient cpu``; ``Too many pods`` for the pod count).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from coscheduler.api.requests import POD_RESOURCE

NAME: Final = "NodeResourcesFit"
TOO_MANY_PODS: Final = "Too many pods"


def reason(resource: str) -> str:
    """kube-scheduler's wording for a resource that does not fit."""
    return TOO_MANY_PODS if resource == POD_RESOURCE else f"Insufficient {resource}"


def insufficient(
    requests: Mapping[str, int], allocatable: Mapping[str, int], allocated: Mapping[str, int]
) -> list[str]:
    """Every shortfall's reason, in resource name order; empty when the pod fits."""
    return [
        reason(resource)
        for resource in sorted(requests)
        if requests[resource] > 0
        and requests[resource] > allocatable.get(resource, 0) - allocated.get(resource, 0)
    ]
