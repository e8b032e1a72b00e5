"""controller/volcano_queues.py: a Volcano Queue's status written in Volcano's words, seen on
the wire; a name ours holds told by an event instead."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from coscheduler.api.adapters import volcano
from coscheduler.controller.volcano_queues import JSON_PATCH, VolcanoQueueStatusWriter
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.readmodel import ReadModel
from tests.builders import podgroup_object
from tests.fed import Fed
from tests.runtime.apiserver import FakeApiServer, Reply, status_error
from tests.runtime.reporting import quick_reporter

QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
EVENTS = "/api/v1/namespaces/default/events"


def their_queue(name: str, state: str | None = None) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "41"},
        "spec": {"weight": 1},
    }
    if state is not None:
        raw["status"] = {"state": state}
    return raw


@dataclass
class Setup:
    state: Fed
    writer: VolcanoQueueStatusWriter
    apiserver: FakeApiServer


@pytest.fixture
async def setup(apiserver: FakeApiServer, kube: KubeClient) -> AsyncIterator[Setup]:
    apiserver.on("POST", EVENTS, lambda request: Reply(201, request.body))
    state = Fed(Scheduler(lambda: 0.0))
    reporter = quick_reporter(kube, state.scheduler)
    writer = VolcanoQueueStatusWriter(
        view=ReadModel(state.scheduler, state.handlers), reporter=reporter
    )
    events = asyncio.create_task(reporter.run_events())
    yield Setup(state, writer, apiserver)
    events.cancel()
    await asyncio.gather(events, return_exceptions=True)


async def test_the_status_counts_its_groups_and_tests_the_version_it_read(setup: Setup) -> None:
    path = f"{QUEUES}/research/status"
    setup.apiserver.on("PATCH", path, lambda request: Reply(200, {}))
    setup.state.handlers.volcano_queues.replace([their_queue("research", state="Closing")])
    group = podgroup_object("train", 2, api_version="scheduling.volcano.sh/v1beta1")
    group["spec"]["queue"] = "research"
    setup.state.handlers.podgroups[volcano.ADAPTER.api].replace([group])

    assert await setup.writer.write_round()
    [request] = setup.apiserver.requests_to("PATCH", path)
    assert request.content_type == JSON_PATCH
    test, write = request.body
    assert test == {"op": "test", "path": "/metadata/resourceVersion", "value": "41"}
    assert write["path"] == "/status"
    status = write["value"]
    # Nothing of its runs: Closing comes to Closed. A group nothing refuses is Inqueue.
    assert (status["state"], status["inqueue"], status["running"]) == ("Closed", 1, 0)

    assert await setup.writer.write_round()
    assert len(setup.apiserver.requests_to("PATCH", path)) == 1, "written once"


async def test_a_state_set_meanwhile_is_never_overwritten(setup: Setup) -> None:
    path = f"{QUEUES}/research/status"
    setup.apiserver.on("PATCH", path, status_error(422, "Invalid"))
    setup.state.handlers.volcano_queues.replace([their_queue("research")])
    assert await setup.writer.write_round(), "its watch event brings the new one"
    assert len(setup.apiserver.requests_to("PATCH", path)) == 1


async def test_a_name_ours_holds_is_told_once_and_its_status_left_alone(setup: Setup) -> None:
    ours = {"metadata": {"name": "shared", "uid": "uid-ours"}, "spec": {"namespaces": ["a"]}}
    setup.state.handlers.queues.replace([ours])
    setup.state.handlers.volcano_queues.replace([their_queue("shared")])
    assert await setup.writer.write_round()
    assert await setup.writer.write_round()
    await setup.apiserver.wait_until(lambda: bool(setup.apiserver.requests_to("POST", EVENTS)))
    await asyncio.sleep(0.05)
    [event] = [r.body for r in setup.apiserver.requests_to("POST", EVENTS)]
    assert event["reason"] == "QueueShadowed"
    assert event["involvedObject"]["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert not setup.apiserver.requests_to("PATCH")
