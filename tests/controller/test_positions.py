"""controller/positions.py: exact near the front, few writes further back, a budget per round."""

from __future__ import annotations

import datetime
import json

from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.adapters import native, t9k, volcano, xk8s
from coscheduler.api.podgroup import PodGroupSpec, PodGroupStatus
from coscheduler.api.reasons import Reason
from coscheduler.controller.positions import PositionPublisher, PublishRule, due
from coscheduler.controller.status import derive
from coscheduler.core.group import KIND_POD, GroupKey
from coscheduler.core.positions import Position
from coscheduler.core.status import Code, Status

RULE = PublishRule(exact_within=10, drift=0.1, budget=50)
NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def line(count: int, *, start: int = 1, queue: str = "q") -> dict[GroupKey, Position]:
    """``count`` groups g<start>..., at positions 1..count of one queue."""
    return {
        GroupKey("ns", f"g{start + index}"): Position(queue, index + 1, index + 1)
        for index in range(count)
    }


def test_a_new_line_is_published_front_first_within_the_budget() -> None:
    changes = due({}, line(120), RULE)
    assert len(changes) == 50
    assert sorted(p.in_cluster for p in changes.values() if p) == list(range(1, 51))


def test_near_the_front_every_move_is_published_further_back_only_a_drift() -> None:
    before = line(1000)
    # The head is placed: everyone behind it moves up one.
    after = line(999, start=2)
    changes = due(before, after, PublishRule(exact_within=10, drift=0.1, budget=10_000))
    head = GroupKey("ns", "g1")
    assert changes.pop(head) is None
    moved = {key.name for key in changes}
    # The ten at the front now, and none of those far back (1 of ~500 is within 10%).
    assert {f"g{n}" for n in range(2, 12)} <= moved
    assert "g500" not in moved
    assert len(changes) == 10


def test_far_back_a_number_is_rewritten_once_off_by_more_than_its_drift() -> None:
    key = GroupKey("ns", "far")
    said = {key: Position("q", 500, 500)}
    assert due(said, {key: Position("q", 460, 460)}, RULE) == {}
    moved = Position("q", 440, 440)
    assert due(said, {key: moved}, RULE) == {key: moved}


def test_a_group_that_changes_queue_is_republished() -> None:
    key = GroupKey("ns", "g")
    said = {key: Position("a", 300, 300)}
    now = Position("b", 300, 300)
    assert due(said, {key: now}, RULE) == {key: now}


@given(
    sizes=st.lists(st.integers(min_value=0, max_value=300), min_size=1, max_size=6),
    budget=st.integers(min_value=1, max_value=80),
)
def test_rounds_respect_the_budget_and_converge(sizes: list[int], budget: int) -> None:
    """Whatever the line does, a round changes at most ``budget`` numbers (plus groups
    that left); once it stops moving, the front is exact within a few rounds."""
    rule = PublishRule(exact_within=10, drift=0.1, budget=budget)
    current: dict[GroupKey, Position] = {}
    marked: list[GroupKey] = []
    publisher = PositionPublisher(positions=lambda: current, mark=marked.append, rule=rule)
    for start, size in enumerate(sizes):  # each time the head left, the rest moved up
        current = line(size, start=start)
        left = len([k for k in publisher.published if k not in current])
        assert publisher.publish() - left <= budget
    for _ in range(len(current) // budget + 2):
        publisher.publish()
    published = publisher.published
    assert set(published) == set(current)
    for key, position in current.items():
        said = published[key]
        if position.in_cluster <= rule.exact_within:
            assert said == position
        else:
            assert abs(said.in_cluster - position.in_cluster) <= rule.drift * position.in_cluster
    assert publisher.publish() == 0


def test_lone_pods_are_not_published() -> None:
    lone = GroupKey("ns", "p", KIND_POD)
    publisher = PositionPublisher(
        positions=lambda: {lone: Position("q", 1, 1)}, mark=lambda _: None
    )
    assert publisher.publish() == 0


def test_the_status_carries_the_position_while_pending_and_drops_it_once_placed() -> None:
    position = Position("team", 2, 5)
    status, _ = derive(
        spec=PodGroupSpec(min_member=2),
        previous=PodGroupStatus(),
        members=[],
        verdict=None,
        now=NOW,
        position=position,
    )
    assert (status.queue_position, status.cluster_position) == (2, 5)
    scheduled = status.condition("Scheduled")
    assert scheduled is not None
    assert scheduled.message is not None
    assert scheduled.message.endswith("(position 2 in queue team, 5 in the cluster)")

    class Bound:
        phase, node_name, owner_uid = "Running", "node-1", None
        requests: dict[str, int] = {}  # noqa: RUF012 (read only)

    placed, _ = derive(
        spec=PodGroupSpec(min_member=1),
        previous=status,
        members=[Bound()],
        verdict=None,
        now=NOW,
        position=position,
    )
    assert (placed.queue_position, placed.cluster_position) == (None, None)


def test_kinds_whose_status_has_no_field_for_it_say_it_in_their_scheduled_condition() -> None:
    """Volcano's and T9k's PodGroups carry our Scheduled condition: the message tells the
    place. x-k8s's status has no conditions: ``/debug/queue`` is where it shows."""
    status, _ = derive(
        spec=PodGroupSpec(min_member=2),
        previous=PodGroupStatus(),
        members=[],
        verdict=None,
        now=NOW,
        position=Position("team", 2, 5),
    )
    told = "position 2 in queue team"
    for adapter, says in ((volcano.ADAPTER, True), (t9k.ADAPTER, True), (xk8s.ADAPTER, False)):
        body = adapter.render_status(adapter.conclude(status), [])
        assert (told in json.dumps(body)) is says, adapter


def test_kubernetes_own_podgroup_says_it_in_the_condition_we_write_there() -> None:
    waits = Status(Code.UNSCHEDULABLE, Reason.NOT_ENOUGH_RESOURCES, "0/3 nodes")
    status, _ = derive(
        spec=PodGroupSpec(min_member=2),
        previous=PodGroupStatus(),
        members=[],
        verdict=waits,
        now=NOW,
        position=Position("team", 2, 5),
    )
    adapter = native.ADAPTERS[0]
    [condition] = adapter.render_status(adapter.conclude(status), [])["conditions"]
    assert condition["status"] == "False"
    assert condition["message"] == (
        "NotEnoughResources: 0/3 nodes (position 2 in its queue, 5 in the cluster)"
    )


def test_numbers_a_status_already_holds_are_taken_as_published() -> None:
    """A new leader: what the previous one wrote stands while it is not due."""
    current = line(300)
    stored = {key: (p.in_queue, p.in_cluster) for key, p in current.items()}
    far = GroupKey("ns", "g200")
    stored[far] = (195, 195)  # within a tenth of 200
    front = GroupKey("ns", "g5")
    stored[front] = (4, 4)  # near the front: must be exact
    marked: list[GroupKey] = []
    publisher = PositionPublisher(positions=lambda: current, mark=marked.append, said=stored.get)
    assert publisher.publish() == 1
    assert marked == [front]
    assert publisher.published[far].in_queue == 195
    assert publisher.published[front].in_queue == 5
