"""Builders every unit test shares: pods, nodes and PodGroups as raw API objects, parsed.

Tests read like the objects users write: ``pod("w-0", cpu="2", group="train")``,
``node("n1", cpu="8", taints=[("gpu", "true", "NoSchedule")])``. Going through
``from_object`` keeps the parsing honest in every test. The ``*_object``
builders give the raw JSON, for tests that feed what a watch would deliver.
The e2e tests build what they send to a real cluster in ``e2e/tests/manifests.py``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from coscheduler.api.labels import GROUP, KIND, POD_GROUP_LABEL, ROLE_LABEL, VERSION
from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.api.quantity import parse_resource_list
from coscheduler.core.decision import Decision, Order
from coscheduler.core.group import GroupPolicy
from coscheduler.core.queue import QueueSettings
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.settings import SchedulerSettings


def container(
    requests: Mapping[str, str] | None = None,
    *,
    limits: Mapping[str, str] | None = None,
    restart: str | None = None,
    host_ports: Iterable[int] = (),
) -> dict[str, Any]:
    """One container asking for ``requests`` (and ``limits``, when given)."""
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    result: dict[str, Any] = {"name": "main", "image": "busybox", "resources": resources}
    if restart is not None:
        result["restartPolicy"] = restart
    if host_ports:
        result["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
    return result


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
    labels: Mapping[str, str] | None = None,
    spec_extra: Mapping[str, Any] | None = None,
    host_ports: Iterable[int] = (),
    deleting: bool = False,
    uid: str | None = None,
    owner: str | None = None,
    group_label: str = POD_GROUP_LABEL,
) -> dict[str, Any]:
    """A raw pod with one container; ``owner`` names a controlling Job."""
    wanted: dict[str, str] = {}
    if cpu is not None:
        wanted["cpu"] = cpu
    if memory is not None:
        wanted["memory"] = memory
    wanted.update(requests or {})
    labels = dict(labels or {})
    if group is not None:
        labels[group_label] = group
    if role is not None:
        labels[ROLE_LABEL] = role
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [container(wanted, host_ports=host_ports)],
    }
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
    spec.update(spec_extra or {})
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{namespace}-{name}",
        "labels": labels,
        "creationTimestamp": f"2024-01-01T00:{created // 60:02d}:{created % 60:02d}Z",
    }
    if deleting:
        meta["deletionTimestamp"] = "2024-01-02T00:00:00Z"
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": owner,
                "uid": f"uid-job-{owner}",
                "controller": True,
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase},
    }


def job_object(
    name: str,
    *,
    namespace: str = "default",
    gang: str | None = None,
    parallelism: int | None = 4,
    completions: int | None = None,
    succeeded: int | None = None,
    scheduler: str | None = "coscheduler",
    annotations: Mapping[str, str] | None = None,
    template_spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A raw batch/v1 Job (uid ``uid-job-<name>``, as ``pod_object(owner=...)`` refers to it)."""
    notes = dict(annotations or {})
    if gang is not None:
        notes["scheduling.sigs.k8s.io/gang"] = gang
    spec: dict[str, Any] = {"template": {"spec": dict(template_spec or {})}}
    if scheduler is not None:
        spec["template"]["spec"]["schedulerName"] = scheduler
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-job-{name}",
            "annotations": notes,
        },
        "spec": spec,
    }
    if succeeded is not None:
        job["status"] = {"succeeded": succeeded}
    return job


def pod(name: str, **fields: Any) -> PodInfo:
    return PodInfo.from_object(pod_object(name, **fields))


#: The label every kubelet puts on its node.
HOSTNAME = "kubernetes.io/hostname"


def node_object(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    pods: str = "110",
    extra: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[tuple[str, str, str]] = (),
    unschedulable: bool = False,
) -> dict[str, Any]:
    """A raw node; ``taints`` are (key, value, effect).

    It carries the hostname label every kubelet sets, as real nodes do.
    """
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    labels = {HOSTNAME: name, **(labels or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
        "spec": {
            "unschedulable": unschedulable,
            "taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints],
        },
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def node(name: str, **fields: Any) -> NodeInfo:
    return NodeInfo.from_object(node_object(name, **fields))


def podgroup_object(
    name: str,
    min_member: int | None = None,
    *,
    namespace: str = "default",
    uid: str | None = None,
    generation: int = 1,
    status: Mapping[str, Any] | None = None,
    api_version: str = f"{GROUP}/{VERSION}",
    **spec: Any,
) -> dict[str, Any]:
    """A raw PodGroup; ``spec`` takes the wire names (``priorityClassName=...``)."""
    if min_member is not None:
        spec["minMember"] = min_member
    result: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-pg-{name}",
            "generation": generation,
            "creationTimestamp": "2026-11-23T10:00:00Z",
        },
        "spec": spec,
    }
    if status is not None:
        result["status"] = dict(status)
    return result


