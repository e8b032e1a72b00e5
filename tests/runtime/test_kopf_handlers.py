"""controller/handlers.py: the Kopf handlers that follow each PodGroup and Queue.

Each handler is called as Kopf calls it (by its registry, with an object's
event) over a read model fed by hand; its writes are seen on the wire of a
scripted API server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, cast

import kopf
import pytest

from coscheduler.api.adapters.apis import SIGS
from coscheduler.api.labels import GROUP, QUEUE_PLURAL, VERSION
from coscheduler.controller import handlers
from coscheduler.controller.handlers import Admission, group_follower, queue_follower
from coscheduler.controller.queues import QueueStatusWriter
from coscheduler.controller.writer import StatusWriter
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.readmodel import Changes, ReadModel
from coscheduler.runtime.reporter import Reporter
from tests.builders import pod_object, podgroup_object
from tests.fed import Fed
from tests.runtime.apiserver import FakeApiServer, RecordedRequest, Reply

DEBOUNCE_SECONDS = 0.02
PODGROUPS = f"/apis/{GROUP}/{VERSION}/namespaces/default/podgroups"
QUEUES = f"/apis/{GROUP}/{VERSION}/{QUEUE_PLURAL}"
EVENTS = "/api/v1/namespaces/default/events"

Handler = Callable[..., Coroutine[Any, Any, None]]


@dataclass
class Setup:
    state: Fed
    writer: StatusWriter
    writing: asyncio.Event
    apiserver: FakeApiServer
    podgroup_status: Handler
    queue_status: Handler
    validate_podgroup: Callable[..., None]
    listed: asyncio.Event

    def add_group(self, name: str, members: int) -> None:
        self.state.handlers.podgroups[SIGS].upsert(podgroup_object(name, min_member=members))
        for index in range(members):
            self.state.handlers.pods.upsert(pod_object(f"{name}-{index}", group=name))

    def bind(self, name: str, index: int) -> None:
        self.state.handlers.pods.upsert(pod_object(f"{name}-{index}", group=name, node="node-1"))

    def patches(self, path: str) -> list[RecordedRequest]:
        return self.apiserver.requests_to("PATCH", path)

    def follow(self, name: str) -> asyncio.Task[None]:
        """The handler as Kopf calls it with the object's first event (the listing's)."""
        return asyncio.create_task(self.call(name, version="1"))

    async def call(self, name: str, *, version: str) -> None:
        await self.podgroup_status(
            namespace="default", name=name, type=None, meta={"resourceVersion": version}
        )


def _handler(registry: kopf.OperatorRegistry, id: str) -> Handler:
    every = [*registry._watching.get_all_handlers(), *registry._webhooks.get_all_handlers()]
    [handler] = [h for h in every if h.id == id]
    return cast(Handler, handler.fn)


@pytest.fixture
async def setup(apiserver: FakeApiServer, kube: Any) -> AsyncIterator[Setup]:
    apiserver.on("PATCH", f"{PODGROUPS}/*/status", lambda r: Reply(200, r.body))
    apiserver.on("PATCH", f"{QUEUES}/*/status", lambda r: Reply(200, r.body))
    apiserver.on("POST", EVENTS, lambda r: Reply(201, r.body))
    apiserver.on("POST", "/api/v1/namespaces/*/events", lambda r: Reply(201, r.body))
    changes = Changes()
    state = Fed(
        Scheduler(lambda: 0.0), on_group_changed=changes.group, on_queue_changed=changes.queue
    )
    reporter = Reporter(
        kube, metrics=Metrics(), is_waiting=state.scheduler.is_waiting, event_writers=1
    )
    view = ReadModel(state.scheduler, state.handlers)
    writer = StatusWriter(
        view=view,
        changed=changes.groups,
        reporter=reporter,
        written=state.handlers.groups.set_status,
        followed={SIGS},
    )
    queue_writer = QueueStatusWriter(
        view=view, changed=changes.queues, reporter=reporter, followed=True
    )
    writing = asyncio.Event()
    followers = (
        group_follower(view, changes.groups, writer, writing, debounce_seconds=DEBOUNCE_SECONDS),
        queue_follower(
            view, changes.queues, queue_writer, writing, debounce_seconds=DEBOUNCE_SECONDS
        ),
    )
    registry = handlers.handlers(
        Admission(view, listed := asyncio.Event(), "coscheduler"), followers=followers
    )
    rounds = [asyncio.create_task(writer.run()), asyncio.create_task(reporter.run_events())]
    yield Setup(
        state,
        writer,
        writing,
        apiserver,
        _handler(registry, "podgroup-status"),
        _handler(registry, "queue-status"),
        cast(Callable[..., None], _handler(registry, "podgroup-validate")),
        listed,
    )
    for task in [*rounds, *(t for t in asyncio.all_tasks() if t.get_name() == "follower")]:
        task.cancel()
    await asyncio.gather(*rounds, return_exceptions=True)


async def quiet() -> None:
    await asyncio.sleep(10 * DEBOUNCE_SECONDS)


async def test_a_handler_writes_nothing_until_this_replica_writes(setup: Setup) -> None:
    setup.add_group("train", members=2)
    follower = setup.follow("train")
    await quiet()
    assert setup.patches(f"{PODGROUPS}/train/status") == []

    setup.writing.set()

    await setup.apiserver.wait_for("PATCH", f"{PODGROUPS}/train/status")
    follower.cancel()


async def test_a_gang_bound_pod_by_pod_costs_one_status_write(setup: Setup) -> None:
    setup.writing.set()
    setup.add_group("train", members=4)
    follower = setup.follow("train")
    await setup.apiserver.wait_for("PATCH", f"{PODGROUPS}/train/status")  # Pending

    for index in range(4):  # each pod's event marks the group
        setup.bind("train", index)

    first, second = await setup.apiserver.wait_for("PATCH", f"{PODGROUPS}/train/status", count=2)
    await quiet()
    assert len(setup.patches(f"{PODGROUPS}/train/status")) == 2
    assert first.body["status"]["phase"] == "Pending"
    assert (second.body["status"]["phase"], second.body["status"]["scheduled"]) == (
        "Scheduled",
        4,
    )
    follower.cancel()


async def test_the_rounds_leave_a_followed_group_to_its_handler(setup: Setup) -> None:
    setup.writing.set()
    setup.add_group("train", members=2)  # marked, and no handler follows it yet
    await quiet()
    assert setup.patches(f"{PODGROUPS}/train/status") == []


async def test_a_handler_ends_when_its_group_is_deleted(setup: Setup) -> None:
    setup.writing.set()
    setup.add_group("train", members=1)
    follower = setup.follow("train")
    await setup.apiserver.wait_for("PATCH", f"{PODGROUPS}/train/status")

    setup.state.handlers.podgroups[SIGS].remove(podgroup_object("train", min_member=1))

    await asyncio.wait_for(follower, timeout=5)


async def test_a_queue_handler_writes_its_queues_status(setup: Setup) -> None:
    setup.writing.set()
    setup.state.handlers.queues.upsert(
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Queue", "metadata": {"name": "team-a"}}
    )
    follower = asyncio.create_task(
        setup.queue_status(name="team-a", type=None, meta={"resourceVersion": "1"})
    )

    [write] = await setup.apiserver.wait_for("PATCH", f"{QUEUES}/team-a/status")

    (active,) = write.body["status"]["conditions"]
    assert (active["type"], active["status"]) == ("Active", "True")
    follower.cancel()


async def test_a_podgroup_of_a_closed_queue_is_refused_once_every_kind_is_listed(
    setup: Setup,
) -> None:
    setup.state.handlers.queues.upsert(
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Queue",
            "metadata": {"name": "research"},
            "spec": {"state": "Closed"},
        }
    )
    spec = {"minMember": 2, "queue": "research"}
    setup.validate_podgroup(spec=spec, namespace="default", warnings=[])  # a partial picture

    setup.listed.set()
    with pytest.raises(kopf.AdmissionError, match=r"^QueueClosed: "):
        setup.validate_podgroup(spec=spec, namespace="default", warnings=[])


async def test_a_handler_that_wrote_ends_and_its_writes_echo_calls_it_again(
    setup: Setup,
) -> None:
    """Kopf keeps an object's events while its handler runs: a follower that wrote returns,
    and the event of its own write (a newer version) calls it again."""
    path = f"{PODGROUPS}/train/status"
    versions = iter(range(2, 100))
    setup.apiserver.on(
        "PATCH",
        path,
        lambda r: Reply(200, {**r.body, "metadata": {"resourceVersion": str(next(versions))}}),
    )
    setup.writing.set()
    setup.add_group("train", members=2)

    await asyncio.wait_for(setup.call("train", version="1"), timeout=5)  # wrote Pending

    echo = asyncio.create_task(setup.call("train", version="2"))
    await quiet()
    assert not echo.done(), "nothing new to write: it follows on"
    setup.bind("train", 0)
    setup.bind("train", 1)
    await asyncio.wait_for(echo, timeout=5)
    first, second = setup.patches(path)
    assert (first.body["status"]["phase"], second.body["status"]["phase"]) == (
        "Pending",
        "Scheduled",
    )
