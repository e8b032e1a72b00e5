"""Devices through DRA on the real control plane, with a fake driver.

The test is the driver: it publishes a ResourceSlice of 8 GPUs for each KWOK
node (model and NVLink-domain attributes) and a DeviceClass whose CEL
selector picks them. kube-controller-manager's resourceclaim controller
makes each pod's claim from its template; coscheduler allocates every
member's devices in one trial and writes the claims before the first
Binding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import SchedulerProcess, StartScheduler
from e2e.tests.helpers import (
    condition,
    pod_scheduled,
    podgroup,
    pods,
    wait_bound,
    wait_not_scheduled,
)
from e2e.tests.test_rbac import SYSTEM, service_account_kubeconfig
from e2e.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.version_sensitive]

__all__ = ["service_account_kubeconfig"]  # the RBAC test's fixture, used here too

DRIVER = "gpu.e2e.example.com"
RESOURCE = "/apis/resource.k8s.io/v1"


@pytest.fixture
def devices(cluster: Cluster, namespace: str) -> Iterator[Callable[..., None]]:
    """Publish GPUs for nodes (and a class), removed after the test: slices are cluster-wide."""
    made: list[str] = []

    def publish(nodes: list[str], per_node: int = 8, domains: int = 2) -> None:
        for node in nodes:
            name = f"{node}-gpus"
            devices_ = [
                {
                    "name": f"gpu-{index}",
                    "attributes": {
                        "model": {"string": "H100"},
                        "nvlink": {"string": f"{node}-nvl{index * domains // per_node}"},
                    },
                    "capacity": {"memory": {"value": "80Gi"}},
                }
                for index in range(per_node)
            ]
            cluster.api.create(
                f"{RESOURCE}/resourceslices",
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": name},
                    "spec": {
                        "driver": DRIVER,
                        "nodeName": node,
                        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                        "devices": devices_,
                    },
                },
            )
            made.append(f"{RESOURCE}/resourceslices/{name}")

    selector = (
        f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].model == "H100" '
        f'&& device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'
    )
    cluster.api.create(
        f"{RESOURCE}/deviceclasses",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": f"{namespace}-gpu"},
            "spec": {"selectors": [{"cel": {"expression": selector}}]},
        },
    )
    made.append(f"{RESOURCE}/deviceclasses/{namespace}-gpu")
    try:
        yield publish
    finally:
        for path in made:
            cluster.api.delete(path)


def _template(cluster: Cluster, namespace: str, name: str, count: int, **more: Any) -> None:
    devices: dict[str, Any] = {
        "requests": [
            {"name": "gpus", "exactly": {"deviceClassName": f"{namespace}-gpu", "count": count}}
        ],
        **more,
    }
    cluster.api.create(
        f"{RESOURCE}/namespaces/{namespace}/resourceclaimtemplates",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name},
            "spec": {"spec": {"devices": devices}},
        },
    )


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
    start_scheduler()
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
    pod = wait_not_scheduled(cluster, namespace, "big-4", "Unschedulable")
    assert "cannot allocate all claims" in pod_scheduled(pod)["message"]
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