def workload_object(
    name: str,
    pod_groups: Mapping[str, int | None],
    *,
    namespace: str = "default",
    uid: str | None = None,
) -> dict[str, Any]:
    """A raw ``scheduling.k8s.io/v1alpha1`` Workload: each podGroup's minCount (None: basic)."""
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-wl-{name}",
            "generation": 1,
            "creationTimestamp": "2026-11-23T10:00:00Z",
        },
        "spec": {
            "podGroups": [
                {
                    "name": group,
                    "policy": {"basic": {}} if count is None else {"gang": {"minCount": count}},
                }
                for group, count in pod_groups.items()
            ]
        },
    }


def native_podgroup_object(
    name: str,
    min_count: int | None,
    *,
    namespace: str = "default",
    version: str = "v1beta1",
    uid: str | None = None,
    generation: int = 1,
    labels: Mapping[str, str] | None = None,
    status: Mapping[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A raw Kubernetes PodGroup (``scheduling.k8s.io``): gang of ``min_count`` (None: basic);
    more spec fields as keyword arguments, spelled as on the wire."""
    policy = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    raw: dict[str, Any] = {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-npg-{name}",
            "generation": generation,
            "creationTimestamp": "2026-11-23T10:00:00Z",
            "labels": dict(labels or {}),
        },
        "spec": {"schedulingPolicy": policy, **spec},
    }
    if status is not None:
        raw["status"] = dict(status)
    return raw


def scheduling_group(pod_group: str) -> dict[str, Any]:
    """A pod's ``spec`` fragment naming a native PodGroup (give it as ``spec_extra``)."""
    return {"schedulingGroup": {"podGroupName": pod_group}}


def workload_ref(workload: str, pod_group: str, replica_key: str | None = None) -> dict[str, Any]:
    """A pod's ``spec`` fragment naming a Workload's gang (give it as ``spec_extra``)."""
    ref = {"name": workload, "podGroup": pod_group}
    if replica_key is not None:
        ref["podGroupReplicaKey"] = replica_key
    return {"workloadRef": ref}


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
    queue: str = "default",
) -> GroupPolicy:
    return GroupPolicy(
        queue=queue,
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


#: Every member's arrival tries its group at once (``--gather-seconds=0``): for tests of
#: what a group short of members is told, on a clock that does not move.
TOLD_AT_ONCE = SchedulerSettings(queue=QueueSettings(gather_seconds=0.0))


@dataclass
class Clock:
    """A monotonic clock that moves only when a test moves it."""

    now: float = 1_000.0
    #: Called once, at the next read, then forgotten: lets a test act at an exact moment.
    at_next_read: Callable[[], object] | None = None

    def __call__(self) -> float:
        if self.at_next_read is not None:
            action, self.at_next_read = self.at_next_read, None
            action()
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


#: Per scheduler, the preemption orders of the decisions taken through :func:`decide`.
_ORDERS: weakref.WeakKeyDictionary[Scheduler, list[Order]] = weakref.WeakKeyDictionary()


def decide(scheduler: Scheduler) -> Decision | None:
    """``scheduler.next_decision()``, keeping its preemption order for :func:`take_orders`
    (each decision carries its own; tests look at those of several decisions at once)."""
    decision = scheduler.next_decision()
    if decision is not None and decision.preemption is not None:
        _ORDERS.setdefault(scheduler, []).append(decision.preemption)
    return decision


def decided(scheduler: Scheduler) -> Decision:
    """``scheduler.next_decision()``, which must have a group ready."""
    decision = scheduler.next_decision()
    assert decision is not None
    return decision


def take_orders(scheduler: Scheduler) -> list[Order]:
    """The orders of the decisions taken through :func:`decide` since the last call."""
    return _ORDERS.pop(scheduler, [])
