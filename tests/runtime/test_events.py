"""runtime/events.py: the EventRecorder's rules, seen as the Events it writes.

The series' timing runs on the injected clock. The recorder looks at deferred
messages between writes (and once a real second when idle), so a test that
waits for one records an unrelated event to give it a turn.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import pytest

from coscheduler.runtime.events import EventRecorder, ObjectRef
from coscheduler.runtime.kube import KubeClient
from tests.builders import Clock
from tests.runtime.apiserver import (
    Answer,
    FakeApiServer,
    InFlight,
    RecordedRequest,
    Reply,
    status_error,
)

EVENTS = "/api/v1/namespaces/default/events"
AN_EVENT = f"{EVENTS}/*"


def pod(name: str) -> ObjectRef:
    return ObjectRef("v1", "Pod", "default", name, f"uid-{name}")


def created(request: RecordedRequest) -> Answer:
    return Reply(201, request.body)


def patched(request: RecordedRequest) -> Answer:
    return Reply(200, request.body)


class Recorders:
    """Makes EventRecorders on the test's server and clock, and runs them in the background."""

    def __init__(self, kube: KubeClient, clock: Clock) -> None:
        self.kube = kube
        self.clock = clock
        self.dropped = 0
        self.running: list[asyncio.Task[None]] = []

    def make(self, **options: Any) -> EventRecorder:
        def count_drop() -> None:
            self.dropped += 1

        settings: dict[str, Any] = {"interval_seconds": 30.0, "writers": 1}
        settings.update(options)
        return EventRecorder(self.kube, clock=self.clock, on_drop=count_drop, **settings)

    def start(self, recorder: EventRecorder, idle: asyncio.Event | None = None) -> EventRecorder:
        self.running.append(asyncio.create_task(recorder.run(idle)))
        return recorder

    def running_recorder(self, idle: asyncio.Event | None = None, **options: Any) -> EventRecorder:
        return self.start(self.make(**options), idle)


@pytest.fixture
async def recorders(
    apiserver: FakeApiServer, kube: KubeClient, clock: Clock
) -> AsyncIterator[Recorders]:
    apiserver.on("POST", EVENTS, created)
    apiserver.on("PATCH", AN_EVENT, patched)
    made = Recorders(kube, clock)
    yield made
    for task in made.running:
        task.cancel()
    await asyncio.gather(*made.running, return_exceptions=True)


def about(apiserver: FakeApiServer, name: str) -> list[RecordedRequest]:
    """Writes of events about pod ``name``: POSTs name the pod, PATCHes the event they created."""
    created_names = {
        r.body["metadata"]["name"]
        for r in apiserver.requests_to("POST", EVENTS)
        if r.body["involvedObject"]["name"] == name
    }
    return [
        r
        for r in apiserver.requests
        if (r.verb == "POST" and r.body["involvedObject"]["name"] == name)
        or (r.verb == "PATCH" and r.path.rsplit("/", 1)[1] in created_names)
    ]


async def written(apiserver: FakeApiServer, name: str, *, count: int) -> list[RecordedRequest]:
    """Wait until ``count`` writes about pod ``name`` arrived; return them."""
    await apiserver.wait_until(lambda: len(about(apiserver, name)) >= count)
    return about(apiserver, name)


async def settle(apiserver: FakeApiServer, recorder: EventRecorder, name: str) -> None:
    """Record an unrelated event and wait for it: what was queued before it has had its turn."""
    recorder.record(pod(name), "Normal", "Settled", "a marker")
    await written(apiserver, name, count=1)


def patches_of(requests: list[RecordedRequest]) -> list[tuple[int, str]]:
    return [(r.body["count"], r.body["message"]) for r in requests if r.verb == "PATCH"]


async def test_the_first_event_of_a_series_creates_an_event_with_count_one(
    apiserver: FakeApiServer, recorders: Recorders
) -> None:
    recorder = recorders.running_recorder()

    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "0/3 nodes are available")

    [create] = await written(apiserver, "worker-1", count=1)
    assert create.verb == "POST"
    body = create.body
    assert (body["type"], body["reason"], body["message"], body["count"]) == (
        "Warning",
        "FailedScheduling",
        "0/3 nodes are available",
        1,
    )
    assert body["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "default",
        "name": "worker-1",
        "uid": "uid-worker-1",
    }


async def test_repeats_within_the_interval_are_counted_not_written_and_land_with_the_next_write(
    apiserver: FakeApiServer, recorders: Recorders, clock: Clock
) -> None:
    recorder = recorders.running_recorder(interval_seconds=30.0)
    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "does not fit")
    await settle(apiserver, recorder, "marker-0")  # the series exists now

    for _ in range(3):
        clock.advance(5)
        recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "does not fit")
    await settle(apiserver, recorder, "marker-1")
    assert len(about(apiserver, "worker-1")) == 1, "repeats within the interval are not written"

    clock.advance(16)  # 31 s after the first write
    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "does not fit")

    writes = await written(apiserver, "worker-1", count=2)
    assert patches_of(writes) == [(5, "does not fit")], "one Event: 1 + 3 counted + 1"


