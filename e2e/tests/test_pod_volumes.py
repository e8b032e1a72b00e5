"""Pods with persistent volumes on the real control plane.

Local PersistentVolumes pinned to nodes by their node affinity, claims bound
to them by the volume controller: each member lands where its volume is, or
the gang waits whole saying which claim is not ready.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from e2e import workloads as w
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests.test_pending_reasons import pod_scheduled, wait_bound, wait_not_scheduled

pytestmark = pytest.mark.e2e


def _local_volume(cluster: Cluster, name: str, node: str) -> None:
    term = {
        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]
    }
    cluster.api.create(
        "/api/v1/persistentvolumes",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "local": {"path": f"/mnt/{name}"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
            },
        },
    )


def _claim(cluster: Cluster, namespace: str, name: str, volume: str) -> None:
    cluster.api.create(
        f"/api/v1/namespaces/{namespace}/persistentvolumeclaims",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "volumeName": volume,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )


def _member(
    cluster: Cluster, namespace: str, pool: str, name: str, claim: str, group: str | None
) -> None:
    body: dict[str, Any] = w.pod(name, pool=pool, cpu="1", **({"group": group} if group else {}))
    body["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    cluster.api.create(f"/api/v1/namespaces/{namespace}/pods", body)


def test_each_member_lands_where_its_local_volume_is(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    nodes = add_nodes(3, cpu="8")
    start_scheduler()
    w.create_podgroup(cluster.api, namespace, "ckpt", 2)
    for index, node in enumerate((nodes[2], nodes[0])):
        _local_volume(cluster, f"{namespace}-pv-{index}", node)
        _claim(cluster, namespace, f"data-{index}", f"{namespace}-pv-{index}")
        _member(cluster, namespace, pool, f"ckpt-{index}", f"data-{index}", "ckpt")
    assert wait_bound(cluster, namespace, "ckpt-0")["spec"]["nodeName"] == nodes[2]
    assert wait_bound(cluster, namespace, "ckpt-1")["spec"]["nodeName"] == nodes[0]


def test_a_missing_claim_holds_the_pod_until_it_exists(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    nodes = add_nodes(2, cpu="8")
    start_scheduler()
    _member(cluster, namespace, pool, "late", "later", None)
    pod = wait_not_scheduled(cluster, namespace, "late", "VolumeNotReady")
    assert 'persistentvolumeclaim "later" not found' in pod_scheduled(pod)["message"]
    _local_volume(cluster, f"{namespace}-pv-late", nodes[1])
    _claim(cluster, namespace, "later", f"{namespace}-pv-late")
    assert wait_bound(cluster, namespace, "late")["spec"]["nodeName"] == nodes[1]
