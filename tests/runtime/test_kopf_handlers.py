"""controller/handlers.py: the Kopf handlers that follow each Namespace's PodGroups and
each Queue.

Each handler is called as Kopf calls it (by its registry, with an object's
event) over a read model fed by hand; its writes are seen on the wire of a
scripted API server.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, cast

import kopf
import pytest

from coscheduler.api.adapters.apis import SIGS
from coscheduler.api.labels import GROUP, QUEUE_PLURAL, VERSION
from coscheduler.controller import handlers, queues
from coscheduler.controller.handlers import Admission, GroupFollower, QueueFollower
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
EPOCH = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)
PODGROUPS = f"/apis/{GROUP}/{VERSION}/namespaces/default/podgroups"
ELSEWHERE = f"/apis/{GROUP}/{VERSION}/namespaces/elsewhere/podgroups"
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

    def add_namespace(self, name: str, version: str = "1") -> None:
        self.state.handlers.namespaces.upsert(
            {"metadata": {"name": name, "resourceVersion": version}}
        )

    def add_group(self, name: str, members: int, namespace: str = "default") -> None:
        self.state.handlers.podgroups[SIGS].upsert(
            podgroup_object(name, min_member=members, namespace=namespace)
        )
        for index in range(members):
            self.state.handlers.pods.upsert(
                pod_object(f"{name}-{index}", group=name, namespace=namespace)
            )

    def bind(self, name: str, index: int) -> None:
        self.state.handlers.pods.upsert(pod_object(f"{name}-{index}", group=name, node="node-1"))

    def patches(self, path: str) -> list[RecordedRequest]:
        return self.apiserver.requests_to("PATCH", path)

    def follow(self, namespace: str = "default", **meta: str) -> asyncio.Task[None]:
        """The handler as Kopf calls it with the Namespace's first event (the listing's)."""
        return asyncio.create_task(
            self.podgroup_status(type=None, name=namespace, meta={"resourceVersion": "1", **meta})
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
        Scheduler(lambda: 0.0),
        on_group_changed=changes.group,
        on_queue_changed=changes.queue,
        on_namespace_changed=changes.namespace,
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
        GroupFollower(
            view=view,
            marks=changes.groups,
            writer=writer,
            writing=writing,
            debounce_seconds=DEBOUNCE_SECONDS,
        ),
        QueueFollower(
            view=view,
            marks=changes.queues,
            writer=queue_writer,
            writing=writing,
            debounce_seconds=DEBOUNCE_SECONDS,
        ),
    )
    registry = handlers.handlers(
        Admission(view, listed := asyncio.Event(), "coscheduler"), followers=followers
    )
    rounds = [asyncio.create_task(writer.run()), asyncio.create_task(reporter.run_events())]
    state.handlers.namespaces.upsert({"metadata": {"name": "default", "resourceVersion": "1"}})
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
    follower = setup.follow()
    await quiet()
    assert setup.patches(f"{PODGROUPS}/train/status") == []

    setup.writing.set()

    await setup.apiserver.wait_for("PATCH", f"{PODGROUPS}/train/status")
    follower.cancel()


async def test_a_gang_bound_pod_by_pod_costs_one_status_write(setup: Setup) -> None:
    setup.writing.set()
    setup.add_group("train", members=4)
    follower = setup.follow()
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


async def test_a_namespaces_handler_writes_its_groups_and_no_others(setup: Setup) -> None:
    setup.writing.set()
    setup.add_namespace("elsewhere")
    setup.add_group("train", members=2)
    follower = setup.follow()
    setup.add_group("serve", members=1)  # after the handler came: by its mark
    setup.add_group("other", members=1, namespace="elsewhere")

    await setup.apiserver.wait_for("PATCH", f"{PODGROUPS}/train/status")
    await setup.apiserver.wait_for("PATCH", f"{PODGROUPS}/serve/status")
    await quiet()
    assert setup.patches(f"{ELSEWHERE}/other/status") == []
    assert not follower.done(), "it stays while its namespace lives"
    follower.cancel()


async def test_the_rounds_leave_a_followed_group_to_its_handler(setup: Setup) -> None:
    setup.writing.set()
    setup.add_group("train", members=2)  # marked, and no handler follows it yet
    await quiet()
    assert setup.patches(f"{PODGROUPS}/train/status") == []


async def test_a_write_refused_for_now_is_sent_again(setup: Setup) -> None:
    path = f"{PODGROUPS}/train/status"
    setup.apiserver.on("PATCH", path, Reply(500, {}), lambda r: Reply(200, r.body))
    setup.writing.set()
    setup.add_group("train", members=2)
    follower = setup.follow()

    first, second = await setup.apiserver.wait_for("PATCH", path, count=2)

    # The same status (its conditions' times may have moved on a second).
    assert first.body["status"]["phase"] == second.body["status"]["phase"] == "Pending"
    assert first.body["status"]["pending"] == second.body["status"]["pending"] == 2
    follower.cancel()


async def test_a_handler_ends_when_its_namespace_is_deleted(setup: Setup) -> None:
    setup.writing.set()
    setup.add_group("train", members=1)
    follower = setup.follow()
    await setup.apiserver.wait_for("PATCH", f"{PODGROUPS}/train/status")

    setup.state.handlers.namespaces.remove({"metadata": {"name": "default"}})

    await asyncio.wait_for(follower, timeout=5)


async def test_a_handler_hands_over_once_its_namespace_has_a_newer_version(
    setup: Setup,
) -> None:
    """Kopf keeps a namespace's events while its handler runs: one whose namespace has
    changed returns, and the newer event calls the handler again, which takes over."""
    setup.writing.set()
    setup.add_namespace("default", version="0")  # the read model behind Kopf's stream
    setup.add_group("train", members=2)
    follower = setup.follow()
    await setup.apiserver.wait_for("PATCH", f"{PODGROUPS}/train/status")
    setup.add_namespace("default", version="1")  # what Kopf called with
    await quiet()
    assert not follower.done(), "an older version is no change"

    setup.add_namespace("default", version="2")
    await asyncio.wait_for(follower, timeout=5)

    newer = setup.follow(resourceVersion="2")
    setup.bind("train", 0)
    setup.bind("train", 1)
    _, scheduled = await setup.apiserver.wait_for("PATCH", f"{PODGROUPS}/train/status", count=2)
    assert scheduled.body["status"]["phase"] == "Scheduled"
    newer.cancel()


async def test_a_namespace_being_deleted_is_not_followed(setup: Setup) -> None:
    setup.writing.set()
    setup.add_group("train", members=1)

    await asyncio.wait_for(setup.follow(deletionTimestamp="2026-11-29T08:00:00Z"), timeout=5)

    assert setup.patches(f"{PODGROUPS}/train/status") == []


def test_under_namespace_only_the_namespaces_read_are_followed() -> None:
    followers = cast(Any, (None, None))
    registry = handlers.handlers(None, followers=followers, namespaces=("ml",))
    [handler] = [h for h in registry._watching.get_all_handlers() if h.id == "podgroup-status"]
    when = cast(Callable[..., bool], handler.when)
    assert when(name="ml")
    assert not when(name="default")


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


async def test_a_queue_handler_that_wrote_ends_and_its_writes_echo_calls_it_again(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kopf keeps an object's events while its handler runs: a Queue's follower that wrote
    returns, and the event of its own write (a newer version) calls it again. Each look
    is a second later (the clock's whole second once turned between the two and a second
    write followed): only the condition's transition time would differ, so nothing is
    written again."""
    seconds = itertools.count()
    monkeypatch.setattr(
        queues,
        "utc_now",
        lambda whole_seconds=False: EPOCH + datetime.timedelta(seconds=next(seconds)),
    )
    path = f"{QUEUES}/team-a/status"
    setup.apiserver.on(
        "PATCH", path, lambda r: Reply(200, {**r.body, "metadata": {"resourceVersion": "2"}})
    )
    setup.writing.set()
    setup.state.handlers.queues.upsert(
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Queue", "metadata": {"name": "team-a"}}
    )

    await asyncio.wait_for(
        setup.queue_status(name="team-a", type=None, meta={"resourceVersion": "1"}), timeout=5
    )

    echo = asyncio.create_task(
        setup.queue_status(name="team-a", type=None, meta={"resourceVersion": "2"})
    )
    await quiet()
    assert not echo.done(), "nothing new to write: it follows on"
    assert len(setup.patches(path)) == 1
    echo.cancel()


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
