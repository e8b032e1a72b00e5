"""core/requeue.py: a group refused for room sleeps until a change can let a member in."""

from __future__ import annotations

from dataclasses import replace

from coscheduler.core import Scheduler
from coscheduler.core.group import GroupKey
from coscheduler.core.queue import QueueSettings
from coscheduler.core.settings import SchedulerSettings
from tests.builders import Clock, gang, group, node, pod

BIG = GroupKey("default", "big")


def _waiting_big(clock: Clock, *, one_rack: bool = False) -> Scheduler:
    """Two 8-cpu nodes, each 6 cpu taken by others; a gang of two 4-cpu members waits
    (``one_rack``: each node a rack of its own, and the gang kept in one)."""
    settings = SchedulerSettings(queue=QueueSettings(unschedulable_flush_seconds=300))
    scheduler = Scheduler(clock, settings)
    for name in ("n0", "n1"):
        scheduler.upsert_node(node(name, cpu="8", labels={"rack": name}))
        for i in range(3):
            scheduler.upsert_pod(pod(f"{name}-o{i}", cpu="2", node=name, scheduler="other"))
    levels = ("rack",) if one_rack else ()
    scheduler.upsert_group(replace(group("big", 2), topology_levels=levels))
    for member in gang("big", 2, cpu="4"):
        scheduler.upsert_pod(member)
    refused = scheduler.next_decision()
    assert refused is not None
    assert not refused.bindings
    assert scheduler.queue.pool(BIG) == "unschedulable"
    return scheduler


def test_room_too_small_for_a_member_wakes_nothing() -> None:
    clock = Clock()
    scheduler = _waiting_big(clock)
    scheduler.remove_pod("uid-default-n0-o0")  # n0: room for one member, not the gang
    clock.advance(60)
    assert scheduler.next_decision() is None
    assert scheduler.queue.pool(BIG) == "unschedulable"


def test_room_for_the_whole_gang_wakes_it() -> None:
    clock = Clock()
    scheduler = _waiting_big(clock)
    scheduler.remove_pod("uid-default-n0-o0")
    scheduler.remove_pod("uid-default-n1-o0")
    placed = scheduler.next_decision()
    assert placed is not None
    assert len(placed.bindings) == 2


def test_the_flush_retries_a_group_no_change_woke() -> None:
    clock = Clock()
    scheduler = _waiting_big(clock)
    clock.advance(299)
    assert scheduler.next_decision() is None
    clock.advance(1)
    retried = scheduler.next_decision()
    assert retried is not None
    assert retried.group == BIG
    assert not retried.bindings


def test_a_node_added_that_admits_members_wakes_it() -> None:
    clock = Clock()
    scheduler = _waiting_big(clock)
    scheduler.upsert_node(node("n2", cpu="8", unschedulable=True))
    assert scheduler.next_decision() is None  # cordoned: admits nobody
    scheduler.upsert_node(node("n2", cpu="8"))
    placed = scheduler.next_decision()
    assert placed is not None
    assert {b.node for b in placed.bindings} == {"n2"}


def test_room_spread_over_racks_does_not_wake_a_gang_kept_in_one() -> None:
    clock = Clock()
    scheduler = _waiting_big(clock, one_rack=True)
    scheduler.remove_pod("uid-default-n0-o0")
    scheduler.remove_pod("uid-default-n1-o0")  # room for the gang, one member per rack
    assert scheduler.next_decision() is None
    assert scheduler.queue.pool(BIG) == "unschedulable"


def test_room_in_one_rack_wakes_a_gang_kept_in_one() -> None:
    clock = Clock()
    scheduler = _waiting_big(clock, one_rack=True)
    for i in range(3):
        scheduler.remove_pod(f"uid-default-n1-o{i}")
    placed = scheduler.next_decision()
    assert placed is not None
    assert {b.node for b in placed.bindings} == {"n1"}
