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
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests.helpers import PROMPT_EVENTS, pod_scheduled, wait_not_scheduled, wait_pod_bound
from e2e.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.version_sensitive]

SELECTED = "volume.kubernetes.io/selected-node"


def _local_volume(cluster: Cluster, name: str, node: str) -> None:
    """A local volume of no class on ``node``, for claims that name it."""
    _class_volume(cluster, name, node, "")


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
    assert wait_pod_bound(cluster, namespace, "ckpt-0")["spec"]["nodeName"] == nodes[2]
    assert wait_pod_bound(cluster, namespace, "ckpt-1")["spec"]["nodeName"] == nodes[0]


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
    assert wait_pod_bound(cluster, namespace, "late")["spec"]["nodeName"] == nodes[1]


def _first_consumer_class(cluster: Cluster, name: str, provisioner: str) -> None:
    cluster.api.create(
        "/apis/storage.k8s.io/v1/storageclasses",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": "WaitForFirstConsumer",
        },
    )


def _class_volume(
    cluster: Cluster, name: str, node: str, storage_class: str, claim_ref: Json | None = None
) -> None:
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
                "storageClassName": storage_class,
                "local": {"path": f"/mnt/{name}"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
                **({"claimRef": claim_ref} if claim_ref else {}),
            },
        },
    )


def _waiting_claim(cluster: Cluster, namespace: str, name: str, storage_class: str) -> None:
    cluster.api.create(
        f"/api/v1/namespaces/{namespace}/persistentvolumeclaims",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": storage_class,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )


def _claim_of(cluster: Cluster, namespace: str, name: str) -> Json:
    result: Json = cluster.api.get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}")
    return result


def test_first_consumer_claims_are_bound_to_volumes_near_their_members_before_any_is_bound(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    nodes = add_nodes(3, cpu="1")
    storage_class = f"{namespace}-local"
    _first_consumer_class(cluster, storage_class, "kubernetes.io/no-provisioner")
    # Volumes on nodes 0 and 2 only: each member needs its own, 1 cpu each.
    for index in (0, 2):
        _class_volume(cluster, f"{namespace}-wffc-{index}", nodes[index], storage_class)
    start_scheduler()
    w.create_podgroup(cluster.api, namespace, "ffc", 2)
    for index in range(2):
        _waiting_claim(cluster, namespace, f"scratch-{index}", storage_class)
        _member(cluster, namespace, pool, f"ffc-{index}", f"scratch-{index}", "ffc")
    placed = {wait_pod_bound(cluster, namespace, f"ffc-{i}")["spec"]["nodeName"] for i in range(2)}
    assert placed == {nodes[0], nodes[2]}
    for index in range(2):
        claim = _claim_of(cluster, namespace, f"scratch-{index}")
        assert claim["status"]["phase"] == "Bound"
        volume = cluster.api.get(f"/api/v1/persistentvolumes/{claim['spec']['volumeName']}")
        host = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
        pod = cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/ffc-{index}")
        assert host["matchExpressions"][0]["values"] == [pod["spec"]["nodeName"]]


def test_a_provisioned_claim_is_asked_for_near_the_chosen_node(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    nodes = add_nodes(2, cpu="8")
    storage_class = f"{namespace}-fast"
    _first_consumer_class(cluster, storage_class, "example.com/fake-provisioner")
    start_scheduler()
    _waiting_claim(cluster, namespace, "fresh", storage_class)
    _member(cluster, namespace, pool, "fresh-user", "fresh", None)
    # Play the provisioner: a volume near the node the scheduler selected.
    claim = wait_for(
        lambda: _claim_of(cluster, namespace, "fresh"),
        lambda c: SELECTED in c["metadata"].get("annotations", {}),
        describe="the claim annotated with the selected node",
    )
    chosen = claim["metadata"]["annotations"][SELECTED]
    assert chosen in nodes
    assert not cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/fresh-user")["spec"].get(
        "nodeName"
    ), "the pod must wait for its volume"
    claim_ref = {"namespace": namespace, "name": "fresh", "uid": claim["metadata"]["uid"]}
    _class_volume(cluster, f"{namespace}-provisioned", chosen, storage_class, claim_ref)
    assert wait_pod_bound(cluster, namespace, "fresh-user")["spec"]["nodeName"] == chosen


def test_a_gang_whose_volumes_cannot_all_be_reached_waits_whole(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    nodes = add_nodes(2, cpu="1")
    start_scheduler(*PROMPT_EVENTS)
    # Both volumes on the same 1-cpu node: only one member can go there.
    w.create_podgroup(cluster.api, namespace, "cramped", 2)
    for index in range(2):
        _local_volume(cluster, f"{namespace}-cramped-{index}", nodes[0])
        _claim(cluster, namespace, f"cramped-{index}", f"{namespace}-cramped-{index}")
        _member(cluster, namespace, pool, f"cramped-{index}", f"cramped-{index}", "cramped")
    pod = wait_not_scheduled(cluster, namespace, "cramped-0", "Unschedulable")
    assert "node(s) had volume node affinity conflict" in pod_scheduled(pod)["message"]
    for index in range(2):
        member = cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/cramped-{index}")
        assert not member["spec"].get("nodeName")
