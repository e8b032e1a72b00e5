"""The local control plane is real: the API server validates, controllers act, KWOK runs pods."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from e2e import build
from e2e import versions as pinned
from e2e import workloads as w
from e2e.api import ApiError, Json, write_token_kubeconfig
from e2e.controlplane import Cluster
from e2e.fixtures import GangCheck
from e2e.nodes import GPU_RESOURCE
from e2e.tests import manifests
from e2e.waiting import wait_for

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CRD = REPO / "crds" / "podgroups.yaml"
CRD_NAME = "podgroups.scheduling.sigs.k8s.io"


def _pod(cluster: Cluster, namespace: str, name: str) -> Callable[[], Json]:
    return lambda: cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")


def _phase(pod: Json) -> str:
    return str(pod.get("status", {}).get("phase", ""))


def test_crd_applies_and_get_pg_shows_printer_columns(
    cluster: Cluster, namespace: str, podgroup_crd: str
) -> None:
    cluster.apply(manifests.podgroup_yaml("trainers", min_member=4), namespace=namespace)

    table = cluster.kubectl("get", "pg", "-n", namespace).stdout

    header, row = table.splitlines()[:2]
    assert header.split() == [
        "NAME",
        "PHASE",
        "MINMEMBER",
        "SCHEDULED",
        "RUNNING",
        "SUCCEEDED",
        "FAILED",
        "POSITION",
        "AGE",
    ]
    assert row.split()[0] == "trainers"
    assert "4" in row.split()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"min_member": 0},
            "spec.minMember in body should be greater than or equal to 1",
            id="min-member-zero",
        ),
        pytest.param(
            {"min_member": 2, "roles": (("worker", 1), ("worker", 1))},
            "role names must be unique within a PodGroup",
            id="duplicate-role-names",
        ),
    ],
)
def test_invalid_podgroup_is_refused_with_the_schemas_message(
    cluster: Cluster, namespace: str, podgroup_crd: str, spec: dict[str, object], message: str
) -> None:
    manifest = manifests.podgroup_yaml("bad", **spec)  # type: ignore[arg-type]

    with pytest.raises(subprocess.CalledProcessError) as refused:
        cluster.apply(manifest, namespace=namespace)

    assert message in refused.value.stderr
    assert cluster.kubectl("get", "pg", "-n", namespace, "-o", "name").stdout == ""


def test_replicaset_creates_its_pods(cluster: Cluster, namespace: str) -> None:
    cluster.api.create(
        f"/apis/apps/v1/namespaces/{namespace}/replicasets", manifests.replicaset("web", 3)
    )

    pods = wait_for(
        lambda: cluster.api.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector=app%3Dweb"),
        lambda listed: len(listed["items"]) == 3,
        describe="the ReplicaSet controller to create 3 pods",
    )

    assert {p["spec"]["schedulerName"] for p in pods["items"]} == {manifests.TEST_SCHEDULER}
    assert all(_phase(p) == "Pending" for p in pods["items"])


def test_pod_bound_by_a_binding_to_a_kwok_node_becomes_running(
    cluster: Cluster, namespace: str, node_factory: Callable[..., list[str]]
) -> None:
    [node] = node_factory(1)
    cluster.api.create(f"/api/v1/namespaces/{namespace}/pods", manifests.pod("p0"))

    cluster.api.create(
        f"/api/v1/namespaces/{namespace}/pods/p0/binding", manifests.binding("p0", node)
    )

    pod = wait_for(
        _pod(cluster, namespace, "p0"),
        lambda p: _phase(p) == "Running",
        describe="pod p0 to run on its KWOK node",
    )
    assert pod["spec"]["nodeName"] == node
    assert pod["status"]["podIP"]


def test_a_second_binding_is_a_conflict(
    cluster: Cluster, namespace: str, node_factory: Callable[..., list[str]]
) -> None:
    first, second = node_factory(2)
    cluster.api.create(f"/api/v1/namespaces/{namespace}/pods", manifests.pod("p0"))
    path = f"/api/v1/namespaces/{namespace}/pods/p0/binding"
    cluster.api.create(path, manifests.binding("p0", first))

    with pytest.raises(ApiError) as conflict:
        cluster.api.create(path, manifests.binding("p0", second))

    assert conflict.value.status == 409


def test_job_pod_on_a_kwok_node_succeeds(
    cluster: Cluster, namespace: str, node_factory: Callable[..., list[str]]
) -> None:
    [node] = node_factory(1)
    cluster.api.create(f"/apis/batch/v1/namespaces/{namespace}/jobs", manifests.job("once"))
    listed = wait_for(
        lambda: cluster.api.get(
            f"/api/v1/namespaces/{namespace}/pods?labelSelector=job-name%3Donce"
        ),
        lambda pods: len(pods["items"]) == 1,
        describe="the Job controller to create the Job's pod",
    )
    name = listed["items"][0]["metadata"]["name"]

    cluster.api.create(
        f"/api/v1/namespaces/{namespace}/pods/{name}/binding", manifests.binding(name, node)
    )

    wait_for(
        _pod(cluster, namespace, name),
        lambda p: _phase(p) == "Succeeded",
        describe=f"Job pod {name} to succeed",
    )
    wait_for(
        lambda: cluster.api.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/once"),
        lambda job: job.get("status", {}).get("succeeded") == 1,
        describe="the Job to count its pod as succeeded",
    )


def test_annotated_pod_runs_for_its_delay_then_succeeds(
    cluster: Cluster, namespace: str, node_factory: Callable[..., list[str]]
) -> None:
    [node] = node_factory(1)
    cluster.api.create(
        f"/api/v1/namespaces/{namespace}/pods", manifests.pod("timed", complete_after="3s")
    )
    cluster.api.create(
        f"/api/v1/namespaces/{namespace}/pods/timed/binding", manifests.binding("timed", node)
    )

    wait_for(
        _pod(cluster, namespace, "timed"),
        lambda p: _phase(p) == "Running",
        describe="pod timed to run",
    )
    wait_for(
        _pod(cluster, namespace, "timed"),
        lambda p: _phase(p) == "Succeeded",
        describe="pod timed to succeed after its 3s",
        timeout=20,
    )


def test_nodes_carry_their_resources_labels_and_taints(
    cluster: Cluster, node_factory: Callable[..., list[str]]
) -> None:
    [name] = node_factory(
        1, cpu="16", memory="64Gi", gpus=4, labels={"pool": "gpu"}, taints=("gpu=true:NoSchedule",)
    )

    node = cluster.api.get(f"/api/v1/nodes/{name}")

    assert node["status"]["allocatable"][GPU_RESOURCE] == "4"
    assert node["status"]["allocatable"]["cpu"] == "16"
    assert node["metadata"]["labels"]["pool"] == "gpu"
    assert {"key": "gpu", "value": "true", "effect": "NoSchedule"} in node["spec"]["taints"]


def test_removed_node_is_gone(cluster: Cluster, node_factory: Callable[..., list[str]]) -> None:
    [name] = node_factory(1)

    cluster.remove_nodes([name])

    assert cluster.api.get_or_none(f"/api/v1/nodes/{name}") is None


def _service_account_kubeconfig(cluster: Cluster, token: str, path: Path) -> Path:
    return write_token_kubeconfig(
        path, server=cluster.server, ca_cert=cluster.api.pki.ca_cert, token=token
    )


def test_rbac_denies_a_service_account_what_it_was_not_granted(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    cluster.apply(
        f"""
