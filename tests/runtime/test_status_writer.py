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

from coscheduler.api.adapters import native, xk8s
from coscheduler.api.adapters.apis import SIGS
from coscheduler.api.reasons import Reason
from coscheduler.controller.writer import StatusWriter
from coscheduler.core.group import KIND_NATIVE_POD_GROUP, KIND_WORKLOAD, GroupKey
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.status import Code, Status
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.readmodel import ChangedGroups, ReadModel
from coscheduler.runtime.reporter import Reporter
from tests.builders import (
    native_podgroup_object,
    pod_object,
    podgroup_object,
    scheduling_group,
    workload_object,
    workload_ref,
)
from tests.fed import Fed
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
    state: Fed
    writer: StatusWriter
    apiserver: FakeApiServer

    def add_group(self, name: str, members: int, *, bound: int = 0) -> GroupKey:
        """A PodGroup with ``members`` pods, the first ``bound`` of them on a node."""
        self.state.handlers.podgroups[SIGS].upsert(podgroup_object(name, min_member=members))
        for index in range(members):
            if index < bound:
                self.bind(name, index)
            else:
                self.add_member(name, index)
        return GroupKey("default", name)

    def add_member(self, group: str, index: int) -> None:
        self.state.handlers.pods.upsert(pod_object(f"{group}-{index}", group=group))

    def bind(self, group: str, index: int) -> None:
        self.state.handlers.pods.upsert(pod_object(f"{group}-{index}", group=group, node="node-1"))

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
    state = Fed(Scheduler(lambda: 0.0), on_group_changed=changed.mark)
    reporter = Reporter(
        kube, metrics=Metrics(), is_waiting=state.scheduler.is_waiting, event_writers=1
    )
    writer = StatusWriter(
        view=ReadModel(state.scheduler, state.handlers),
        changed=changed,
        reporter=reporter,
        written=state.handlers.groups.set_status,
        debounce_seconds=DEBOUNCE_SECONDS,
    )
    tasks = [asyncio.create_task(writer.run()), asyncio.create_task(reporter.run_events())]
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


# -- a scheduling.x-k8s.io group: written in its own API and shape -----------

XK8S = "scheduling.x-k8s.io/v1alpha1"


def xk8s_status_path(group: str) -> str:
    return f"/apis/{XK8S}/namespaces/default/podgroups/{group}/status"


def add_xk8s_group(setup: Setup, name: str, members: int, **pod: Any) -> GroupKey:
    setup.apiserver.on("PATCH", xk8s_status_path(name), patched)
    setup.state.handlers.podgroups[xk8s.ADAPTER.api].upsert(
        podgroup_object(name, members, api_version=XK8S)
    )
    for index in range(members):
        setup.state.handlers.pods.upsert(
            pod_object(
                f"{name}-{index}",
                group=name,
                group_label="scheduling.x-k8s.io/pod-group",
                owner=name,
                **pod,
            )
        )
    return GroupKey("default", name)


async def test_an_x_k8s_io_group_s_status_is_written_in_its_shape(setup: Setup) -> None:
    train = add_xk8s_group(setup, "train", 2, node="node-1", phase="Running")
    setup.writer.mark(train)

    [write] = await setup.apiserver.wait_for("PATCH", xk8s_status_path("train"))
    status = write.body["status"]
    assert set(status) == {
        "phase", "running", "succeeded", "failed", "scheduleStartTime", "occupiedBy"
    }  # fmt: skip
    assert (status["phase"], status["running"], status["occupiedBy"]) == (
        "Running",
        2,
        "default/train",
    )
    await setup.apiserver.wait_until(lambda: bool(setup.events_about("train")))
    [event] = setup.events_about("train")
    assert event.body["involvedObject"]["apiVersion"] == XK8S
    assert setup.patches("train") == [], "nothing written to our API"


async def test_an_x_k8s_io_group_of_another_scheduler_is_left_to_it(setup: Setup) -> None:
    theirs = add_xk8s_group(setup, "theirs", 2, scheduler="scheduler-plugins-scheduler")
    setup.writer.mark(theirs)
    mine = setup.add_group("zz-mine", members=2, bound=2)
    setup.writer.mark(mine)  # written in the same round, after theirs
    await setup.apiserver.wait_for("PATCH", status_path("zz-mine"))
    await quiet()

    assert setup.apiserver.requests_to("PATCH", xk8s_status_path("theirs")) == []


async def test_a_new_reason_their_shape_cannot_hold_is_kept_but_not_written(setup: Setup) -> None:
    train = add_xk8s_group(setup, "train", 2)
    setup.state.handlers.groups.set_verdict(
        train, Status(Code.UNSCHEDULABLE, Reason.NOT_ENOUGH_RESOURCES, "0/1 nodes: cpu")
    )
    [write] = await setup.apiserver.wait_for("PATCH", xk8s_status_path("train"))
    assert write.body["status"]["phase"] == "Pending"
    assert write.body["status"]["scheduleStartTime"] is not None

    setup.state.handlers.groups.set_verdict(
        train, Status(Code.UNSCHEDULABLE, Reason.NOT_ENOUGH_RESOURCES, "0/2 nodes: cpu")
    )
    await quiet()

    # Our status moved on (so the next event tells the new reason: the recorder
    # writes it once its change interval has passed); the stored one did not.
    condition = setup.state.handlers.groups.podgroups[train].status.condition("Unschedulable")
    assert condition is not None
    assert condition.message == "0/2 nodes: cpu"
    assert len(setup.apiserver.requests_to("PATCH", xk8s_status_path("train"))) == 1