async def test_a_new_message_after_the_change_interval_is_written_at_once(
    apiserver: FakeApiServer, recorders: Recorders, clock: Clock
) -> None:
    recorder = recorders.running_recorder()
    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "0/3 nodes")
    await settle(apiserver, recorder, "marker-0")  # the series exists now

    clock.advance(5)
    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "0/4 nodes", change_interval=2)

    writes = await written(apiserver, "worker-1", count=2)
    assert patches_of(writes) == [(2, "0/4 nodes")]


async def test_new_messages_within_the_change_interval_wait_and_only_the_latest_is_written(
    apiserver: FakeApiServer, recorders: Recorders, clock: Clock
) -> None:
    recorder = recorders.running_recorder()
    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "0/3 nodes")
    await settle(apiserver, recorder, "marker-0")  # the series exists now

    clock.advance(0.5)
    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "0/4 nodes", change_interval=2)
    clock.advance(0.5)
    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "0/5 nodes", change_interval=2)
    await settle(apiserver, recorder, "marker-1")
    assert len(about(apiserver, "worker-1")) == 1, "not before the change interval"

    clock.advance(1)  # 2 s after the first write
    await settle(apiserver, recorder, "marker-2")

    writes = await written(apiserver, "worker-1", count=2)
    assert patches_of(writes) == [(2, "0/5 nodes")]


async def test_events_beyond_max_pending_are_dropped_and_counted(
    apiserver: FakeApiServer, recorders: Recorders
) -> None:
    recorder = recorders.make(max_pending=2)  # not running yet: the queue fills
    for name in ("worker-1", "worker-2", "worker-3"):
        recorder.record(pod(name), "Normal", "Scheduled", f"bound {name}")

    assert recorders.dropped == 1
    recorders.start(recorder)
    await written(apiserver, "worker-2", count=1)
    await settle(apiserver, recorder, "marker-1")
    written_about = [r.body["involvedObject"]["name"] for r in apiserver.requests_to("POST")]
    assert written_about == ["worker-1", "worker-2", "marker-1"], "worker-3 was dropped"


async def test_warnings_wait_while_bindings_are_in_flight_and_other_events_pass_them(
    apiserver: FakeApiServer, recorders: Recorders
) -> None:
    idle = asyncio.Event()  # a binding is in flight
    recorder = recorders.running_recorder(idle=idle)

    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "waiting for the gang")
    recorder.record(pod("worker-2"), "Normal", "Scheduled", "bound to node-1")
    await written(apiserver, "worker-2", count=1)
    assert about(apiserver, "worker-1") == [], "held while bindings are in flight"

    idle.set()
    await written(apiserver, "worker-1", count=1)


async def test_a_held_warning_no_longer_true_when_its_turn_comes_is_not_written(
    apiserver: FakeApiServer, recorders: Recorders
) -> None:
    idle = asyncio.Event()
    recorder = recorders.running_recorder(idle=idle)
    pod_unbound = True

    recorder.record(
        pod("worker-1"),
        "Warning",
        "FailedScheduling",
        "0/3 nodes are available",
        still_true=lambda: pod_unbound,
    )
    await settle(apiserver, recorder, "marker-1")
    pod_unbound = False  # it was bound meanwhile
    idle.set()
    # A writer may take the first marker before the held warning; by the second
    # one, the warning has had its turn.
    await settle(apiserver, recorder, "marker-2")
    await settle(apiserver, recorder, "marker-3")

    assert about(apiserver, "worker-1") == [], "a warning no longer true was written"


async def test_records_of_one_series_waiting_together_make_one_write_counting_them_all(
    apiserver: FakeApiServer, recorders: Recorders
) -> None:
    recorder = recorders.running_recorder(writers=4)
    for attempt in (1, 2, 3):
        # Queued before the first is written: nothing is known of the series yet.
        recorder.record(pod("worker-1"), "Warning", "FailedScheduling", f"attempt {attempt}")

    [write] = await written(apiserver, "worker-1", count=1)
    await settle(apiserver, recorder, "marker-1")
    assert about(apiserver, "worker-1") == [write]
    assert (write.verb, write.body["count"], write.body["message"]) == ("POST", 3, "attempt 3")


async def test_warnings_held_through_a_burst_of_bindings_are_written_once_each(
    apiserver: FakeApiServer, recorders: Recorders
) -> None:
    idle = asyncio.Event()  # bindings in flight: warnings are held
    recorder = recorders.running_recorder(idle=idle, writers=4)
    for attempt in range(1, 31):  # a gang tried again and again meanwhile
        for name in ("worker-1", "worker-2"):
            recorder.record(pod(name), "Warning", "FailedScheduling", f"attempt {attempt}")
    await settle(apiserver, recorder, "marker-1")

    idle.set()
    for name in ("worker-1", "worker-2"):
        [write] = await written(apiserver, name, count=1)
        said = (write.verb, write.body["count"], write.body["message"])
        assert said == ("POST", 30, "attempt 30")
    await settle(apiserver, recorder, "marker-2")
    assert len(about(apiserver, "worker-1")) == 1


