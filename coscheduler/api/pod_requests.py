"""Reading what a pod requests of its node: containers, pod level, and resizes.

The arithmetic is :mod:`coscheduler.api.requests`; this module reads its
inputs from the pod with messages that name the field:

- each container's ``resources`` (regular and init, sidecars marked);
- ``spec.resources.requests``, the pod-level requests (``PodLevelResources``);
- for a pod bound to a node, what the kubelet reports of in-place resizes
  (``InPlacePodVerticalScaling``): per container ``status.containerStatuses[]``
  (and ``initContainerStatuses[]``) ``.allocatedResources`` and
  ``.resources.requests``, the pod-level ``status.allocatedResources`` and
  ``status.resources.requests`` (``InPlacePodLevelResourcesVerticalScaling``),
  and whether the ``PodResizePending`` condition's reason is ``Infeasible``.

As kube-scheduler counts a pod on its node: per resource, the containers'
aggregate is the most of the spec's, the allocated and the actuated aggregates
(the allocated and actuated only, when the resize is infeasible); the pod-level
status maps, when both are reported, stand for the containers' aggregates. A
pod-level request, when set, is likewise the most of the spec's and the
pod-level status maps. A pending pod asks what its spec says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from coscheduler.api.fields import TOO_LARGE, FieldReader
from coscheduler.api.quantity import MAX_AMOUNT
from coscheduler.api.requests import (
    aggregate_requests,
    effective_requests,
    held_amounts,
    is_pod_level_resource,
)

__all__ = ["ResizeInputs", "read_pod_requests", "resize_inputs"]

#: The condition the kubelet sets while a resize waits, and the reason that it never will be.
_RESIZE_PENDING: Final = "PodResizePending"
_INFEASIBLE: Final = "Infeasible"


@dataclass(frozen=True, slots=True)
class _Container:
    """One container's name and spec requests; ``restartable`` for sidecars."""

    name: str
    requests: dict[str, int]
    restartable: bool = False
    #: ``resources.requests`` as written: a status that repeats it needs no reading.
    asked: object = None


@dataclass(frozen=True, slots=True)
class _ContainerStatus:
    """What the kubelet reports of one container's resources (None: not reported)."""

    allocated: dict[str, int] | None
    actuated: dict[str, int] | None


def read_pod_requests(
    reader: FieldReader,
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    containers: list[Any],
    *,
    bound: bool,
) -> dict[str, int]:
    """The pod's effective request; for a ``bound`` pod, what it holds on its node."""
    regular = [
        _read_container(reader, item, f"spec.containers[{index}]")
        for index, item in enumerate(containers)
    ]
    init = [
        _read_container(reader, item, f"spec.initContainers[{index}]", init=True)
        for index, item in enumerate(
            reader.items(spec.get("initContainers"), "spec.initContainers")
        )
    ]
    aggregate = aggregate_requests(
        [c.requests for c in regular], [(c.requests, c.restartable) for c in init]
    )
    pod_level = _pod_level_requests(reader, spec)
    if bound:
        aggregate, pod_level = _held(reader, status, regular, init, aggregate, pod_level)
    overhead = reader.resources(spec.get("overhead"), "spec.overhead")
    requests = effective_requests(aggregate, pod_level, overhead)
    for resource, amount in requests.items():
        if amount > MAX_AMOUNT:  # each within bounds, the containers' sum is not
            raise reader.fail(f"the requests of {resource!r} add up to {amount}, which {TOO_LARGE}")
    return requests


def _read_container(
    reader: FieldReader, item: object, where: str, *, init: bool = False
) -> _Container:
    """A container's requests, a limit standing in for a missing request (rule 1)."""
    container = reader.mapping(item, where)
    resources = reader.mapping(container.get("resources"), f"{where}.resources")
    requests = reader.resources(resources.get("requests"), f"{where}.resources.requests")
    limits = reader.resources(resources.get("limits"), f"{where}.resources.limits")
    for resource, amount in limits.items():
        requests.setdefault(resource, amount)
    restartable = (
        init and reader.text(container.get("restartPolicy"), f"{where}.restartPolicy") == "Always"
    )
    name = reader.text(container.get("name"), f"{where}.name")
    return _Container(name, requests, restartable, resources.get("requests"))


