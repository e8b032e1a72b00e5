"""controller/writer.py: Volcano's and T9k's groups, whose status is written only when ours.

A group of a shared API is ours when a member has our schedulerName; one with
no members yet is ours only when we run under the API's own scheduler name
(operators in Volcano mode make the pods once the group is ``Inqueue``).
Volcano's CRD has no ``/status``: its status is a patch of the object.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from coscheduler.api.adapters import t9k, volcano
from coscheduler.controller.writer import StatusWriter
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.settings import SchedulerSettings
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.readmodel import ChangedGroups, ReadModel
from coscheduler.runtime.reporter import Reporter
from tests.builders import pod_object, podgroup_object
from tests.fed import Fed
from tests.runtime.apiserver import Answer, FakeApiServer, RecordedRequest, Reply

DEBOUNCE_SECONDS = 0.02
VOLCANO_GROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
T9K_GROUPS = "/apis/scheduler.tensorstack.dev/v1beta1/namespaces/default/podgroups"


def patched(request: RecordedRequest) -> Answer:
    return Reply(200, request.body)


@pytest.fixture
async def started(
    apiserver: FakeApiServer, kube: KubeClient
) -> AsyncIterator[Callable[[str], tuple[Fed, StatusWriter]]]:
    apiserver.on("PATCH", f"{VOLCANO_GROUPS}/*", patched)
    apiserver.on("PATCH", f"{T9K_GROUPS}/*", patched)
    apiserver.on("POST", "/api/v1/namespaces/default/events", lambda r: Reply(201, r.body))
    tasks: list[asyncio.Task[Any]] = []

    def start(scheduler_name: str) -> tuple[Fed, StatusWriter]:
        changed = ChangedGroups()
        scheduler = Scheduler(lambda: 0.0, SchedulerSettings(scheduler_name=scheduler_name))
        state = Fed(scheduler, on_group_changed=changed.mark)
        reporter = Reporter(kube, metrics=Metrics(), is_waiting=scheduler.is_waiting)
        writer = StatusWriter(
            view=ReadModel(scheduler, state.handlers),
            changed=changed,
            reporter=reporter,
            written=state.handlers.groups.set_status,
            debounce_seconds=DEBOUNCE_SECONDS,
        )
        tasks.extend(
            [asyncio.create_task(writer.run()), asyncio.create_task(reporter.run_events())]
        )
        return state, writer

    yield start
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def quiet() -> None:
    await asyncio.sleep(5 * DEBOUNCE_SECONDS)


def volcano_group(name: str, **spec: Any) -> dict[str, Any]:
    return podgroup_object(name, 2, api_version="scheduling.volcano.sh/v1beta1", **spec)


async def test_standing_in_for_volcano_a_group_without_pods_is_written_inqueue(
    started: Callable[[str], tuple[Fed, StatusWriter]], apiserver: FakeApiServer
) -> None:
    state, _ = started("volcano")
    state.handlers.podgroups[volcano.ADAPTER.api].upsert(volcano_group("train"))

    [write] = await apiserver.wait_for("PATCH", f"{VOLCANO_GROUPS}/train")
    assert write.body["status"]["phase"] == "Inqueue"


async def test_under_our_own_name_a_group_without_pods_is_left_alone(
    started: Callable[[str], tuple[Fed, StatusWriter]], apiserver: FakeApiServer
) -> None:
    state, _ = started("coscheduler")
    state.handlers.podgroups[volcano.ADAPTER.api].upsert(volcano_group("theirs"))
    state.handlers.podgroups[volcano.ADAPTER.api].upsert(volcano_group("mine"))
    for index in range(2):
        raw = pod_object(f"mine-{index}", scheduler="coscheduler", node="node-1", phase="Running")
        raw["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "mine"}
        state.handlers.pods.upsert(raw)

    [write] = await apiserver.wait_for("PATCH", f"{VOLCANO_GROUPS}/mine")
    assert (write.body["status"]["phase"], write.body["status"]["running"]) == ("Running", 2)
    await quiet()
    assert apiserver.requests_to("PATCH", f"{VOLCANO_GROUPS}/theirs") == []


async def test_a_group_whose_pods_are_another_scheduler_s_is_left_to_it(
    started: Callable[[str], tuple[Fed, StatusWriter]], apiserver: FakeApiServer
) -> None:
    state, _ = started("t9k-scheduler")
    state.handlers.podgroups[t9k.ADAPTER.api].upsert(
        podgroup_object("theirs", 1, api_version="scheduler.tensorstack.dev/v1beta1")
    )
    labels = {"scheduler.tensorstack.dev/group-name": "theirs"}
    state.handlers.pods.upsert(pod_object("theirs-0", scheduler="default-scheduler", labels=labels))
    state.handlers.podgroups[t9k.ADAPTER.api].upsert(
        podgroup_object("mine", 1, api_version="scheduler.tensorstack.dev/v1beta1")
    )

    [write] = await apiserver.wait_for("PATCH", f"{T9K_GROUPS}/mine/status")
    assert {c["type"] for c in write.body["status"]["conditions"]} == {
        "GroupScheduled",
        "SufficientGroupMember",
    }
    await quiet()
    assert apiserver.requests_to("PATCH", f"{T9K_GROUPS}/theirs/status") == []
