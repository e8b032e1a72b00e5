"""runtime/binder.py: one Binding per pod; the answer's status code is the outcome."""

from __future__ import annotations

import pytest

from coscheduler.core.statement import Binding
from coscheduler.runtime.binder import Binder, BindOutcome
from coscheduler.runtime.kube import KubeClient
from tests.runtime.apiserver import (
    Answer,
    Disconnect,
    FakeApiServer,
    InFlight,
    RecordedRequest,
    Reply,
    status_error,
)

PODS = [f"worker-{index}" for index in range(1, 6)]


def binding_path(pod: str) -> str:
    return f"/api/v1/namespaces/train/pods/{pod}/binding"


def binding(pod: str, *, uid: str | None = None, node: str | None = None) -> Binding:
    """The one place a test names the binder's input type."""
    return Binding("train", pod, uid or f"uid-{pod}", node or f"node-{pod}")


def bindings(pods: list[str]) -> list[Binding]:
    return [binding(pod) for pod in pods]


def created(request: RecordedRequest) -> Answer:
    return Reply(201, request.body)


@pytest.mark.parametrize(
    ("third_answer", "third_outcome"),
    [
        pytest.param(created, BindOutcome.BOUND, id="201-bound"),
        pytest.param(status_error(404, "NotFound"), BindOutcome.POD_GONE, id="404-pod-gone"),
        pytest.param(status_error(409, "Conflict"), BindOutcome.ALREADY_BOUND, id="409-bound"),
        pytest.param(status_error(500, "InternalError"), BindOutcome.FAILED, id="500-failed"),
        pytest.param(status_error(503, "ServiceUnavailable"), BindOutcome.FAILED, id="503-failed"),
        pytest.param(Disconnect(), BindOutcome.FAILED, id="no-answer-failed"),
    ],
)
async def test_the_answer_to_each_binding_is_its_outcome_and_the_others_are_unaffected(
    apiserver: FakeApiServer, kube: KubeClient, third_answer: Answer, third_outcome: BindOutcome
) -> None:
    for pod in PODS:
        apiserver.on("POST", binding_path(pod), created)
    apiserver.on("POST", binding_path(PODS[2]), third_answer)

    results = await Binder(kube, concurrency=5).bind_all(bindings(PODS))

    assert [r.binding.name for r in results] == PODS, "results come in the bindings' order"
    outcomes = [r.outcome for r in results]
    assert outcomes == [BindOutcome.BOUND] * 2 + [third_outcome] + [BindOutcome.BOUND] * 2
    assert len(apiserver.requests_to("POST")) == 5, "a failed binding is not retried"


async def test_a_refused_binding_says_what_the_server_said(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("POST", binding_path("worker-1"), status_error(500, "InternalError", "etcd down"))

    [result] = await Binder(kube, concurrency=1).bind_all(bindings(["worker-1"]))

    assert result.outcome is BindOutcome.FAILED
    assert "500" in result.detail
    assert "etcd down" in result.detail


async def test_a_binding_names_the_node_and_the_pods_uid_as_a_precondition(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("POST", binding_path("worker-1"), created)

    await Binder(kube, concurrency=1).bind(binding("worker-1", uid="uid-7", node="node-3"))

    [request] = apiserver.requests
    assert request.body["kind"] == "Binding"
    assert request.body["metadata"] == {"name": "worker-1", "namespace": "train", "uid": "uid-7"}
    assert request.body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "node-3"}


async def test_no_more_than_concurrency_bindings_are_in_flight(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    slow_created = InFlight(created)
    pods = [f"worker-{index}" for index in range(12)]
    for pod in pods:
        apiserver.on("POST", binding_path(pod), slow_created)

    results = await Binder(kube, concurrency=3).bind_all(bindings(pods))

    assert {r.outcome for r in results} == {BindOutcome.BOUND}
    assert slow_created.most == 3
