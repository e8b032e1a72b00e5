"""Devices through DRA on the real control plane, with a fake driver.

The test is the driver (``e2e/dra_driver.py``): it publishes a ResourceSlice
of 8 GPUs for each KWOK node (model and NVLink-domain attributes) and a
DeviceClass whose CEL selector picks them. kube-controller-manager's resourceclaim controller
makes each pod's claim from its template; coscheduler allocates every
member's devices in one trial and writes the claims before the first
Binding.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.dra_driver import (
    CLASSES,
    DRIVER,
    RESOURCE_API,
    SLICES,
    gpu_class,
    gpu_slice,
    gpu_template,
)
from e2e.scheduler import SchedulerProcess, StartScheduler
from e2e.tests.helpers import (
    condition,
    podgroup,
    pods,
    wait_bound,
    wait_not_scheduled,
)
from e2e.tests.test_dashboard import dashboard, overview_of
from e2e.tests.test_rbac import SYSTEM, service_account_kubeconfig
from e2e.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.version_sensitive]

__all__ = ["service_account_kubeconfig"]  # the RBAC test's fixture, used here too

RESOURCE = RESOURCE_API


@pytest.fixture
def devices(cluster: Cluster, namespace: str) -> Iterator[Callable[..., None]]:
    """Publish GPUs for nodes (and a class), removed after the test: slices are cluster-wide."""
    made: list[str] = []

    def publish(nodes: list[str], per_node: int = 8, domains: int = 2) -> None:
        for node in nodes:
            created = cluster.api.create(SLICES, gpu_slice(node, per_node, domains))
            made.append(f"{SLICES}/{created['metadata']['name']}")

    cluster.api.create(CLASSES, gpu_class(f"{namespace}-gpu"))
    made.append(f"{CLASSES}/{namespace}-gpu")
    try:
        yield publish
    finally:
        for path in made:
            cluster.api.delete(path)


def _template(cluster: Cluster, namespace: str, name: str, count: int, **more: Any) -> None:
    body = gpu_template(name, f"{namespace}-gpu", count)
    body["spec"]["spec"]["devices"].update(more)
    cluster.api.create(f"{RESOURCE}/namespaces/{namespace}/resourceclaimtemplates", body)


def _claims_member(
    cluster: Cluster,
    namespace: str,
    pool: str,
    name: str,
    group: str | None,
    claim: dict[str, str],
) -> Json:
    body: Json = w.pod(name, pool=pool, cpu="1", **({"group": group} if group else {}))
    body["spec"]["resourceClaims"] = [{"name": "gpus", **claim}]
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
    return cluster.api.create(f"/api/v1/namespaces/{namespace}/pods", body)


def _claims(cluster: Cluster, namespace: str) -> list[Json]:
    items: list[Json] = cluster.api.get(f"{RESOURCE}/namespaces/{namespace}/resourceclaims").get(
        "items", []
    )
    return items


def _allocated(claim: Json) -> list[Json]:
    results: list[Json] = (
        claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
    )
    return results


def test_a_gang_gets_its_gpus_whole_from_a_template(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    devices: Callable[..., None],
) -> None:
    nodes = add_nodes(2, cpu="32")
    devices(nodes)
    _, url = dashboard(start_scheduler)
    _template(cluster, namespace, "pair", 2)
    w.create_podgroup(cluster.api, namespace, "train", 4)
    for index in range(4):
        _claims_member(
            cluster,
            namespace,
            pool,
            f"train-{index}",
            "train",
            {"resourceClaimTemplateName": "pair"},
        )
    bound = wait_bound(cluster, namespace, 4, "the gang of 4 with its GPUs")
    node_of = {p["metadata"]["uid"]: p["spec"]["nodeName"] for p in bound}
    claims = wait_for(
        lambda: _claims(cluster, namespace),
        lambda items: len(items) == 4 and all(_allocated(c) for c in items),
        describe="4 claims allocated",
    )
    seen: set[tuple[str, str]] = set()
    for claim in claims:
        (consumer,) = claim["status"]["reservedFor"]
        results = _allocated(claim)
        assert len(results) == 2
        assert {r["pool"] for r in results} == {node_of[consumer["uid"]]}
        for result in results:
            assert (result["pool"], result["device"]) not in seen
            seen.add((result["pool"], result["device"]))
    # The dashboard's room: each node's GPUs of the class, those left free.
    gpus = f"{namespace}-gpu"
    taken = {node: sum(1 for pool, _ in seen if pool == node) for node in nodes}
    wait_for(
        lambda: {n["name"]: n.get("devices") for n in overview_of(url)["room"]["nodes"]},
        lambda room: all(room[node] == {gpus: [8 - taken[node], 8]} for node in nodes),
        describe="the dashboard's room counting the GPUs taken",
    )


def test_a_gang_that_cannot_get_its_gpus_waits_whole_with_no_claim_allocated(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    devices: Callable[..., None],
) -> None:
    nodes = add_nodes(1, cpu="32")
    devices(nodes)
    start_scheduler()
    _template(cluster, namespace, "pair", 2)
    w.create_podgroup(cluster.api, namespace, "big", 5)
    for index in range(5):
        _claims_member(
            cluster, namespace, pool, f"big-{index}", "big", {"resourceClaimTemplateName": "pair"}
        )
    wait_not_scheduled(
        cluster, namespace, "big-4", "Unschedulable", says="cannot allocate all claims"
    )
    assert all(not p["spec"].get("nodeName") for p in pods(cluster, namespace))
    assert not any(_allocated(c) for c in _claims(cluster, namespace))


def test_members_sharing_a_claim_land_where_its_gpus_are(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    devices: Callable[..., None],
) -> None:
    nodes = add_nodes(2, cpu="32")
    devices(nodes)
    start_scheduler()
    cluster.api.create(
        f"{RESOURCE}/namespaces/{namespace}/resourceclaims",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "shared"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpus",
                            "exactly": {"deviceClassName": f"{namespace}-gpu", "count": 4},
                        }
                    ],
                    "constraints": [{"matchAttribute": f"{DRIVER}/nvlink"}],
                }
            },
        },
    )
    w.create_podgroup(cluster.api, namespace, "pair", 2)
    for index in range(2):
        _claims_member(
            cluster, namespace, pool, f"pair-{index}", "pair", {"resourceClaimName": "shared"}
        )
    bound = wait_bound(cluster, namespace, 2, "both sharers")
    assert len({p["spec"]["nodeName"] for p in bound}) == 1
    (claim,) = _claims(cluster, namespace)
    results = _allocated(claim)
    assert len(results) == 4
    assert {r["pool"] for r in results} == {bound[0]["spec"]["nodeName"]}
    assert {c["uid"] for c in claim["status"]["reservedFor"]} == {
        p["metadata"]["uid"] for p in bound
    }


def _create_claim(cluster: Cluster, namespace: str, name: str, count: int, **more: Any) -> Json:
    request = {"name": "gpus", "exactly": {"deviceClassName": f"{namespace}-gpu", "count": count}}
    return cluster.api.create(
        f"{RESOURCE}/namespaces/{namespace}/resourceclaims",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": {"devices": {"requests": [request], **more}},
        },
    )


def _left_allocated(cluster: Cluster, namespace: str, claim: str, node: str, pod: Json) -> None:
    """What a scheduler that died between writing a claim and binding its pod leaves."""
    path = f"{RESOURCE}/namespaces/{namespace}/resourceclaims/{claim}"
    merge = "application/merge-patch+json"
    cluster.api.request(
        "PATCH",
        path,
        {"metadata": {"finalizers": ["resource.kubernetes.io/delete-protection"]}},
        content_type=merge,
    )
    results = [
        {"request": "gpus", "driver": DRIVER, "pool": node, "device": f"gpu-{index}"}
        for index in range(2)
    ]
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    status = {
        "allocation": {
            "devices": {"results": results},
            "nodeSelector": {"nodeSelectorTerms": [term]},
        },
        "reservedFor": [
            {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
        ],
    }
    cluster.api.request("PATCH", f"{path}/status", {"status": status}, content_type=merge)


def test_after_a_restart_between_writing_and_binding_the_pod_goes_where_its_gpus_are(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    devices: Callable[..., None],
) -> None:
    nodes = add_nodes(2, cpu="32")
    devices(nodes)
    _create_claim(cluster, namespace, "held", 2)
    pod = _claims_member(cluster, namespace, pool, "solo", None, {"resourceClaimName": "held"})
    _left_allocated(cluster, namespace, "held", nodes[1], pod)
    start_scheduler()
    (bound,) = wait_bound(cluster, namespace, 1, "the pod, on its claim's node")
    assert bound["spec"]["nodeName"] == nodes[1]


def test_after_a_restart_gpus_held_where_the_pod_cannot_go_are_given_back(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    devices: Callable[..., None],
) -> None:
    nodes = add_nodes(2, cpu="32")
    devices(nodes)
    _create_claim(cluster, namespace, "held", 2)
    pod = _claims_member(cluster, namespace, pool, "solo", None, {"resourceClaimName": "held"})
    _left_allocated(cluster, namespace, "held", nodes[1], pod)
    cluster.api.request(
        "PATCH",
        f"/api/v1/nodes/{nodes[1]}",
        {"spec": {"unschedulable": True}},
        content_type="application/merge-patch+json",
    )
    start_scheduler()
    (bound,) = wait_bound(cluster, namespace, 1, "the pod, after its claim was let go")
    assert bound["spec"]["nodeName"] == nodes[0]
    (claim,) = wait_for(
        lambda: _claims(cluster, namespace),
        lambda items: (
            all(r["pool"] == nodes[0] for c in items for r in _allocated(c))
            and all(_allocated(c) for c in items)
        ),
        describe="the claim allocated again, on the node the pod went to",
    )
    assert [c["uid"] for c in claim["status"]["reservedFor"]] == [pod["metadata"]["uid"]]


def _gpu_gang(
    cluster: Cluster, namespace: str, pool: str, name: str, size: int, **spec: Any
) -> None:
    w.create_podgroup(cluster.api, namespace, name, size, **spec)
    for index in range(size):
        _claims_member(
            cluster,
            namespace,
            pool,
            f"{name}-{index}",
            name,
            {"resourceClaimTemplateName": "pair"},
        )


def _group_waits(cluster: Cluster, namespace: str, name: str, reason: str) -> str:
    found = wait_for(
        lambda: condition(podgroup(cluster, namespace, name), "Unschedulable"),
        lambda c: c.get("status") == "True" and c.get("reason") == reason,
        describe=f"PodGroup {namespace}/{name} Unschedulable with reason {reason}",
    )
    return str(found["message"])


def test_a_queue_capped_in_gpus_holds_a_second_gang_back(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    devices: Callable[..., None],
) -> None:
    nodes = add_nodes(1, cpu="32")
    devices(nodes)
    queue = f"{namespace}-gpus"
    resource = f"deviceclass.resource.kubernetes.io/{namespace}-gpu"
    w.create_queue(cluster.api, queue, namespaces=[namespace], max={resource: "4"})
    try:
        start_scheduler()
        _template(cluster, namespace, "pair", 2)
        _gpu_gang(cluster, namespace, pool, "first", 2, queue=queue)
        wait_bound(cluster, namespace, 2, "the first gang, within its queue's 4 GPUs")
        _gpu_gang(cluster, namespace, pool, "second", 2, queue=queue)
        message = _group_waits(cluster, namespace, "second", "QueueMaxReached")
        assert resource in message
        # The node has 4 GPUs left: only the queue holds the second gang back.
        assert len([c for c in _claims(cluster, namespace) if _allocated(c)]) == 2
    finally:
        cluster.api.delete(f"{w.QUEUES}/{queue}")


def test_preemption_frees_a_victim_gangs_gpus_for_a_higher_gang(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    devices: Callable[..., None],
) -> None:
    nodes = add_nodes(1, cpu="32")
    devices(nodes)
    start_scheduler()
    _template(cluster, namespace, "pair", 2)
    _gpu_gang(cluster, namespace, pool, "low", 4, priority=1)
    wait_bound(cluster, namespace, 4, "the low gang on all 8 GPUs")
    _gpu_gang(cluster, namespace, pool, "urgent", 2, priority=100)
    wait_for(
        lambda: [p for p in pods(cluster, namespace) if p["metadata"]["name"].startswith("urgent")],
        lambda items: len(items) == 2 and all(p["spec"].get("nodeName") for p in items),
        describe="the urgent gang bound on the GPUs its victims held",
        timeout=120,
    )
    left = [p for p in pods(cluster, namespace) if p["metadata"]["name"].startswith("low")]
    assert all(p["metadata"].get("deletionTimestamp") for p in left)
    urgent_claims = [
        c
        for c in _claims(cluster, namespace)
        if c["metadata"]["name"].startswith("urgent") and _allocated(c)
    ]
    assert len(urgent_claims) == 2


def test_the_service_accounts_rbac_is_enough_for_devices(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    service_account_kubeconfig: Path,
    devices: Callable[..., None],
    tmp_path: Path,
) -> None:
    nodes = add_nodes(1, cpu="32")
    devices(nodes)
    process = SchedulerProcess(
        kubeconfig=service_account_kubeconfig,
        log_path=tmp_path / "coscheduler.log",
        args=["--namespace", namespace, "--lease-namespace", SYSTEM, "--identity", "dra-rbac"],
    )
    try:
        process.start()
        _template(cluster, namespace, "pair", 2)
        _gpu_gang(cluster, namespace, pool, "sa", 2)
        wait_bound(cluster, namespace, 2, "the gang, its claims written under the ServiceAccount")
        claims = _claims(cluster, namespace)
        assert len(claims) == 2
        assert all(_allocated(c) and c["status"]["reservedFor"] for c in claims)
        assert "not readable by this ServiceAccount" not in process.log()
    finally:
        process.stop()


# -- a native PodGroup's own claims (DRAWorkloadResourceClaims, 1.37) ------------

_NATIVE_CLAIMS = (
    pytest.mark.kubernetes("1.37", reason="PodGroup-level claims are beta in 1.37"),
    pytest.mark.skipif(
        os.environ.get("COSCHEDULER_E2E_GANG_API") == "0",
        reason="the session's cluster was started without the gang API",
    ),
)


def native_claims(test: Callable[..., None]) -> Callable[..., None]:
    for mark in _NATIVE_CLAIMS:
        test = mark(test)
    return test


def _native_gpu_gang(
    cluster: Cluster, namespace: str, pool: str, name: str, size: int, template: str
) -> Json:
    """A native PodGroup whose members share one claim made from ``template`` for the group."""
    entry = {"name": "gpus", "resourceClaimTemplateName": template}
    group = w.create_native_podgroup(cluster.api, namespace, name, size, resourceClaims=[entry])
    for index in range(size):
        body = w.pod(f"{name}-{index}", pool=pool, cpu="1")
        body["spec"]["schedulingGroup"] = {"podGroupName": name}
        body["spec"]["resourceClaims"] = [entry]
        body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
        cluster.api.create(f"/api/v1/namespaces/{namespace}/pods", body)
    return group


def _group_claim_made(cluster: Cluster, namespace: str, group: str) -> Json:
    """The one claim kube-controller-manager made for the group, once every member names it."""

    def named_by_all(items: list[Json]) -> bool:
        return bool(items) and all(
            [
                s.get("resourceClaimName")
                for s in p.get("status", {}).get("resourceClaimStatuses", [])
            ]
            == [items[0]["metadata"]["name"]]
            for p in pods(cluster, namespace)
        )

    (claim,) = wait_for(
        lambda: _claims(cluster, namespace),
        named_by_all,
        describe=f"the claim of PodGroup {group}, named in every member's status",
    )
    (owner,) = claim["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("PodGroup", group)
    return claim


GROUP_CONSUMER = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups"}


@native_claims
def test_the_podgroup_claim_fields_read_are_the_api_server_s(cluster: Cluster) -> None:
    """The shape ``api/native_podgroup.py`` reads, from the served OpenAPI schema."""
    schemas = cluster.api.get("/openapi/v3/apis/scheduling.k8s.io/v1beta1")["components"]["schemas"]
    entry = schemas["io.k8s.api.scheduling.v1beta1.PodGroupResourceClaim"]["properties"]
    assert set(entry) == {"name", "resourceClaimName", "resourceClaimTemplateName"}


@native_claims
def test_a_native_podgroups_claim_is_allocated_once_and_reserved_for_the_group(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    devices: Callable[..., None],
) -> None:
    nodes = add_nodes(2, cpu="32")
    devices(nodes)
    _template(cluster, namespace, "four", 4, constraints=[{"matchAttribute": f"{DRIVER}/nvlink"}])
    group = _native_gpu_gang(cluster, namespace, pool, "train", 4, "four")
    _group_claim_made(cluster, namespace, "train")
    start_scheduler()
    bound = wait_bound(cluster, namespace, 4, "the native gang around its group's GPUs")
    (claim,) = _claims(cluster, namespace)
    results = _allocated(claim)
    assert len(results) == 4
    # Every member lands where the group's devices are: one node, one NVLink domain.
    assert {r["pool"] for r in results} == {p["spec"]["nodeName"] for p in bound}
    assert len({(r["pool"], r["device"]) for r in results}) == 4
    assert claim["status"]["reservedFor"] == [
        {**GROUP_CONSUMER, "name": "train", "uid": group["metadata"]["uid"]}
    ]
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]


@native_claims
def test_a_native_podgroup_that_cannot_get_its_devices_waits_whole_with_none_allocated(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    devices: Callable[..., None],
) -> None:
    nodes = add_nodes(2, cpu="32")
    devices(nodes)
    # 12 GPUs on one node: each node has 8.
    _template(cluster, namespace, "twelve", 12)
    _native_gpu_gang(cluster, namespace, pool, "big", 3, "twelve")
    _group_claim_made(cluster, namespace, "big")
    start_scheduler()
    wait_not_scheduled(
        cluster, namespace, "big-2", "Unschedulable", says="cannot allocate all claims"
    )
    assert all(not p["spec"].get("nodeName") for p in pods(cluster, namespace))
    (claim,) = _claims(cluster, namespace)
    assert not _allocated(claim)
    assert not claim.get("status", {}).get("reservedFor")


@native_claims
def test_a_group_claim_left_where_no_member_can_go_is_let_go_and_allocated_again(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
    devices: Callable[..., None],
) -> None:
    nodes = add_nodes(2, cpu="32")
    devices(nodes)
    _template(cluster, namespace, "two", 2)
    group = _native_gpu_gang(cluster, namespace, pool, "held", 2, "two")
    claim = _group_claim_made(cluster, namespace, "held")
    # What a scheduler that died between writing the claim and binding leaves.
    path = f"{RESOURCE}/namespaces/{namespace}/resourceclaims/{claim['metadata']['name']}"
    merge = "application/merge-patch+json"
    finalizers = {"metadata": {"finalizers": ["resource.kubernetes.io/delete-protection"]}}
    cluster.api.request("PATCH", path, finalizers, content_type=merge)
    results = [
        {"request": "gpus", "driver": DRIVER, "pool": nodes[1], "device": f"gpu-{index}"}
        for index in range(2)
    ]
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [nodes[1]]}]}
    consumer = {**GROUP_CONSUMER, "name": "held", "uid": group["metadata"]["uid"]}
    status = {
        "allocation": {
            "devices": {"results": results},
            "nodeSelector": {"nodeSelectorTerms": [term]},
        },
        "reservedFor": [consumer],
    }
    cluster.api.request("PATCH", f"{path}/status", {"status": status}, content_type=merge)
    cluster.api.request(
        "PATCH", f"/api/v1/nodes/{nodes[1]}", {"spec": {"unschedulable": True}}, content_type=merge
    )
    start_scheduler()
    bound = wait_bound(cluster, namespace, 2, "the gang, after its group's claim was let go")
    assert {p["spec"]["nodeName"] for p in bound} == {nodes[0]}
    (claim,) = _claims(cluster, namespace)
    assert {r["pool"] for r in _allocated(claim)} == {nodes[0]}
    assert claim["status"]["reservedFor"] == [consumer]
