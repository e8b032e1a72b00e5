"""Objects of the scenarios: PodGroups, ReplicaSets, Jobs and pods, as plain JSON.

Every workload pins its pods to a *pool* of nodes (a label the test's own
nodes carry), so tests sharing one cluster never compete for capacity.
"""

from __future__ import annotations

from typing import Any, TypedDict, Unpack

from e2e.api import ApiClient, Json
from e2e.kwok_stages import COMPLETE_AFTER_ANNOTATION

__all__ = [
    "POOL_LABEL",
    "create_job",
    "create_native_member",
    "create_native_podgroup",
    "create_pod",
    "create_podgroup",
    "create_replicaset",
    "create_workload",
    "create_workload_pod",
    "create_xk8s_podgroup",
    "events_about",
    "list_pods",
    "podgroup",
]

POOL_LABEL = "e2e.coscheduler.dev/pool"
GROUP_LABEL = "scheduling.sigs.k8s.io/pod-group"
ROLE_LABEL = "scheduling.sigs.k8s.io/role"
COMPLETE_AFTER = COMPLETE_AFTER_ANNOTATION
PODGROUPS = "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/{ns}/podgroups"
#: scheduler-plugins' PodGroup API and label, as Kubeflow's and Spark's operators use them.
XK8S_API_VERSION = "scheduling.x-k8s.io/v1alpha1"
XK8S_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
XK8S_PODGROUPS = f"/apis/{XK8S_API_VERSION}/namespaces/{{ns}}/podgroups"
#: Kubernetes' own gang API (1.35, behind the GenericWorkload gate).
WORKLOAD_API_VERSION = "scheduling.k8s.io/v1alpha1"
WORKLOADS = f"/apis/{WORKLOAD_API_VERSION}/namespaces/{{ns}}/workloads"
#: Kubernetes' own PodGroup (1.37, GenericWorkload): `kubectl get podgroup` resolves to it.
NATIVE_API_VERSION = "scheduling.k8s.io/v1beta1"
NATIVE_PODGROUPS = f"/apis/{NATIVE_API_VERSION}/namespaces/{{ns}}/podgroups"


def _pod_spec(
    *,
    pool: str,
    cpu: str,
    memory: str = "1Gi",
    scheduler: str = "coscheduler",
    restart: str | None = None,
    extra: dict[str, str] | None = None,
) -> Json:
    spec: Json = {
        "schedulerName": scheduler,
        "nodeSelector": {POOL_LABEL: pool},
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "work",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": memory, **(extra or {})}},
            }
        ],
    }
    if restart:
        spec["restartPolicy"] = restart
    return spec


def _labels(
    group: str | None, role: str | None, app: str, group_label: str = GROUP_LABEL
) -> dict[str, str]:
    labels = {"app": app}
    if group:
        labels[group_label] = group
    if role:
        labels[ROLE_LABEL] = role
    return labels


def podgroup(name: str, min_member: int, **spec: Any) -> Json:
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member, **spec},
    }


def create_podgroup(
    api: ApiClient, namespace: str, name: str, min_member: int, **spec: Any
) -> Json:
    return api.create(PODGROUPS.format(ns=namespace), podgroup(name, min_member, **spec))


QUEUES = "/apis/scheduling.sigs.k8s.io/v1alpha1/queues"


def queue(name: str, **spec: Any) -> Json:
    """A Queue's body (cluster-scoped)."""
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def create_queue(api: ApiClient, name: str, **spec: Any) -> Json:
    return api.create(QUEUES, queue(name, **spec))


def create_xk8s_podgroup(
    api: ApiClient, namespace: str, name: str, min_member: int, **spec: Any
) -> Json:
    """A PodGroup of scheduling.x-k8s.io, as an operator written for scheduler-plugins makes it."""
    body = {**podgroup(name, min_member, **spec), "apiVersion": XK8S_API_VERSION}
    return api.create(XK8S_PODGROUPS.format(ns=namespace), body)


def create_replicaset(
    api: ApiClient,
    namespace: str,
    name: str,
    *,
    replicas: int,
    pool: str,
    cpu: str,
    group: str | None = None,
    role: str | None = None,
    priority_class: str | None = None,
    group_label: str = GROUP_LABEL,
) -> Json:
    spec = _pod_spec(pool=pool, cpu=cpu)
    if priority_class:
        spec["priorityClassName"] = priority_class
    controller = {"replicas": replicas, "selector": {"matchLabels": {"app": name}}}
    template = {"metadata": {"labels": _labels(group, role, name, group_label)}, "spec": spec}
    return _create_controller(api, namespace, "apps/v1", "ReplicaSet", name, controller, template)


