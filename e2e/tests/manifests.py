"""Small builders of the objects the harness tests create, so tests read as intent."""

from __future__ import annotations

from typing import Any

from e2e.kwok_stages import COMPLETE_AFTER_ANNOTATION

Json = dict[str, Any]

TEST_SCHEDULER = "coscheduler-e2e-test"
"""A scheduler name nobody serves: pods stay Pending until a test binds them itself."""


def pod_spec(*, scheduler: str = TEST_SCHEDULER, restart: str = "Always") -> Json:
    return {
        "schedulerName": scheduler,
        "restartPolicy": restart,
        "containers": [
            {
                "name": "main",
                "image": "registry.invalid/fake:1",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            }
        ],
    }


def pod(name: str, *, complete_after: str | None = None) -> Json:
    annotations = {COMPLETE_AFTER_ANNOTATION: complete_after} if complete_after else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": pod_spec(),
    }


def binding(pod_name: str, node: str) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod_name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def replicaset(name: str, replicas: int) -> Json:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec()},
        },
    }


def job(name: str, *, complete_after: str | None = None) -> Json:
    annotations = {COMPLETE_AFTER_ANNOTATION: complete_after} if complete_after else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "completions": 1,
            "parallelism": 1,
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": pod_spec(restart="Never"),
            },
        },
    }


def podgroup_yaml(name: str, *, min_member: int, roles: tuple[tuple[str, int], ...] = ()) -> str:
    lines = [
        "apiVersion: scheduling.sigs.k8s.io/v1alpha1",
        "kind: PodGroup",
        f"metadata: {{name: {name}}}",
        "spec:",
        f"  minMember: {min_member}",
    ]
    if roles:
        lines.append("  roles:")
        lines += [f"  - {{name: {role}, minMember: {count}}}" for role, count in roles]
    return "\n".join(lines) + "\n"


PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


def priority_class(name: str, value: int, *, preemption_policy: str | None = None) -> Json:
    """A cluster-scoped PriorityClass (``preemption_policy="Never"``: its pods never preempt)."""
    body: Json = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if preemption_policy is not None:
        body["preemptionPolicy"] = preemption_policy
    return body


def disruption_budgets(namespace: str) -> str:
    """The path of the namespace's PodDisruptionBudgets."""
    return f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"


def disruption_budget(name: str, app: str, max_unavailable: int) -> Json:
    """A PodDisruptionBudget over the pods labelled ``app=APP``."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": app}}},
    }
