"""runtime/podstatus.py with the scheduling loop: a bound pod never keeps ``PodScheduled=False``.

The API server sets ``PodScheduled=True`` when it takes a Binding. A condition
write that says why the pod waited, sent before the decision that placed it
but taken by the server after the Binding, would put ``False`` back on the
bound pod for good (``Unschedulable`` on a running pod, and nothing writes it
again). So a pod's Binding waits for a write about it already in flight, and
writes about one pod go out one at a time, in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import pytest

from coscheduler.api.reasons import Reason
from coscheduler.core import Scheduler
from coscheduler.runtime.binder import Binder
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.loop import SchedulingLoop
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.podstatus import PodConditionWriter
from coscheduler.runtime.reporter import Reporter
from coscheduler.runtime.volume_binder import VolumeBinder
from tests.builders import Clock, node_object, pod_object
from tests.fed import Fed
from tests.runtime.apiserver import Answer, FakeApiServer, RecordedRequest, Reply

POD = "/api/v1/namespaces/default/pods/lone"


@dataclass
class Running:
    scheduler: Scheduler
    state: Fed
    loop: SchedulingLoop
    conditions: PodConditionWriter


@pytest.fixture
async def running(kube: KubeClient) -> AsyncIterator[Running]:
    """The scheduling loop and the condition writer of one process, running."""
    scheduler = Scheduler(Clock())
    state = Fed(scheduler)
    reporter = Reporter(kube, metrics=Metrics(), is_waiting=scheduler.is_waiting)
    loop = SchedulingLoop(
        scheduler=scheduler,
        groups=state.handlers.groups,
        owners=state.handlers.owners,
        binder=Binder(kube, concurrency=4),
        volume_binder=VolumeBinder(kube, bound=scheduler.volumes.bound, timeout_seconds=5.0),
        reporter=reporter,
        wake=asyncio.Event(),
    )
    conditions = reporter.pod_conditions
    tasks = [asyncio.create_task(loop.run()), asyncio.create_task(conditions.run(loop.binds_idle))]
    yield Running(scheduler, state, loop, conditions)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@pytest.fixture
async def writer(kube: KubeClient) -> AsyncIterator[PodConditionWriter]:
    """A condition writer alone, running, every pod still pending."""
    running = PodConditionWriter(kube, still_pending=lambda _uid: True)
    task = asyncio.create_task(running.run())
    yield running
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop and the writer run until ``condition()`` holds (at most 2 s)."""
    for _ in range(400):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("not in 2 s")


async def test_a_binding_waits_for_the_condition_write_in_flight_on_its_pod(
    apiserver: FakeApiServer, running: Running
) -> None:
    seen: list[str] = []
    answer_patch = asyncio.Event()

    async def slow_patch(request: RecordedRequest) -> Answer:
        seen.append("condition written")
        await answer_patch.wait()
        seen.append("condition answered")
        return Reply(200, {"kind": "Pod", "metadata": {"name": "lone"}})

    def bind(request: RecordedRequest) -> Answer:
        seen.append("binding")
        return Reply(201, {"kind": "Status", "status": "Success"})

    apiserver.on("PATCH", f"{POD}/status", slow_patch)
    apiserver.on("POST", f"{POD}/binding", bind)
    state = running.state
    # The pod does not fit; why is being written when a node it fits comes.
    state.handlers.nodes.upsert(node_object("small", cpu="2"))
    state.handlers.pods.upsert(pod_object("lone", cpu="3"))
    running.loop.wake()
    await until(lambda: seen == ["condition written"])
    state.handlers.nodes.upsert(node_object("large", cpu="4"))
    running.loop.wake()
    await until(lambda: not running.scheduler.is_waiting("uid-default-lone"))
    await asyncio.sleep(0.05)  # time enough for a binding that does not wait
    assert seen == ["condition written"]

    answer_patch.set()
    await until(lambda: "binding" in seen)
    assert seen == ["condition written", "condition answered", "binding"]
    body = apiserver.requests_to("POST", f"{POD}/binding")[0].body
    assert body["target"]["name"] == "large"


async def test_writes_about_one_pod_go_out_one_at_a_time_in_order(
    apiserver: FakeApiServer, writer: PodConditionWriter
) -> None:
    sent: list[str] = []
    answer = asyncio.Event()

    async def held(request: RecordedRequest) -> Answer:
        sent.append(request.body["status"]["conditions"][0]["message"])
        await answer.wait()
        return Reply(200, {"kind": "Pod", "metadata": {"name": "lone"}})

    apiserver.on("PATCH", f"{POD}/status", held)
    writer.explain("uid-lone", "default", "lone", Reason.UNSCHEDULABLE, "first")
    await until(lambda: sent == ["first"])
    writer.explain("uid-lone", "default", "lone", Reason.UNSCHEDULABLE, "second")
    await asyncio.sleep(0.05)  # another worker is free: it must not send "second" yet
    assert sent == ["first"]
    settled = asyncio.create_task(writer.settled(["uid-lone"]))
    await asyncio.sleep(0.01)
    assert not settled.done()
    answer.set()
    await until(lambda: sent == ["first", "second"])
    await settled


async def test_a_write_the_server_throttled_is_sent_again_unless_a_newer_reason_came(
    apiserver: FakeApiServer, writer: PodConditionWriter
) -> None:
    # A group that cannot be placed sleeps until an event could help it, so nothing
    # would explain its pods again: a write lost to a 429 must be sent again.
    sent: list[str] = []

    def throttled_once(request: RecordedRequest) -> Answer:
        sent.append(request.body["status"]["conditions"][0]["message"])
        if len(sent) == 1:
            return Reply(429, {"kind": "Status", "reason": "TooManyRequests", "code": 429})
        return Reply(200, {"kind": "Pod", "metadata": {"name": "lone"}})

    apiserver.on("PATCH", f"{POD}/status", throttled_once)
    writer.explain("uid-lone", "default", "lone", Reason.UNSCHEDULABLE, "first")
    await until(lambda: sent == ["first", "first"])
    await asyncio.sleep(0.3)  # written: not sent a third time
    assert sent == ["first", "first"]

    sent.clear()
    writer.forget("uid-lone")
    writer.explain("uid-lone", "default", "lone", Reason.UNSCHEDULABLE, "old")
    await until(lambda: sent == ["old"])  # throttled, to be sent again later...
    writer.explain("uid-lone", "default", "lone", Reason.UNSCHEDULABLE, "new")
    await until(lambda: sent == ["old", "new"])
    await asyncio.sleep(0.3)  # ...but "new" replaced it
    assert sent == ["old", "new"]