def _pod_level_requests(reader: FieldReader, spec: Mapping[str, Any]) -> dict[str, int] | None:
    """``spec.resources.requests`` when it names a pod-level resource, else None."""
    resources = reader.mapping(spec.get("resources"), "spec.resources")
    requests = reader.resources(resources.get("requests"), "spec.resources.requests")
    if not any(is_pod_level_resource(resource) for resource in requests):
        return None
    return requests


def _aggregate(
    regular: Sequence[_Container],
    init: Sequence[_Container],
    amounts: Callable[[_Container], Mapping[str, int] | None],
) -> dict[str, int]:
    """The aggregate of ``amounts(container)`` (a request map, or None for nothing)."""
    return aggregate_requests(
        [amounts(c) or {} for c in regular],
        [(amounts(c) or {}, c.restartable) for c in init],
    )


def _held(
    reader: FieldReader,
    status: Mapping[str, Any],
    regular: Sequence[_Container],
    init: Sequence[_Container],
    aggregate: dict[str, int],
    pod_level: dict[str, int] | None,
) -> tuple[dict[str, int], dict[str, int] | None]:
    """The aggregate and pod-level requests a bound pod holds, its resizes counted."""
    infeasible = _resize_infeasible(reader, status)
    pod_resources = status.get("resources")
    pod_actuated: dict[str, int] | None = None
    if pod_resources is not None:
        actuated_raw = reader.mapping(pod_resources, "status.resources").get("requests")
        if actuated_raw is not None:
            pod_actuated = reader.resources(actuated_raw, "status.resources.requests")
    pod_allocated: dict[str, int] | None = None
    if status.get("allocatedResources") is not None:
        pod_allocated = reader.resources(
            status.get("allocatedResources"), "status.allocatedResources"
        )
    spec_aggregate = None if infeasible else aggregate
    if pod_allocated is not None and pod_actuated is not None:
        held = held_amounts(spec_aggregate, pod_actuated, pod_allocated)
    else:
        asked = {} if infeasible else {c.name: c.asked for c in (*regular, *init)}
        statuses = _container_statuses(reader, status, asked)
        if not statuses and not infeasible:
            held = aggregate  # nothing reported: the spec is all there is
        else:
            held = held_amounts(
                spec_aggregate,
                _aggregate(regular, init, lambda c: _actuated(c, statuses, infeasible)),
                _aggregate(regular, init, lambda c: _allocated(c, statuses, infeasible)),
            )
    if pod_level is not None and pod_resources is not None:
        pod_level = held_amounts(None if infeasible else pod_level, pod_actuated, pod_allocated)
    return held, pod_level


def _allocated(
    container: _Container, statuses: Mapping[str, _ContainerStatus], infeasible: bool
) -> dict[str, int] | None:
    reported = statuses.get(container.name)
    if reported is not None and reported.allocated is not None:
        return reported.allocated
    return None if infeasible else container.requests


def _actuated(
    container: _Container, statuses: Mapping[str, _ContainerStatus], infeasible: bool
) -> dict[str, int] | None:
    reported = statuses.get(container.name)
    if reported is not None and reported.actuated is not None:
        return reported.actuated
    return _allocated(container, statuses, infeasible)