apiVersion: v1
kind: ServiceAccount
metadata: {{name: reader}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: pod-reader}}
rules:
- {{apiGroups: [""], resources: [pods], verbs: [get, list]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: reader}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}}
subjects:
- {{kind: ServiceAccount, name: reader, namespace: {namespace}}}
""",
        namespace=namespace,
    )
    token = cluster.api.create(
        f"/api/v1/namespaces/{namespace}/serviceaccounts/reader/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )["status"]["token"]
    config = _service_account_kubeconfig(cluster, token, tmp_path / "sa.kubeconfig")
    binary = str(build.binaries().kubectl)

    def as_reader(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [binary, f"--kubeconfig={config}", "-n", namespace, *args],
            capture_output=True,
            text=True,
            check=False,
        )

    allowed = as_reader("get", "pods")
    denied = as_reader("get", "secrets")

    assert allowed.returncode == 0, allowed.stderr
    assert denied.returncode != 0
    assert f'"system:serviceaccount:{namespace}:reader" cannot list resource "secrets"' in (
        denied.stderr
    )


@pytest.mark.version_sensitive
def test_kubectl_reports_the_pinned_version(cluster: Cluster) -> None:
    versions = json.loads(cluster.kubectl("version", "-o", "json").stdout)

    assert versions["serverVersion"]["gitVersion"] == pinned.KUBERNETES
    assert versions["clientVersion"]["gitVersion"] == pinned.KUBERNETES


async def test_kubeconfig_serves_kubernetes_asyncio(cluster: Cluster, namespace: str) -> None:
    api_client = await k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    async with api_client:
        listed = await k8s_client.CoreV1Api(api_client).list_namespace()

    assert namespace in {item.metadata.name for item in listed.items}


@pytest.mark.usefixtures("podgroup_crd")
def test_the_gang_watch_sees_a_member_bound_alone(
    cluster: Cluster, namespace: str, pool: str, add_nodes: Callable[..., list[str]]
) -> None:
    # The same watch and judgement as every test's (``whole_gangs``), with a burst of 1 s:
    # one member of a gang of 2 bound by hand and left alone is found, with its binding.
    [node] = add_nodes(1)
    check = GangCheck(cluster.api, burst_seconds=1.0, scheduler_names=("coscheduler",))
    w.create_podgroup(cluster.api, namespace, "pair", 2)
    for name in ("pair-0", "pair-1"):
        w.create_pod(cluster.api, namespace, name, pool=pool, cpu="1", group="pair")
    cluster.api.create(
        f"/api/v1/namespaces/{namespace}/pods/pair-0/binding", manifests.binding("pair-0", node)
    )
    wait_for(
        _pod(cluster, namespace, "pair-0"), lambda p: _phase(p) == "Running", describe="pair-0"
    )
    time.sleep(1.5)
    check.test_ended()
    found, caught_up = check.violations()
    assert caught_up
    [violation] = found
    assert violation.gang == (namespace, "pair")
    assert (violation.bound, violation.min_member, violation.open_at_end) == (1, 2, True)
    assert violation.bound_pods[0].startswith("pair-0 @ ")
    # Gone within the test's own (10 s) burst: the test itself is not failed by it.
    cluster.api.delete(f"/api/v1/namespaces/{namespace}/pods/pair-0")