async def test_a_workload_gang_is_told_by_events_on_the_workload_and_nothing_written(
    setup: Setup,
) -> None:
    setup.state.handlers.workloads.upsert(workload_object("train", {"workers": 2}))
    for index in range(2):
        setup.state.handlers.pods.upsert(
            pod_object(
                f"w-{index}", node="node-1", spec_extra=workload_ref("train", "workers", "a")
            )
        )
    key = GroupKey("default", "train/workers/a", KIND_WORKLOAD)
    setup.writer.mark(key)

    await setup.apiserver.wait_until(lambda: bool(setup.events_about("train")))
    [event] = setup.events_about("train")
    involved = event.body["involvedObject"]
    assert (involved["apiVersion"], involved["kind"]) == ("scheduling.k8s.io/v1alpha1", "Workload")
    assert involved["uid"] == "uid-wl-train"
    assert event.body["message"].startswith(
        "podGroup workers replica a: phase Pending -> Scheduled"
    )
    await quiet()
    assert [r for r in setup.apiserver.requests if r.verb == "PATCH"] == []
    assert setup.state.handlers.groups.podgroups[key].status.phase == "Scheduled"


NATIVE = native.ADAPTERS[0]


def native_status_path(group: str) -> str:
    return f"/apis/scheduling.k8s.io/{NATIVE.version}/namespaces/default/podgroups/{group}/status"


def add_native_group(setup: Setup, name: str, members: int, **pod: Any) -> GroupKey:
    """Kubernetes' own PodGroup, a gang of ``members``, its members naming it."""
    setup.apiserver.on("PATCH", native_status_path(name), patched)
    setup.state.handlers.podgroups[NATIVE.api].upsert(native_podgroup_object(name, members))
    for index in range(members):
        setup.state.handlers.pods.upsert(
            pod_object(f"{name}-{index}", spec_extra=scheduling_group(name), **pod)
        )
    return GroupKey("default", name, KIND_NATIVE_POD_GROUP)


def native_events(setup: Setup, group: str) -> list[tuple[str, str, str]]:
    return [
        (e.body["type"], e.body["reason"], e.body["message"])
        for e in setup.events_about(group)
        if e.body["involvedObject"]["apiVersion"] == f"scheduling.k8s.io/{NATIVE.version}"
    ]


def conditions(write: RecordedRequest) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in write.body["status"]["conditions"]}


async def test_a_placed_native_group_is_told_scheduled_in_upstream_words(setup: Setup) -> None:
    train = add_native_group(setup, "train", 2, node="node-1", phase="Running")
    setup.writer.mark(train)

    [write] = await setup.apiserver.wait_for("PATCH", native_status_path("train"))
    assert conditions(write) == {"PodGroupInitiallyScheduled": ("True", "Scheduled")}
    await setup.apiserver.wait_until(lambda: bool(native_events(setup, "train")))
    await quiet()
    # One Scheduled event (not our phase names Scheduled -> Running), its message
    # without our phase words.
    [(kind, reason, message)] = native_events(setup, "train")
    assert (kind, reason) == ("Normal", "Scheduled")
    assert "phase" not in message
    assert message.startswith("2 scheduled, 2 running")


async def test_a_waiting_native_group_is_told_failed_scheduling_and_no_phase(
    setup: Setup,
) -> None:
    train = add_native_group(setup, "train", 2)
    setup.state.handlers.groups.set_verdict(
        train, Status(Code.UNSCHEDULABLE, Reason.NOT_ENOUGH_RESOURCES, "0/1 nodes: cpu")
    )

    [write] = await setup.apiserver.wait_for("PATCH", native_status_path("train"))
    assert conditions(write) == {"PodGroupInitiallyScheduled": ("False", "Unschedulable")}
    await setup.apiserver.wait_until(lambda: bool(native_events(setup, "train")))
    await quiet()
    assert native_events(setup, "train") == [("Warning", "FailedScheduling", "0/1 nodes: cpu")]


@pytest.mark.parametrize("mid_write", [False, True], ids=["after-its-write", "mid-write"])
async def test_a_native_group_with_no_members_left_is_still_told_its_disruption(
    setup: Setup, mid_write: bool
) -> None:
    train = add_native_group(setup, "train", 2, node="node-1", phase="Running")
    setup.writer.mark(train)
    # wait_for returns as the write arrives, before the writer has its answer:
    # mid_write, the preemption comes while the first write is in flight.
    await setup.apiserver.wait_for("PATCH", native_status_path("train"))
    if not mid_write:
        await quiet()
    # Preempted whole: its pods are gone before the writer's round.
    for index in range(2):
        setup.state.handlers.pods.remove(
            pod_object(f"train-{index}", spec_extra=scheduling_group("train"), node="node-1")
        )
    setup.state.handlers.groups.preempted(train, "preempted by default/urgent")

    await setup.apiserver.wait_until(
        lambda: len(setup.apiserver.requests_to("PATCH", native_status_path("train"))) == 2
    )
    last = setup.apiserver.requests_to("PATCH", native_status_path("train"))[-1]
    assert conditions(last) == {
        "PodGroupInitiallyScheduled": ("True", "Scheduled"),
        "DisruptionTarget": ("True", "PreemptionByScheduler"),
    }


async def test_a_native_group_of_another_scheduler_is_left_to_it(setup: Setup) -> None:
    theirs = add_native_group(setup, "theirs", 2, scheduler="default-scheduler")
    setup.writer.mark(theirs)
    mine = setup.add_group("zz-mine", members=2, bound=2)
    setup.writer.mark(mine)  # written in the same round, after theirs
    await setup.apiserver.wait_for("PATCH", status_path("zz-mine"))
    await quiet()

    assert setup.apiserver.requests_to("PATCH", native_status_path("theirs")) == []
    assert native_events(setup, "theirs") == []
