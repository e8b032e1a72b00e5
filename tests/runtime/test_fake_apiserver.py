"""The scripted API server itself: KubeClient reaches it from a kubeconfig with no credentials."""

from __future__ import annotations

import pytest

from coscheduler.runtime.errors import NotFound, Transient, Unreachable
from coscheduler.runtime.kube import KubeClient
from tests.runtime.apiserver import Disconnect, FakeApiServer, Reply, status_error


async def test_a_kubeconfig_without_credentials_connects_over_plain_http(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", "/api/v1/namespaces/default", Reply(200, {"metadata": {"name": "default"}}))
    answer = await kube.call("GET", "/api/v1/namespaces/default")
    assert answer == {"metadata": {"name": "default"}}
    [request] = apiserver.requests
    assert (request.verb, request.path, request.body) == ("GET", "/api/v1/namespaces/default", None)


async def test_answers_come_in_order_and_the_last_one_stays(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("POST", "/x", status_error(500, "InternalError"), Reply(201, {}))
    with pytest.raises(Transient):
        await kube.send("POST", "/x", body={"n": 0})
    statuses = [(await kube.send("POST", "/x", body={"n": n})).status for n in (1, 2)]
    assert statuses == [201, 201]
    assert [r.body for r in apiserver.requests_to("POST", "/x")] == [{"n": 0}, {"n": 1}, {"n": 2}]


async def test_an_unscripted_request_is_not_found(kube: KubeClient) -> None:
    with pytest.raises(NotFound) as caught:
        await kube.send("GET", "/nowhere")
    assert caught.value.reason == "NotFound"


async def test_a_disconnect_gives_no_answer(apiserver: FakeApiServer, kube: KubeClient) -> None:
    apiserver.on("POST", "/x", Disconnect())
    with pytest.raises(Unreachable, match="isconnected"):
        await kube.send("POST", "/x", body={})
