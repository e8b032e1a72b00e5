"""Pod-level requests (``spec.resources``) count as kube-scheduler counts them.

With ``PodLevelResources`` on (beta, on by default since 1.34) a pod may ask
cpu and memory for itself as a whole: that request, not the sum of its
containers', is what it takes of a node. Every pod here asks little per
container and much at the pod level; counted by containers they would all fit.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests.helpers import (
    pod_scheduled,
    unbound_names,
    wait_not_scheduled,
    wait_pod_bound,
)
from e2e.waiting import wait_for

pytestmark = pytest.mark.e2e


def _pod_level(name: str, pool: str, cpu: str, *, group: str | None = None) -> Json:
    """A pod asking 100m cpu in its one container and ``cpu`` for the pod as a whole."""
    body = w.pod(name, pool=pool, cpu="100m", **({"group": group} if group else {}))
    body["spec"]["resources"] = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    return body


def _create(cluster: Cluster, namespace: str, body: Json) -> Json:
    return cluster.api.create(f"/api/v1/namespaces/{namespace}/pods", body)


def test_pods_asking_at_pod_level_fill_a_node_by_their_pod_level_requests(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    (node,) = add_nodes(1, cpu="8")
    # A pod placed by someone else holds 4 cpu by its pod-level request.
    placed = _pod_level("placed", pool, "4")
    placed["spec"]["schedulerName"] = "default-scheduler"
    placed["spec"]["nodeName"] = node
    _create(cluster, namespace, placed)
    start_scheduler()
    for index in range(3):
        _create(cluster, namespace, _pod_level(f"lone-{index}", pool, "2"))
    wait_for(
        lambda: unbound_names(cluster, namespace),
        lambda names: len(names) == 1,
        describe="two of the three 2-cpu pods bound beside the 4-cpu one",
    )
    (left,) = unbound_names(cluster, namespace)
    pod = wait_not_scheduled(cluster, namespace, left, "Unschedulable")
    assert "Insufficient cpu" in pod_scheduled(pod)["message"]
    stored = cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/{left}")
    assert stored["spec"]["resources"]["requests"]["cpu"] == "2"  # served as asked


def test_a_gang_that_does_not_fit_by_pod_level_requests_waits_whole(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="4")
    start_scheduler()
    w.create_podgroup(cluster.api, namespace, "big", 2)
    for index in range(2):
        _create(cluster, namespace, _pod_level(f"big-{index}", pool, "3", group="big"))
    pod = wait_not_scheduled(cluster, namespace, "big-0", "Unschedulable")
    assert "Insufficient cpu" in pod_scheduled(pod)["message"]
    assert unbound_names(cluster, namespace) == ["big-0", "big-1"]

    add_nodes(1, cpu="4")
    nodes = {wait_pod_bound(cluster, namespace, f"big-{i}")["spec"]["nodeName"] for i in range(2)}
    assert len(nodes) == 2  # 3 cpu each: one per node