def _container_statuses(
    reader: FieldReader, status: Mapping[str, Any], asked: Mapping[str, object]
) -> dict[str, _ContainerStatus]:
    """Each container's reported resources by name (``containerStatuses`` first, as Kubernetes).

    A container whose allocated and actuated requests are written as its spec's
    (``asked``, by name; the kubelet's report once a pod runs unresized) is left
    out: the spec stands for what is not reported, so the answer is the same.
    """
    found: dict[str, _ContainerStatus] = {}
    as_asked: set[str] = set()
    for field in ("containerStatuses", "initContainerStatuses"):
        for index, item in enumerate(reader.items(status.get(field), f"status.{field}")):
            if type(item) is dict and _as_asked(item, asked):
                as_asked.add(item["name"])
                continue
            where = f"status.{field}[{index}]"
            entry = reader.mapping(item, where)
            name = reader.text(entry.get("name"), f"{where}.name")
            if name in found or name in as_asked:
                continue
            allocated = None
            if entry.get("allocatedResources") is not None:
                allocated = reader.resources(
                    entry.get("allocatedResources"), f"{where}.allocatedResources"
                )
            actuated = None
            resources = entry.get("resources")
            if resources is not None:
                requests = reader.mapping(resources, f"{where}.resources").get("requests")
                if requests is not None:
                    actuated = reader.resources(requests, f"{where}.resources.requests")
            found[name] = _ContainerStatus(allocated, actuated)
    return found


def _as_asked(entry: dict[str, Any], asked: Mapping[str, object]) -> bool:
    """Whether a container status reports exactly its spec's requests, allocated and actuated."""
    name = entry.get("name")
    spec = asked.get(name) if type(name) is str else None
    if spec is None or entry.get("allocatedResources") != spec:
        return False
    resources = entry.get("resources")
    return type(resources) is dict and resources.get("requests") == spec


def _resize_infeasible(reader: FieldReader, status: Mapping[str, Any]) -> bool:
    """Whether the first ``PodResizePending`` condition says the resize is ``Infeasible``."""
    for index, item in enumerate(reader.items(status.get("conditions"), "status.conditions")):
        # Only this condition is read: others are passed over unchecked (a running
        # pod carries five or so, and its every status update repeats them).
        if type(item) is dict and item.get("type") != _RESIZE_PENDING:
            continue
        where = f"status.conditions[{index}]"
        condition = reader.mapping(item, where)
        if reader.text(condition.get("type"), f"{where}.type") == _RESIZE_PENDING:
            return reader.text(condition.get("reason"), f"{where}.reason") == _INFEASIBLE
    return False


class ResizeInputs(NamedTuple):
    """The parts of a pod's raw ``status`` a bound pod's requests are read from, unparsed."""

    #: Per container status: its name, ``allocatedResources`` and ``resources``.
    containers: list[tuple[object, object, object]]
    #: The pod-level ``status.allocatedResources`` and ``status.resources``.
    allocated: object
    resources: object
    #: The ``PodResizePending`` conditions, as (type, reason).
    pending: list[tuple[object, object]]


def resize_inputs(status: object) -> ResizeInputs:
    """What :func:`read_pod_requests` reads of a bound pod's ``status``.

    For a digest of a pod's versions (a watch fast path): two versions whose
    spec and these are equal hold the same on their node.
    """
    # ``type(x) is dict`` before the ABC's isinstance: this runs on every pod update.
    if type(status) is not dict and not isinstance(status, Mapping):
        return ResizeInputs([], None, None, [])
    reported: list[tuple[object, object, object]] = []
    for field in ("containerStatuses", "initContainerStatuses"):
        items = status.get(field)
        for item in items if type(items) is list else ():
            if type(item) is dict or isinstance(item, Mapping):
                reported.append(
                    (item.get("name"), item.get("allocatedResources"), item.get("resources"))
                )
    conditions = status.get("conditions")
    pending = [
        (c.get("type"), c.get("reason"))
        for c in (conditions if type(conditions) is list else ())
        if (type(c) is dict or isinstance(c, Mapping)) and c.get("type") == _RESIZE_PENDING
    ]
    return ResizeInputs(
        reported, status.get("allocatedResources"), status.get("resources"), pending
    )
