"""A pod's effective requests, as Kubernetes computes them.

As ``k8s.io/component-helpers/resource.PodRequests`` does with the defaults of
Kubernetes 1.37 (``PodLevelResources`` and ``InPlacePodLevelResourcesVerticalScaling``
beta and on, ``InPlacePodVerticalScaling`` GA, ``DRANodeAllocatableResources``
alpha and off):

1. Per container, a resource with a limit but no request requests its limit
   (the API server's defaulting; applied again here, which is harmless).
2. The regular containers' requests are summed.
3. Init containers run in order. A restartable one (``restartPolicy:
   Always``, a sidecar) keeps running: its requests are added to the sum and to
   a running total of sidecars started so far. A regular init container needs
   its own requests plus the sidecars started before it, only while it runs.
4. The aggregate is, per resource, the larger of the sum (2-3) and the largest
   need of any single init step (3).
5. Pod-level requests (``spec.resources.requests``) of cpu, memory and
   ``hugepages-*`` replace the aggregate of those resources; any other resource
   named there is not a pod-level resource and is passed over.
6. ``spec.overhead`` is added.
7. Every pod takes one unit of the node's ``pods`` capacity.

A pod bound to a node holds there what :func:`held_amounts` says of the
aggregate (4) and of the pod-level requests (5), since a running pod can be
resized in place (:mod:`coscheduler.api.pod_requests` reads the status).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

__all__ = [
    "POD_RESOURCE",
    "aggregate_requests",
    "effective_requests",
    "held_amounts",
    "is_pod_level_resource",
]

#: The resource counting pods on a node; every pod requests exactly one.
POD_RESOURCE: Final = "pods"

#: Resources a pod may request as a whole (rule 5), besides ``hugepages-<size>``.
_POD_LEVEL_RESOURCES: Final = frozenset({"cpu", "memory"})
_HUGE_PAGES_PREFIX: Final = "hugepages-"


def is_pod_level_resource(resource: str) -> bool:
    """Whether ``spec.resources`` may request ``resource`` for the pod as a whole (rule 5)."""
    return resource in _POD_LEVEL_RESOURCES or resource.startswith(_HUGE_PAGES_PREFIX)


def aggregate_requests(
    containers: Sequence[Mapping[str, int]],
    init_containers: Sequence[tuple[Mapping[str, int], bool]],
) -> dict[str, int]:
    """The containers' aggregate request (rules 2-4).

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
        _raise_to(init_peak, step)
    _raise_to(total, init_peak)
    return total


def effective_requests(
    aggregate: Mapping[str, int],
    pod_level: Mapping[str, int] | None,
    overhead: Mapping[str, int],
) -> dict[str, int]:
    """The pod's effective request from its containers' aggregate (rules 5-7).

    ``pod_level`` is None when the pod sets no pod-level request of a pod-level
    resource; else its amounts (only pod-level resources among them count).
    """
    total = dict(aggregate)
    if pod_level is not None:
        for resource, amount in pod_level.items():
            if is_pod_level_resource(resource):
                total[resource] = amount
    _add(total, overhead)
    total[POD_RESOURCE] = 1
    return total


def held_amounts(
    spec: Mapping[str, int] | None, *statuses: Mapping[str, int] | None
) -> dict[str, int]:
    """Per resource, the most of what the spec asks and what the statuses report.

    A bound pod holds the larger of its (resized) spec, what the kubelet
    allocated and what it actuated; ``spec`` is None when the kubelet reported
    the resize infeasible, and a status is None when the kubelet reported none.
    """
    held = dict(spec) if spec is not None else {}
    for status in statuses:
        if status is not None:
            _raise_to(held, status)
    return held


def _add(into: dict[str, int], amounts: Mapping[str, int]) -> None:
    for resource, amount in amounts.items():
        into[resource] = into.get(resource, 0) + amount


def _raise_to(into: dict[str, int], amounts: Mapping[str, int]) -> None:
    for resource, amount in amounts.items():
        if amount > into.get(resource, 0):
            into[resource] = amount
