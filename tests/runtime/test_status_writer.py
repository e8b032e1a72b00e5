"""controller/writer.py: PodGroup status written once per burst, only when it changed.

The writer's input is the cluster state and the keys marked dirty; its output
is merge patches of ``/status`` and Events on the PodGroup, seen here on the wire.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from coscheduler.controller.writer import ChangedGroups, StatusWriter
from coscheduler.core.group import GroupKey
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.cluster import ClusterState
from coscheduler.runtime.events import EventRecorder
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.metrics import Metrics
from tests.builders import pod_object, podgroup_object
from tests.runtime.apiserver import (
    Answer,
    Disconnect,
    FakeApiServer,
    RecordedRequest,
    Reply,
    status_error,
)

DEBOUNCE_SECONDS = 0.02
EVENTS = "/api/v1/namespaces/default/events"


def status_path(group: str) -> str:
    return f"/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/podgroups/{group}/status"


def patched(request: RecordedRequest) -> Answer:
    return Reply(200, request.body)


def summary(write: RecordedRequest) -> tuple[Any, ...]:
    """A written status without its timestamps (they move with the wall clock)."""
    status = write.body["status"]
    reasons = [(c["type"], c["status"], c["reason"]) for c in status["conditions"]]
    return status["phase"], status["scheduled"], status["pending"], reasons


@dataclass
class Setup:
    state: ClusterState
    writer: StatusWriter
    apiserver: FakeApiServer

    def add_group(self, name: str, members: int, *, bound: int = 0) -> GroupKey:
        """A PodGroup with ``members`` pods, the first ``bound`` of them on a node."""
        self.state.upsert_podgroup(podgroup_object(name, min_member=members))
        for index in range(members):
            if index < bound:
                self.bind(name, index)
            else:
                self.add_member(name, index)
        return GroupKey("default", name)

    def add_member(self, group: str, index: int) -> None:
        self.state.upsert_pod(pod_object(f"{group}-{index}", group=group))

    def bind(self, group: str, index: int) -> None:
        self.state.upsert_pod(pod_object(f"{group}-{index}", group=group, node="node-1"))

    def patches(self, group: str) -> list[RecordedRequest]:
        return self.apiserver.requests_to("PATCH", status_path(group))

    def events_about(self, group: str) -> list[RecordedRequest]:
        return [
            r
            for r in self.apiserver.requests_to("POST", EVENTS)
            if r.body["involvedObject"]["name"] == group
        ]


@pytest.fixture
async def setup(apiserver: FakeApiServer, kube: KubeClient) -> AsyncIterator[Setup]:
    apiserver.on("PATCH", status_path("*"), patched)
    apiserver.on("POST", EVENTS, lambda request: Reply(201, request.body))
    changed = ChangedGroups()
    state = ClusterState(Scheduler(lambda: 0.0), on_group_changed=changed.mark)
    events = EventRecorder(kube, writers=1)
    writer = StatusWriter(
        state=state,
        changed=changed,
        client=kube,
        events=events,
        metrics=Metrics(),
        debounce_seconds=DEBOUNCE_SECONDS,
    )
    tasks = [asyncio.create_task(writer.run()), asyncio.create_task(events.run())]
    yield Setup(state, writer, apiserver)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def quiet() -> None:
    """Long enough for any round the writer would still make."""
    await asyncio.sleep(5 * DEBOUNCE_SECONDS)


async def test_many_changes_of_one_group_in_a_short_time_make_one_write(setup: Setup) -> None:
    key = setup.add_group("train", members=4)
    setup.writer.mark(key)
    for index in range(4):  # the gang's members are bound one after another
        setup.bind("train", index)
        setup.writer.mark(key)

    await setup.apiserver.wait_for("PATCH", status_path("train"))
    await quiet()

    [write] = setup.patches("train")
    assert write.content_type == "application/merge-patch+json"
    status = write.body["status"]
    assert (status["phase"], status["scheduled"]) == ("Scheduled", 4), "the latest status"


async def test_a_status_already_written_is_not_written_again(setup: Setup) -> None:
    train = setup.add_group("train", members=2, bound=2)
    setup.writer.mark(train)
    await setup.apiserver.wait_for("PATCH", status_path("train"))

    setup.writer.mark(train)  # nothing changed
    other = setup.add_group("zz-other", members=2, bound=2)
    setup.writer.mark(other)  # written in the same round, after train
    await setup.apiserver.wait_for("PATCH", status_path("zz-other"))
    await quiet()

    assert len(setup.patches("train")) == 1


async def test_a_transition_is_told_by_an_event_on_the_podgroup(setup: Setup) -> None:
    train = setup.add_group("train", members=2, bound=2)
    setup.writer.mark(train)

    await setup.apiserver.wait_until(lambda: bool(setup.events_about("train")))

    [event] = setup.events_about("train")
    assert event.body["involvedObject"]["kind"] == "PodGroup"
    assert event.body["reason"] == "Scheduled"


async def test_a_group_deleted_before_its_write_is_left_alone(setup: Setup) -> None:
    setup.apiserver.on("PATCH", status_path("train"), status_error(404, "NotFound"))
    train = setup.add_group("train", members=2, bound=2)
    setup.writer.mark(train)
    await setup.apiserver.wait_for("PATCH", status_path("train"))

    other = setup.add_group("zz-other", members=2, bound=2)
    setup.writer.mark(other)  # the writer goes on with other groups
    await setup.apiserver.wait_until(lambda: bool(setup.events_about("zz-other")))
    await quiet()

    assert len(setup.patches("train")) == 1, "not retried"
    assert setup.events_about("train") == [], "no transition told for a write that failed"
    assert setup.writer.writes == 1


async def test_a_refused_write_is_not_taken_as_written(setup: Setup) -> None:
    setup.apiserver.on("PATCH", status_path("train"), status_error(409, "Conflict"), patched)
    train = setup.add_group("train", members=2, bound=2)
    setup.writer.mark(train)
    await setup.apiserver.wait_for("PATCH", status_path("train"))

    setup.writer.mark(train)  # the next change of anything in the group

    first, second = await setup.apiserver.wait_for("PATCH", status_path("train"), count=2)
    assert summary(second) == summary(first), "the same status, written this time"


async def test_a_write_that_got_no_answer_is_tried_again(setup: Setup) -> None:
    setup.apiserver.on("PATCH", status_path("train"), Disconnect(), patched)
    train = setup.add_group("train", members=2, bound=2)
    setup.writer.mark(train)

    await setup.apiserver.wait_for("PATCH", status_path("train"), count=2)
    await quiet()

    assert len(setup.patches("train")) == 2
    assert setup.writer.writes == 1
