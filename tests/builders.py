"""Builders every unit test shares: pods, nodes and groups as raw API objects, parsed.

Tests read like the objects users write: ``pod("w-0", cpu="2", group="train")``,
``node("n1", cpu="8", taints=[("gpu", "true", "NoSchedule")])``. Going through
``from_object`` keeps the parsing honest in every test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from coscheduler.api.labels import POD_GROUP_LABEL, ROLE_LABEL
from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.api.quantity import parse_resource_list
from coscheduler.core.group import GroupPolicy


def pod_object(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = "1",
    memory: str | None = None,
    requests: Mapping[str, str] | None = None,
    group: str | None = None,
    role: str | None = None,
    priority: int | None = None,
    created: int = 0,
    node: str | None = None,
    phase: str = "Pending",
    scheduler: str = "coscheduler",
    tolerations: Iterable[Mapping[str, str]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity_terms: list[dict[str, Any]] | None = None,
    host_ports: Iterable[int] = (),
    deleting: bool = False,
    uid: str | None = None,
) -> dict[str, Any]:
    """A raw pod with one container."""
    wanted: dict[str, str] = {}
    if cpu is not None:
        wanted["cpu"] = cpu
    if memory is not None:
        wanted["memory"] = memory
    wanted.update(requests or {})
    labels = {}
    if group is not None:
        labels[POD_GROUP_LABEL] = group
    if role is not None:
        labels[ROLE_LABEL] = role
    container: dict[str, Any] = {
        "name": "main",
        "image": "busybox",
        "resources": {"requests": wanted},
    }
    if host_ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [container]}
    if priority is not None:
        spec["priority"] = priority
    if node is not None:
        spec["nodeName"] = node
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity_terms is not None:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": affinity_terms
                }
            }
        }
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{namespace}-{name}",
        "labels": labels,
        "creationTimestamp": f"2024-01-01T00:{created // 60:02d}:{created % 60:02d}Z",
    }
    if deleting:
        meta["deletionTimestamp"] = "2024-01-02T00:00:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase},
    }


def pod(name: str, **fields: Any) -> PodInfo:
    return PodInfo.from_object(pod_object(name, **fields))


def node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    pods: str = "110",
    extra: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[tuple[str, str, str]] = (),
    unschedulable: bool = False,
) -> NodeInfo:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    return NodeInfo.from_object(
        {
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {
                "unschedulable": unschedulable,
                "taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints],
            },
            "status": {"allocatable": allocatable, "capacity": allocatable},
        }
    )


def group(
    name: str,
    min_member: int,
    *,
    namespace: str = "default",
    roles: Mapping[str, int] | None = None,
    min_resources: Mapping[str, str] | None = None,
    priority: int | None = None,
    timeout: int | None = None,
    created: float = 0.0,
) -> GroupPolicy:
    return GroupPolicy(
        namespace=namespace,
        name=name,
        min_member=min_member,
        role_minimums=dict(roles or {}),
        min_resources=parse_resource_list(dict(min_resources or {})),
        priority=priority,
        schedule_timeout_seconds=timeout,
        created=created,
    )


def gang(name: str, size: int, **fields: Any) -> list[PodInfo]:
    """``size`` pods ``name-0`` … of group ``name``."""
    return [pod(f"{name}-{i}", group=name, **fields) for i in range(size)]


class Clock:
    """A clock moved by hand."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