def create_job(
    api: ApiClient,
    namespace: str,
    name: str,
    *,
    parallelism: int,
    pool: str,
    cpu: str,
    group: str | None = None,
    run_seconds: float = 3.0,
    group_label: str = GROUP_LABEL,
    annotations: dict[str, str] | None = None,
    completions: int | None = None,
    priority_class: str | None = None,
    scheduling: Json | None = None,
) -> Json:
    """A Job whose pods KWOK completes ``run_seconds`` after they start running.

    ``annotations`` go on the Job itself (a gang annotation, say), not on its pods;
    ``completions`` defaults to ``parallelism``; ``scheduling`` is the Job's own
    ``spec.scheduling`` (1.37, ``WorkloadWithJob``: ``{"schedulingPolicy": {"gang": {}}}``).
    """
    controller: Json = {
        "parallelism": parallelism,
        "completions": parallelism if completions is None else completions,
        "backoffLimit": 0,
    }
    if scheduling is not None:
        controller["scheduling"] = scheduling
    spec = _pod_spec(pool=pool, cpu=cpu, restart="Never")
    if priority_class:
        spec["priorityClassName"] = priority_class
    template = {
        "metadata": {
            "labels": _labels(group, None, name, group_label),
            "annotations": {COMPLETE_AFTER: f"{run_seconds}s"},
        },
        "spec": spec,
    }
    return _create_controller(
        api, namespace, "batch/v1", "Job", name, controller, template, annotations
    )


def _create_controller(
    api: ApiClient,
    namespace: str,
    api_version: str,
    kind: str,
    name: str,
    spec: Json,
    template: Json,
    annotations: dict[str, str] | None = None,
) -> Json:
    """A workload controller (ReplicaSet, Job) whose pods are made from ``template``."""
    path = f"/apis/{api_version}/namespaces/{namespace}/{kind.lower()}s"  # replicasets, jobs
    body = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {**spec, "template": template},
    }
    return api.create(path, body)


class PodShape(TypedDict, total=False):
    """A test pod's optional traits: its group and role labels, its scheduler."""

    group: str | None
    role: str | None
    scheduler: str


def pod(name: str, *, pool: str, cpu: str, **shape: Unpack[PodShape]) -> Json:
    """A bare pod's body, for tests that add fields before creating it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": _labels(shape.get("group"), shape.get("role"), name)},
        "spec": _pod_spec(pool=pool, cpu=cpu, scheduler=shape.get("scheduler", "coscheduler")),
    }


def create_pod(
    api: ApiClient, namespace: str, name: str, *, pool: str, cpu: str, **shape: Unpack[PodShape]
) -> Json:
    return api.create(
        f"/api/v1/namespaces/{namespace}/pods", pod(name, pool=pool, cpu=cpu, **shape)
    )


def list_pods(api: ApiClient, namespace: str, selector: str | None = None) -> list[Json]:
    path = f"/api/v1/namespaces/{namespace}/pods"
    if selector:
        path += f"?labelSelector={selector}"
    items: list[Json] = api.get(path).get("items", [])
    return items


def events_about(
    api: ApiClient,
    namespace: str,
    name: str,
    *,
    api_version: str,
    reason: str,
    containing: str = "",
) -> list[Json]:
    """The events of ``reason`` about the object ``name`` of ``api_version`` whose message
    contains ``containing`` (a name may be shared by kinds: an operator's job and its PodGroup)."""
    path = f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name={name}"
    return [
        e
        for e in api.get(path).get("items", [])
        if e["reason"] == reason
        and e["involvedObject"].get("apiVersion") == api_version
        and containing in e["message"]
    ]


def create_workload(api: ApiClient, namespace: str, name: str, pod_groups: dict[str, Json]) -> Json:
    """A Workload whose podGroups have these policies (``{"gang": {"minCount": 4}}``, ...).

    Strict field validation: a field name the API server does not know is an error, not dropped.
    """
    body = {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {"podGroups": [{"name": g, "policy": p} for g, p in pod_groups.items()]},
    }
    return api.create(f"{WORKLOADS.format(ns=namespace)}?fieldValidation=Strict", body)


def create_workload_pod(
    api: ApiClient,
    namespace: str,
    name: str,
    *,
    workload: str,
    pod_group: str,
    replica_key: str | None = None,
    pool: str,
    cpu: str,
    scheduler: str = "coscheduler",
) -> Json:
    """A pod naming a Workload's podGroup in ``spec.workloadRef`` (strictly validated too)."""
    body = pod(name, pool=pool, cpu=cpu, scheduler=scheduler)
    ref = {"name": workload, "podGroup": pod_group}
    if replica_key is not None:
        ref["podGroupReplicaKey"] = replica_key
    body["spec"]["workloadRef"] = ref
    return api.create(f"/api/v1/namespaces/{namespace}/pods?fieldValidation=Strict", body)


def create_native_podgroup(
    api: ApiClient,
    namespace: str,
    name: str,
    min_count: int | None,
    *,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Json:
    """Kubernetes' own PodGroup: a gang of ``min_count`` (None: basic); more spec fields as
    given on the wire. Strictly validated: a field the server does not know fails."""
    policy = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    body = {
        "apiVersion": NATIVE_API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"schedulingPolicy": policy, **spec},
    }
    return api.create(f"{NATIVE_PODGROUPS.format(ns=namespace)}?fieldValidation=Strict", body)


def create_native_member(
    api: ApiClient,
    namespace: str,
    name: str,
    *,
    group: str,
    pool: str,
    cpu: str,
    scheduler: str = "coscheduler",
    priority_class: str | None = None,
) -> Json:
    """A pod naming a native PodGroup in ``spec.schedulingGroup.podGroupName``."""
    body = pod(name, pool=pool, cpu=cpu, scheduler=scheduler)
    body["spec"]["schedulingGroup"] = {"podGroupName": group}
    if priority_class:
        body["spec"]["priorityClassName"] = priority_class
    return api.create(f"/api/v1/namespaces/{namespace}/pods?fieldValidation=Strict", body)