async def test_a_write_of_a_series_in_flight_is_followed_by_one_counting_forward(
    apiserver: FakeApiServer, recorders: Recorders
) -> None:
    # A slow answer: the series is not known until it comes.
    apiserver.on("POST", EVENTS, InFlight(created))
    recorder = recorders.running_recorder(writers=4)
    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "attempt 1")
    await apiserver.wait_until(lambda: len(apiserver.requests_to("POST", EVENTS)) == 1)
    for attempt in (2, 3):  # the first is on its way: these wait behind it, merged
        recorder.record(pod("worker-1"), "Warning", "FailedScheduling", f"attempt {attempt}")

    writes = await written(apiserver, "worker-1", count=2)
    assert [r.verb for r in writes] == ["POST", "PATCH"]
    assert patches_of(writes) == [(3, "attempt 3")]


async def test_writers_write_several_events_at_once(
    apiserver: FakeApiServer, recorders: Recorders
) -> None:
    slow_create = InFlight(created)
    apiserver.on("POST", EVENTS, slow_create)
    recorder = recorders.running_recorder(writers=3)
    for index in range(6):
        recorder.record(pod(f"worker-{index}"), "Normal", "Scheduled", "bound")

    await apiserver.wait_for("POST", EVENTS, count=6)
    assert slow_create.most == 3


async def test_a_series_whose_event_expired_is_created_anew(
    apiserver: FakeApiServer, recorders: Recorders, clock: Clock
) -> None:
    apiserver.on("PATCH", AN_EVENT, status_error(404, "NotFound"))
    recorder = recorders.running_recorder()
    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "does not fit")
    await settle(apiserver, recorder, "marker-0")  # the series exists now

    clock.advance(31)
    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "does not fit")

    writes = await written(apiserver, "worker-1", count=3)
    assert [r.verb for r in writes] == ["POST", "PATCH", "POST"]
    assert writes[2].body["count"] == 1
    assert writes[2].body["metadata"]["name"] != writes[0].body["metadata"]["name"]


async def test_stopping_the_recorder_as_an_event_is_queued_stops_it(
    apiserver: FakeApiServer, recorders: Recorders
) -> None:
    recorder = recorders.make()
    running = asyncio.create_task(recorder.run())
    await settle(apiserver, recorder, "marker-1")
    await asyncio.sleep(0.05)  # the marker's answer is read: the writer waits for an event

    recorder.record(pod("worker-1"), "Normal", "Scheduled", "bound to node-1")
    running.cancel()  # at shutdown, or when the Lease is lost

    done, _ = await asyncio.wait({running}, timeout=1.0)
    assert done, "the recorder ignored being stopped and writes on"


async def test_a_write_cancelled_while_waiting_its_series_turn_does_not_hold_up_the_next(
    recorders: Recorders,
) -> None:
    recorder = recorders.make()
    key = ("uid-worker-1", "FailedScheduling")
    recorder._turns[key] = deque()  # a write of the series is in flight
    second = asyncio.create_task(recorder._wait_turn(key))
    third = asyncio.create_task(recorder._wait_turn(key))
    await asyncio.sleep(0)
    second.cancel()
    await asyncio.gather(second, return_exceptions=True)

    recorder._pass_turn(key)  # the write in flight is done
    await asyncio.wait_for(third, timeout=1.0)
    recorder._pass_turn(key)
    assert key not in recorder._turns


async def test_a_write_cancelled_as_its_turn_comes_passes_the_turn_on(
    recorders: Recorders,
) -> None:
    recorder = recorders.make()
    key = ("uid-worker-1", "FailedScheduling")
    recorder._turns[key] = deque()
    second = asyncio.create_task(recorder._wait_turn(key))
    third = asyncio.create_task(recorder._wait_turn(key))
    await asyncio.sleep(0)

    recorder._pass_turn(key)  # the second's turn: it is cancelled before it runs again
    second.cancel()
    await asyncio.gather(second, return_exceptions=True)
    await asyncio.wait_for(third, timeout=1.0)
    recorder._pass_turn(key)
    assert key not in recorder._turns


async def test_written_about_gives_each_series_of_the_objects_as_it_stands(
    apiserver: FakeApiServer, recorders: Recorders, clock: Clock
) -> None:
    recorder = recorders.running_recorder()
    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "0/3 nodes are available")
    recorder.record(pod("worker-2"), "Normal", "Scheduled", "bound to node-1")
    both = {"uid-worker-1", "uid-worker-2"}
    await settle(apiserver, recorder, "marker")
    recorder.record(pod("worker-1"), "Warning", "FailedScheduling", "0/3 nodes are available")

    (series,) = recorder.written_about({"uid-worker-1"})
    assert (series.kind, series.reason, series.message, series.count) == (
        "Warning",
        "FailedScheduling",
        "0/3 nodes are available",
        2,  # the repeat counted, not yet written
    )
    assert [s.reason for s in recorder.written_about(both)] == [
        "FailedScheduling",
        "Scheduled",
    ]
    assert recorder.written_about({"uid-other"}) == []
