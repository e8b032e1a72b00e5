"""Which PodGroup APIs ``coscheduler run`` reads: decided once, by discovery, at start."""

from __future__ import annotations

import pytest

from coscheduler.api.adapters import sigs, t9k, volcano, workload, xk8s
from coscheduler.runtime.discovery import served_podgroup_apis, workload_api_served
from coscheduler.runtime.kube import KubeClient
from tests.runtime.apiserver import FakeApiServer, Reply

DISCOVERY = "/apis/scheduling.x-k8s.io/v1alpha1"


def resource_list(*names: str) -> Reply:
    return Reply(
        200,
        {
            "kind": "APIResourceList",
            "groupVersion": "scheduling.x-k8s.io/v1alpha1",
            "resources": [{"name": name, "namespaced": True} for name in names],
        },
    )


async def test_without_the_x_k8s_io_api_only_ours_is_read(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    # Nothing scripted: the fake answers 404, as a server without the CRD does.
    assert [a.api for a in await served_podgroup_apis(kube)] == [sigs.ADAPTER.api]
    # Only discovery is asked: scheduler-plugins' group, Volcano's, T9k's, then each
    # version of Kubernetes' own.
    others = [volcano.API.discovery_path, t9k.API.discovery_path]
    native_versions = [f"/apis/scheduling.k8s.io/{v}" for v in ("v1beta1", "v1alpha2")]
    assert [r.path for r in apiserver.requests] == [DISCOVERY, *others, *native_versions * 2]


async def test_with_the_x_k8s_io_api_served_both_are_read(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", DISCOVERY, resource_list("podgroups", "podgroups/status"))
    assert [a.api for a in await served_podgroup_apis(kube)] == [sigs.ADAPTER.api, xk8s.ADAPTER.api]


async def test_the_group_served_without_podgroups_is_not_read(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    # scheduler-plugins' capacity scheduling alone installs ElasticQuota in this group.
    apiserver.on("GET", DISCOVERY, resource_list("elasticquotas", "elasticquotas/status"))
    assert [a.api for a in await served_podgroup_apis(kube)] == [sigs.ADAPTER.api]


@pytest.mark.parametrize("adapter", [volcano.ADAPTER, t9k.ADAPTER], ids=["volcano", "t9k"])
async def test_volcano_and_t9k_are_read_when_discovery_lists_them(
    apiserver: FakeApiServer, kube: KubeClient, adapter: object
) -> None:
    api = volcano.API if adapter is volcano.ADAPTER else t9k.API
    apiserver.on("GET", api.discovery_path, resource_list("podgroups"))
    assert [a.api for a in await served_podgroup_apis(kube)] == [sigs.ADAPTER.api, api]


# -- Kubernetes' own Workload API: the one version read, chosen by discovery ----

WORKLOAD_GROUP = "/apis/scheduling.k8s.io"


def scheduling_group(*versions: str) -> Reply:
    return Reply(
        200,
        {
            "kind": "APIGroup",
            "name": "scheduling.k8s.io",
            "versions": [
                {"groupVersion": f"scheduling.k8s.io/{v}", "version": v} for v in versions
            ],
        },
    )


async def test_the_workload_api_is_read_when_1_35_s_version_is_served(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", WORKLOAD_GROUP, scheduling_group("v1", "v1alpha1"))
    apiserver.on("GET", f"{WORKLOAD_GROUP}/v1", resource_list("priorityclasses"))
    apiserver.on("GET", f"{WORKLOAD_GROUP}/v1alpha1", resource_list("workloads"))
    assert await workload_api_served(kube) == workload.API


async def test_without_the_gate_the_workload_api_is_not_read(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", WORKLOAD_GROUP, scheduling_group("v1"))
    apiserver.on("GET", f"{WORKLOAD_GROUP}/v1", resource_list("priorityclasses"))
    assert await workload_api_served(kube) is None


async def test_a_later_version_alone_is_refused_not_misread(
    apiserver: FakeApiServer, kube: KubeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    apiserver.on("GET", WORKLOAD_GROUP, scheduling_group("v1", "v1alpha2"))
    apiserver.on("GET", f"{WORKLOAD_GROUP}/v1", resource_list("priorityclasses"))
    apiserver.on("GET", f"{WORKLOAD_GROUP}/v1alpha2", resource_list("workloads", "podgroups"))
    assert await workload_api_served(kube) is None
    said = capsys.readouterr()
    # Its gangs are PodGroups from 1.36: read as such (not an error).
    assert "its gangs are PodGroups, read as such" in said.out + said.err
    assert "v1alpha2" in said.out + said.err


async def test_a_workload_version_no_release_reads_is_an_error(
    apiserver: FakeApiServer, kube: KubeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    apiserver.on("GET", WORKLOAD_GROUP, scheduling_group("v1", "v2"))
    apiserver.on("GET", f"{WORKLOAD_GROUP}/v1", resource_list("priorityclasses"))
    apiserver.on("GET", f"{WORKLOAD_GROUP}/v2", resource_list("workloads"))
    assert await workload_api_served(kube) is None
    said = capsys.readouterr()
    assert "only in versions this release does not read" in said.out + said.err
