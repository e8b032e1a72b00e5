"""A victim's eviction refused halfway: the short gang gets its room back, nobody else does.

Four nodes of 8 cpu, each full with one low gang (2 x 4 cpu, priorities 1 to
4); ``urgent`` (3 x 4 cpu, priority 100) needs two of them: the plan is low-1
and low-2. The runtime reports that low-1's first member went and its second
was refused.
"""

from __future__ import annotations

import dataclasses

from coscheduler.core import GroupKey, Scheduler, SchedulerSettings
from coscheduler.core.planner import Decision
from coscheduler.core.preemption import Mode, PreemptionPlan, PreemptionSettings
from coscheduler.core.queue import ClusterEvent
from tests.builders import Clock, decide, gang, group, node, pod, take_orders

URGENT = GroupKey("default", "urgent")
LOW_1 = GroupKey("default", "low-1")
LOW_2 = GroupKey("default", "low-2")
FIRST = "uid-default-low-1-0"


def full_cluster(clock: Clock | None = None) -> Scheduler:
    settings = SchedulerSettings(preemption=PreemptionSettings(mode=Mode.ON, hold_seconds=60))
    scheduler = Scheduler(clock or Clock(), settings)
    for n in range(4):
        scheduler.upsert_node(node(f"n{n}", cpu="8"))
        name = f"low-{n + 1}"
        scheduler.upsert_group(group(name, 2, priority=n + 1))
        for member in gang(name, 2, cpu="4", priority=n + 1):
            scheduler.upsert_pod(
                dataclasses.replace(member, node_name=f"n{n}", phase="Running", started=900.0)
            )
    scheduler.upsert_group(group("urgent", 3, priority=100))
    for member in gang("urgent", 3, cpu="4", priority=100):
        scheduler.upsert_pod(member)
    return scheduler


def planned(scheduler: Scheduler) -> PreemptionPlan:
    decide(scheduler)
    (order,) = [o for o in take_orders(scheduler) if o.evict]
    return order.plan


def drain(scheduler: Scheduler) -> list[Decision]:
    decisions = []
    while (decision := decide(scheduler)) is not None:
        decisions.append(decision)
    return decisions


def test_the_plan_takes_the_two_lowest_gangs() -> None:
    plan = planned(full_cluster())
    assert {victim.group.key for victim in plan.victims} == {LOW_1, LOW_2}


def test_a_gang_left_short_gets_its_room_back_and_the_next_plan_takes_other_gangs() -> None:
    scheduler = full_cluster()
    plan = planned(scheduler)
    restored = scheduler.preemption_failed(
        URGENT, [LOW_1], untouched=[LOW_2], plan=plan, evicted=[FIRST]
    )
    assert restored == {LOW_1: 1}
    assert scheduler.preemptions.hold(URGENT) is None
    # The evicted member goes; its Job makes another, which has not come yet.
    scheduler.remove_pod(FIRST)
    decisions = drain(scheduler)
    assert not any(d.group == URGENT and d.admitted for d in decisions)
    (order,) = [o for o in take_orders(scheduler) if o.evict]
    # Not low-1's last member (spared), nor low-1's freed room: two other gangs whole.
    assert {victim.group.key.name for victim in order.plan.victims} == {"low-2", "low-3"}
    assert all(victim.whole for victim in order.plan.victims)
    assert scheduler.preemptions.restored(LOW_1) is not None

    # The recreated member comes and goes back where its predecessor ran: whole again.
    scheduler.upsert_pod(pod("low-1-x", cpu="4", group="low-1", priority=1, uid="uid-low-1-x"))
    placed = [d for d in drain(scheduler) if d.group == LOW_1 and d.bindings]
    assert [(b.uid, b.node) for b in placed[0].bindings] == [("uid-low-1-x", "n0")]
    assert scheduler.preemptions.restored(LOW_1) is None


def test_a_gang_left_short_keeps_its_room_while_its_recreated_member_waits() -> None:
    # The recreated member is tried while its predecessor still terminates on n0.
    scheduler = full_cluster()
    plan = planned(scheduler)
    scheduler.preemption_failed(URGENT, [LOW_1], untouched=[LOW_2], plan=plan, evicted=[FIRST])
    scheduler.upsert_pod(pod("low-1-x", cpu="4", group="low-1", priority=1, uid="uid-low-1-x"))
    decisions = drain(scheduler)
    assert not any(d.group == LOW_1 and d.bindings for d in decisions)
    assert scheduler.preemptions.restored(LOW_1) is not None
    assert scheduler.snapshot.node_of(FIRST + "/restored") == "n0"
    scheduler.remove_pod(FIRST)
    placed = [d for d in drain(scheduler) if d.group == LOW_1 and d.bindings]
    assert [b.node for b in placed[0].bindings] == ["n0"]
    assert scheduler.preemptions.restored(LOW_1) is None


def test_a_refusal_before_a_gang_lost_anything_restores_nothing() -> None:
    scheduler = full_cluster()
    plan = planned(scheduler)
    assert scheduler.preemption_failed(URGENT, [LOW_1], untouched=[LOW_2], plan=plan) == {}
    assert scheduler.preemptions.restored(LOW_1) is None
    assert list(scheduler.preemptions.held()) == []


def test_a_gang_the_plan_took_whole_before_a_refusal_elsewhere_gets_no_room_back() -> None:
    # low-1 went whole (the promise holds: it is entirely gone), low-2 was refused first.
    scheduler = full_cluster()
    plan = planned(scheduler)
    evicted = ["uid-default-low-1-0", "uid-default-low-1-1"]
    assert scheduler.preemption_failed(URGENT, [LOW_2], plan=plan, evicted=evicted) == {}


def test_the_restored_room_counts_as_taken_for_everyone_else_and_is_let_go_in_time() -> None:
    clock = Clock()
    scheduler = full_cluster(clock)
    plan = planned(scheduler)
    scheduler.preemption_failed(URGENT, [LOW_1], untouched=[LOW_2], plan=plan, evicted=[FIRST])
    scheduler.remove_pod(FIRST)
    for i in range(3):  # the urgent gang is deleted meanwhile: only the filler waits
        scheduler.remove_pod(f"uid-default-urgent-{i}")
    # A 4-cpu gang of one (no victims at its priority) does not take n0's room.
    scheduler.upsert_group(group("filler", 1, priority=1))
    for member in gang("filler", 1, cpu="4", priority=1):
        scheduler.upsert_pod(member)
    decisions = drain(scheduler)
    assert not any(d.group.name == "filler" and d.admitted for d in decisions)
    assert [key for key, _ in scheduler.preemptions.held() if key == LOW_1]
    # Its recreated member never comes: past hold_seconds the room is let go.
    clock.advance(61)
    scheduler.queue.on_event(ClusterEvent.GROUP_CHANGED, GroupKey("default", "filler"))
    placed = [d for d in drain(scheduler) if d.group.name == "filler" and d.admitted]
    assert placed
    assert scheduler.preemptions.restored(LOW_1) is None


def test_a_short_gang_that_loses_its_last_member_lets_its_room_go() -> None:
    scheduler = full_cluster()
    plan = planned(scheduler)
    scheduler.preemption_failed(URGENT, [LOW_1], untouched=[LOW_2], plan=plan, evicted=[FIRST])
    scheduler.remove_pod(FIRST)
    scheduler.remove_pod("uid-default-low-1-1")
    assert scheduler.preemptions.restored(LOW_1) is None
    assert scheduler.snapshot.node_of(FIRST + "/restored") is None
