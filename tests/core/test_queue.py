"""The group queue: order, backoff, pools and event-driven requeue."""

from __future__ import annotations

from coscheduler.core import ClusterEvent, Code, GroupKey, GroupQueue, QueueSettings
from tests.builders import Clock

A, B, C = GroupKey("ns", "a"), GroupKey("ns", "b"), GroupKey("ns", "c")


def test_order_priority_then_creation_then_name() -> None:
    queue = GroupQueue(Clock())
    queue.add(C, priority=0, created=1.0)
    queue.add(B, priority=0, created=1.0)
    queue.add(A, priority=0, created=2.0)
    high = GroupKey("ns", "z")
    queue.add(high, priority=5, created=9.0)
    assert [queue.pop() for _ in range(5)] == [high, B, C, A, None]


def test_backoff_doubles_to_the_cap() -> None:
    clock = Clock()
    queue = GroupQueue(clock, QueueSettings(initial_backoff_seconds=1, max_backoff_seconds=4))
    queue.add(A, 0, 0.0)
    waits = []
    assert queue.pop() == A
    for _ in range(4):
        queue.done(A, Code.UNSCHEDULABLE)
        started = clock.now
        while queue.pop() is None:
            clock.advance(0.5)
        waits.append(clock.now - started)
    assert waits == [1.0, 2.0, 4.0, 4.0]


def test_capacity_event_wakes_backed_off_groups_not_waiting_ones() -> None:
    queue = GroupQueue(Clock())
    queue.add(A, 0, 0.0)
    queue.add(B, 0, 1.0)
    queue.pop()
    queue.done(A, Code.UNSCHEDULABLE)
    queue.pop()
    queue.done(B, Code.WAITING)
    assert queue.pop() is None
    assert queue.on_event(ClusterEvent.NODE_ADDED) == 1
    assert (queue.pool(A), queue.pool(B)) == ("active", "unschedulable")
    assert queue.on_event(ClusterEvent.GROUP_CHANGED, B) == 1
    assert [queue.pop(), queue.pop()] == [A, B]


def test_waiting_groups_are_flushed_eventually() -> None:
    clock = Clock()
    queue = GroupQueue(clock, QueueSettings(unschedulable_flush_seconds=60))
    queue.add(A, 0, 0.0)
    queue.pop()
    queue.done(A, Code.WAITING)
    clock.advance(59)
    assert queue.pop() is None
    clock.advance(1)
    assert queue.pop() == A


def test_event_during_attempt_sends_failure_back_to_active() -> None:
    queue = GroupQueue(Clock())
    queue.add(A, 0, 0.0)
    assert queue.pop() == A
    queue.on_event(ClusterEvent.POD_DELETED)
    queue.done(A, Code.UNSCHEDULABLE)
    assert queue.pop() == A


def test_success_removes_and_add_refreshes_order() -> None:
    queue = GroupQueue(Clock())
    queue.add(A, 0, 0.0)
    queue.add(B, 0, 1.0)
    queue.add(B, 9, 1.0)
    assert queue.pop() == B
    queue.done(B, Code.SUCCESS)
    assert B not in queue
    queue.remove(A)
    assert queue.pop() is None
    assert len(queue) == 0


def test_requeue_backs_off() -> None:
    clock = Clock()
    queue = GroupQueue(clock)
    queue.add(A, 0, 0.0)
    queue.requeue(A, Code.ERROR)
    assert queue.pool(A) == "backoff"
    assert queue.peek_ready() == clock.now + 1.0


def test_peek_ready_sees_a_backed_off_group_behind_one_an_event_moved_on() -> None:
    # A woken by an event about itself, then placed, leaves its old backoff entry
    # first in line: the loop's timer must still be B's, or B waits for an
    # unrelated event (a quiet cluster has none).
    clock = Clock()
    queue = GroupQueue(clock)
    queue.add(A, 0, 1.0)
    queue.add(B, 0, 2.0)
    assert queue.pop() == A
    queue.done(A, Code.UNSCHEDULABLE)
    clock.advance(0.5)
    assert queue.pop() == B
    queue.done(B, Code.UNSCHEDULABLE)
    queue.on_event(ClusterEvent.GROUP_CHANGED, A)
    assert queue.pop() == A
    queue.done(A, Code.SUCCESS)
    assert queue.pool(B) == "backoff"
    assert queue.peek_ready() == clock.now + 1.0


def test_peek_ready_sees_a_waiting_group_behind_one_an_event_moved_on() -> None:
    clock = Clock()
    queue = GroupQueue(clock, QueueSettings(unschedulable_flush_seconds=60))
    queue.add(A, 0, 1.0)
    queue.add(B, 0, 2.0)
    assert queue.pop() == A
    queue.done(A, Code.WAITING)
    clock.advance(5)
    assert queue.pop() == B
    queue.done(B, Code.WAITING)
    queue.on_event(ClusterEvent.GROUP_CHANGED, A)
    assert queue.pop() == A
    queue.done(A, Code.SUCCESS)
    assert queue.peek_ready() == clock.now + 60
