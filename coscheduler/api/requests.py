"""A pod's effective requests, as Kubernetes computes them.

As ``k8s.io/component-helpers/resource.PodRequests`` does:

1. Per container, a resource with a limit but no request requests its limit
   (the API server's defaulting; applied again here, which is harmless).
2. The regular containers' requests are summed.
3. Init containers run in order. A restartable one (``restartPolicy:
   Always``, a sidecar) keeps running: its requests are added to the sum and to
   a running total of sidecars started so far. A regular init container needs
   its own requests plus the sidecars started before it, only while it runs.
4. The result is, per resource, the larger of the sum (2-3) and the largest
   need of any single init step (3).
5. ``spec.overhead`` is added.
6. Every pod takes one unit of the node's ``pods`` capacity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from coscheduler.api.quantity import ResourceAmounts

__all__ = ["POD_RESOURCE", "effective_requests"]

#: The resource counting pods on a node; every pod requests exactly one.
POD_RESOURCE: Final = "pods"


def effective_requests(
    containers: list[ResourceAmounts],
    init_containers: list[tuple[ResourceAmounts, bool]],
    overhead: ResourceAmounts,
) -> dict[str, int]:
    """The pod's effective requests from its containers' own (rules 2-6).

    ``init_containers`` pairs each init container's requests with whether it
    is restartable (a sidecar), in spec order.
    """
    total: dict[str, int] = {}
    for requests in containers:
        _add(total, requests)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for requests, restartable in init_containers:
        if restartable:
            _add(total, requests)
            _add(sidecars, requests)
            step = sidecars
        else:
            step = dict(sidecars)
            _add(step, requests)
        for resource, amount in step.items():
            if amount > init_peak.get(resource, 0):
                init_peak[resource] = amount
    for resource, amount in init_peak.items():
        if amount > total.get(resource, 0):
            total[resource] = amount
    _add(total, overhead)
    total[POD_RESOURCE] = 1
    return total


def _add(into: dict[str, int], amounts: Mapping[str, int]) -> None:
    for resource, amount in amounts.items():
        into[resource] = into.get(resource, 0) + amount
