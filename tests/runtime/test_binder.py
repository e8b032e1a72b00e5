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
        pytest.param(status_error(422, "Invalid"), BindOutcome.FAILED, id="422-node-gone"),
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

    # No time to send a Binding again: the first answer is the outcome.
    results = await Binder(kube, concurrency=5, retry_seconds=0).bind_all(bindings(PODS))

    assert [r.binding.name for r in results] == PODS, "results come in the bindings' order"
    outcomes = [r.outcome for r in results]
    assert outcomes == [BindOutcome.BOUND] * 2 + [third_outcome] + [BindOutcome.BOUND] * 2
    assert len(apiserver.requests_to("POST")) == 5


async def test_a_refused_binding_says_what_the_server_said(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("POST", binding_path("worker-1"), status_error(500, "InternalError", "etcd down"))

    [result] = await Binder(kube, concurrency=1, retry_seconds=0).bind_all(bindings(["worker-1"]))

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


def pod_on(node: str, *, uid: str = "uid-worker-1") -> Reply:
    return Reply(200, {"metadata": {"name": "worker-1", "uid": uid}, "spec": {"nodeName": node}})


@pytest.mark.parametrize(
    "unknown",
    [
        pytest.param(status_error(500, "InternalError"), id="500"),
        pytest.param(status_error(503, "ServiceUnavailable"), id="503"),
        pytest.param(status_error(429, "TooManyRequests"), id="429"),
        pytest.param(Disconnect(), id="no-answer"),
    ],
)
async def test_a_binding_whose_outcome_is_unknown_is_sent_again(
    apiserver: FakeApiServer, kube: KubeClient, unknown: Answer
) -> None:
    """The etcd restart of e2e/tests/test_faults.py: a Binding timed out but was committed,
    the pod was released, and the next decision over-committed its node."""
    apiserver.on("POST", binding_path("worker-1"), unknown, created)
    binder = Binder(kube, concurrency=1)

    [result] = await binder.bind_all([binding("worker-1", node="node-a")])

    assert result.outcome is BindOutcome.BOUND
    assert len(apiserver.requests_to("POST")) == 2
    assert binder.retries == 1


@pytest.mark.parametrize(
    ("pod", "outcome"),
    [
        pytest.param(pod_on("node-a"), BindOutcome.BOUND, id="ours-committed"),
        pytest.param(pod_on("node-b"), BindOutcome.ALREADY_BOUND, id="bound-elsewhere"),
        pytest.param(pod_on("node-a", uid="new"), BindOutcome.ALREADY_BOUND, id="another-pod"),
    ],
)
async def test_a_conflict_after_an_unknown_outcome_is_read_back(
    apiserver: FakeApiServer, kube: KubeClient, pod: Reply, outcome: BindOutcome
) -> None:
    apiserver.on("POST", binding_path("worker-1"), Disconnect(), status_error(409, "Conflict"))
    apiserver.on("GET", "/api/v1/namespaces/train/pods/worker-1", pod)

    [result] = await Binder(kube, concurrency=1).bind_all([binding("worker-1", node="node-a")])

    assert result.outcome is outcome


async def test_a_refusal_is_not_sent_again(apiserver: FakeApiServer, kube: KubeClient) -> None:
    apiserver.on("POST", binding_path("worker-1"), status_error(422, "Invalid"), created)

    [result] = await Binder(kube, concurrency=1).bind_all(bindings(["worker-1"]))

    assert result.outcome is BindOutcome.FAILED
    assert len(apiserver.requests_to("POST")) == 1


async def test_retries_end_after_retry_seconds(apiserver: FakeApiServer, kube: KubeClient) -> None:
    apiserver.on("POST", binding_path("worker-1"), status_error(503, "ServiceUnavailable"))

    [result] = await Binder(kube, concurrency=1, retry_seconds=0.5).bind_all(bindings(["worker-1"]))

    assert result.outcome is BindOutcome.FAILED
    assert 2 <= len(apiserver.requests_to("POST")) <= 6
