"""Queue positions in PodGroup status: how many writes a moving line costs.

A line of groups waits in one queue (no node, so none is placed); then the
head is placed, five times, and everyone behind it moves up one each time.
The writes are counted on the wire, with the publishing rule
(:mod:`coscheduler.controller.positions`) and with a rule that publishes
every move (what a writer without one would do). Rounds are driven by the
test (publish, then write what was marked) so the counts are exact.
"""

from __future__ import annotations

from typing import Any

from coscheduler.api.adapters.apis import SIGS
from coscheduler.controller.positions import PositionPublisher, PublishRule
from coscheduler.controller.writer import StatusWriter
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.readmodel import ChangedGroups, ReadModel
from coscheduler.runtime.reporter import Reporter
from tests.builders import pod_object, podgroup_object
from tests.fed import Fed
from tests.runtime.apiserver import FakeApiServer, Reply

LINE = 400
EVERY_MOVE = PublishRule(exact_within=LINE, budget=LINE)
PATCHES = "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/podgroups/*/status"


def name(index: int) -> str:
    return f"g{index:04d}"


class Line:
    def __init__(
        self,
        state: Fed,
        publisher: PositionPublisher,
        writer: StatusWriter,
        apiserver: FakeApiServer,
    ) -> None:
        self.state = state
        self.publisher = publisher
        self.writer = writer
        self.apiserver = apiserver

    async def settle(self) -> int:
        """Rounds of publishing and writing until nothing is due; the writes made."""
        before = self.writer.writes
        await self.writer.write_marked()
        while self.publisher.publish():
            await self.writer.write_marked()
        return self.writer.writes - before

    def place_head(self, index: int) -> None:
        self.state.handlers.pods.upsert(
            pod_object(f"{name(index)}-0", group=name(index), node="node-1")
        )

    def statuses(self) -> dict[str, Any]:
        """Each group's status as last written."""
        latest = {}
        for write in self.apiserver.requests_to("PATCH"):
            latest[write.path.rsplit("/", 2)[1]] = write.body["status"]
        return latest


async def start(rule: PublishRule, apiserver: FakeApiServer, kube: KubeClient) -> Line:
    apiserver.on("PATCH", PATCHES, lambda request: Reply(200, request.body))
    changed = ChangedGroups()
    state = Fed(Scheduler(lambda: 0.0), on_group_changed=changed.mark)
    reporter = Reporter(kube, metrics=Metrics(), is_waiting=state.scheduler.is_waiting)
    view = ReadModel(state.scheduler, state.handlers)
    publisher = PositionPublisher(positions=view.queue_positions, mark=changed.mark, rule=rule)
    writer = StatusWriter(
        view=view,
        changed=changed,
        reporter=reporter,
        written=state.handlers.groups.set_status,
        positions=publisher.published,
    )
    for index in range(LINE):
        state.handlers.podgroups[SIGS].upsert(podgroup_object(name(index), min_member=1))
        state.handlers.pods.upsert(pod_object(f"{name(index)}-0", group=name(index)))
    return Line(state, publisher, writer, apiserver)


async def moves(rule: PublishRule, apiserver: FakeApiServer, kube: KubeClient) -> list[int]:
    """Writes to publish the line, then for each of five heads placed in turn."""
    line = await start(rule, apiserver, kube)
    writes = [await line.settle()]
    for index in range(5):
        line.place_head(index)
        writes.append(await line.settle())
    return writes


async def test_placing_the_head_rewrites_the_front_not_the_whole_line(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    first, *each = await moves(PublishRule(), apiserver, kube)
    print(f"publishing rule: {first} writes for a line of {LINE}, then {each} per head placed")
    assert first <= 2 * LINE  # each group's first status, then its number
    # The placed head, the ten at the front, and a few further back past their drift.
    assert all(11 <= writes <= 40 for writes in each), each


async def test_a_rule_that_publishes_every_move_rewrites_the_whole_line(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    first, *each = await moves(EVERY_MOVE, apiserver, kube)
    print(f"every move: {first} writes for a line of {LINE}, then {each} per head placed")
    assert each == [LINE - index for index in range(5)]


async def test_the_statuses_say_the_line_in_order(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    line = await start(PublishRule(), apiserver, kube)
    await line.settle()
    latest = line.statuses()
    assert [latest[name(index)]["queuePosition"] for index in range(10)] == list(range(1, 11))
    assert latest[name(399)]["clusterPosition"] == 400
    line.place_head(0)
    await line.settle()
    latest = line.statuses()
    assert latest[name(0)]["queuePosition"] is None
    assert latest[name(0)]["phase"] == "Scheduled"
    assert [latest[name(index)]["queuePosition"] for index in range(1, 11)] == list(range(1, 11))
