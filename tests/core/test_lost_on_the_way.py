"""A member lost on its way to its node leaves its gang short: the room waits for its
replacement, nobody else takes it (issue #26, churn during a gang's bind burst)."""

from __future__ import annotations

import dataclasses

from coscheduler.core import GroupKey, Scheduler, SchedulerSettings
from coscheduler.core.planner import Decision
from coscheduler.core.preemption import PreemptionSettings
from tests.builders import Clock, gang, group, node, pod

TRAIN = GroupKey("default", "train")


def placed_gang(clock: Clock) -> tuple[Scheduler, Decision]:
    """Two nodes of 4 cpu; ``train`` (4 x 2 cpu) fills them, its bindings in flight; ``filler``
    (one pod of 2 cpu, lower priority: no preemption) waits for room."""
    scheduler = Scheduler(clock, SchedulerSettings(preemption=PreemptionSettings(hold_seconds=60)))
    for name in ("n0", "n1"):
        scheduler.upsert_node(node(name, cpu="4"))
    scheduler.upsert_group(group("train", 4, priority=1))
    for member in gang("train", 4, cpu="2", priority=1):
        scheduler.upsert_pod(member)
    decision = scheduler.next_decision()
    assert decision is not None
    assert len(decision.bindings) == 4
    return scheduler, decision


def drain(scheduler: Scheduler) -> list[Decision]:
    decisions = []
    while (decision := scheduler.next_decision()) is not None:
        decisions.append(decision)
    return decisions


def confirm(scheduler: Scheduler, decision: Decision, skip: str) -> None:
    for binding in decision.bindings:
        if binding.uid != skip:
            member = scheduler.pod(binding.uid)
            assert member is not None
            scheduler.upsert_pod(dataclasses.replace(member, node_name=binding.node))


def test_a_failed_binding_keeps_its_room_for_the_gang() -> None:
    clock = Clock()
    scheduler, decision = placed_gang(clock)
    lost = decision.bindings[0]
    confirm(scheduler, decision, skip=lost.uid)
    scheduler.binding_failed(lost)
    scheduler.upsert_pod(pod("filler", cpu="2", priority=0))
    decisions = drain(scheduler)
    clock.advance(30)
    decisions += drain(scheduler)
    assert not any(d.bindings for d in decisions if d.group.name == "filler")
    # The gang's own retry takes its room back: whole again.
    retried = [b for d in decisions if d.group == TRAIN for b in d.bindings]
    assert [(b.uid, b.node) for b in retried] == [(lost.uid, lost.node)]


def test_a_member_deleted_on_its_way_keeps_its_room_for_its_replacement() -> None:
    clock = Clock()
    scheduler, decision = placed_gang(clock)
    lost = decision.bindings[0]
    confirm(scheduler, decision, skip=lost.uid)
    scheduler.remove_pod(lost.uid)
    scheduler.upsert_pod(pod("filler", cpu="2", priority=0))
    assert not any(d.bindings for d in drain(scheduler) if d.group.name == "filler")
    scheduler.upsert_pod(pod("train-new", group="train", cpu="2", priority=1))
    clock.advance(5)
    placed = [b for d in drain(scheduler) if d.group == TRAIN for b in d.bindings]
    assert [(b.name, b.node) for b in placed] == [("train-new", lost.node)]
    # Done: the room is the gang's member's now, nothing more is held.
    assert scheduler.preemptions.restored(TRAIN) is None


def test_the_kept_room_is_let_go_in_time() -> None:
    clock = Clock()
    scheduler, decision = placed_gang(clock)
    lost = decision.bindings[0]
    confirm(scheduler, decision, skip=lost.uid)
    scheduler.remove_pod(lost.uid)  # and nobody recreates it
    scheduler.upsert_pod(pod("filler", cpu="2", priority=0))
    clock.advance(30)
    assert not [d for d in drain(scheduler) if d.group.name == "filler" and d.bindings]
    clock.advance(31)
    assert [d for d in drain(scheduler) if d.group.name == "filler" and d.bindings]


def test_a_whole_gang_losing_a_member_later_holds_nothing() -> None:
    """Not on its way: a running gang's member deleted is not our partial placement."""
    clock = Clock()
    scheduler, decision = placed_gang(clock)
    confirm(scheduler, decision, skip="")
    scheduler.remove_pod(decision.bindings[0].uid)
    assert scheduler.preemptions.restored(TRAIN) is None
