"""Which PodGroup APIs ``coscheduler run`` reads: decided once, by discovery, at start."""

from __future__ import annotations

from coscheduler.api.adapters import sigs, xk8s
from coscheduler.app import _served
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
    assert await _served(kube) == [sigs.ADAPTER]
    assert [r.path for r in apiserver.requests] == [DISCOVERY]


async def test_with_the_x_k8s_io_api_served_both_are_read(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", DISCOVERY, resource_list("podgroups", "podgroups/status"))
    assert await _served(kube) == [sigs.ADAPTER, xk8s.ADAPTER]


async def test_the_group_served_without_podgroups_is_not_read(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    # scheduler-plugins' capacity scheduling alone installs ElasticQuota in this group.
    apiserver.on("GET", DISCOVERY, resource_list("elasticquotas", "elasticquotas/status"))
    assert await _served(kube) == [sigs.ADAPTER]
