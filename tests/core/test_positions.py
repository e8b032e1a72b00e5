"""Queue positions: a permutation 1..n, in the order the loop tries groups."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from coscheduler.core import Code, GroupKey, GroupQueue
from coscheduler.core.positions import positions
from coscheduler.core.queue import ClusterEvent
from coscheduler.core.quota import QueuePolicy
from coscheduler.core.scheduler import Scheduler
from tests.builders import Clock, gang, group, node, pod

QUEUES = ("alpha", "beta", "gamma")


def test_within_a_queue_priority_then_age_then_name() -> None:
    queue = GroupQueue(Clock())
    old, new, urgent = GroupKey("ns", "old"), GroupKey("ns", "new"), GroupKey("ns", "urgent")
    queue.add(new, priority=0, created=5.0, queue="q")
    queue.add(old, priority=0, created=1.0, queue="q")
    queue.add(urgent, priority=9, created=9.0, queue="q")
    placed = positions(queue.entries(), queue.share)
    assert [placed[k].in_queue for k in (urgent, old, new)] == [1, 2, 3]


def test_across_queues_the_lowest_share_goes_first() -> None:
    shares = {"busy": 0.9, "idle": 0.1}
    queue = GroupQueue(Clock(), share=shares.__getitem__)
    first, second, third = (GroupKey("ns", n) for n in ("first", "second", "third"))
    queue.add(first, 0, 1.0, queue="busy")
    queue.add(second, 0, 2.0, queue="idle")
    queue.add(third, 0, 3.0, queue="idle")
    placed = positions(queue.entries(), queue.share)
    assert [placed[k].in_cluster for k in (second, third, first)] == [1, 2, 3]
    assert [placed[k].in_queue for k in (second, third, first)] == [1, 2, 1]
    assert placed[first].priority == 0


def test_a_group_backing_off_keeps_its_place_in_line() -> None:
    clock = Clock()
    queue = GroupQueue(clock)
    ahead, behind = GroupKey("ns", "ahead"), GroupKey("ns", "behind")
    queue.add(ahead, 0, 1.0)
    queue.add(behind, 0, 2.0)
    assert queue.pop() == ahead
    queue.done(ahead, Code.UNSCHEDULABLE)
    placed = positions(queue.entries(), queue.share)
    assert (placed[ahead].in_queue, placed[behind].in_queue) == (1, 2)


def test_the_scheduler_tries_groups_in_their_cluster_order() -> None:
    """No node at all: every attempt fails, and the attempts come in position order."""
    clock = Clock()
    scheduler = Scheduler(clock)
    everyone = frozenset(["default"])
    for name in ("left", "right"):
        scheduler.upsert_queue(QueuePolicy(name, namespaces=everyone))
    names = {"a": ("left", 0), "b": ("right", 5), "c": ("left", 7), "d": ("right", 0)}
    for index, (name, (queue, priority)) in enumerate(names.items()):
        scheduler.upsert_group(group(name, 2, queue=queue, priority=priority, created=index))
        for member in gang(name, 2):
            scheduler.upsert_pod(member)
    placed = scheduler.queue_positions()
    expected = sorted(placed, key=lambda key: placed[key].in_cluster)
    tried = []
    while (decision := scheduler.next_decision()) is not None:
        tried.append(decision.group)
    assert tried == expected
    assert [key.name for key in expected] == ["c", "a", "b", "d"]


orders = st.tuples(
    st.sampled_from(QUEUES),
    st.integers(min_value=-3, max_value=3),
    st.integers(min_value=0, max_value=5).map(float),
)
fates = st.sampled_from(["active", "backoff", "waiting"])


@given(
    groups=st.lists(st.tuples(orders, fates), max_size=30),
    shares=st.fixed_dictionaries({q: st.sampled_from([0.0, 0.5, 1.5]) for q in QUEUES}),
)
def test_positions_are_a_permutation_in_the_order_the_queue_pops(
    groups: list[tuple[tuple[str, int, float], str]], shares: dict[str, float]
) -> None:
    clock = Clock()
    queue = GroupQueue(clock, share=shares.__getitem__)
    keys = [GroupKey("ns", f"g{index}") for index in range(len(groups))]
    for key, ((name, priority, created), _) in zip(keys, groups, strict=True):
        queue.add(key, priority, created, queue=name)
    # Send each group to its pool: every group is popped once and told how it ended.
    fate = {key: f for key, (_, f) in zip(keys, groups, strict=True)}
    popped = []
    while (next_key := queue.pop()) is not None:
        popped.append(next_key)
    for key in popped:
        outcome = {"active": None, "backoff": Code.UNSCHEDULABLE, "waiting": Code.WAITING}
        code = outcome[fate[key]]
        if code is None:  # failed, then woken by an event about itself
            queue.done(key, Code.UNSCHEDULABLE)
            queue.on_event(ClusterEvent.GROUP_CHANGED, key)
        else:
            queue.done(key, code)

    placed = positions(queue.entries(), queue.share)

    assert set(placed) == set(keys)
    assert sorted(p.in_cluster for p in placed.values()) == list(range(1, len(keys) + 1))
    for name in QUEUES:
        mine = sorted(p.in_queue for p in placed.values() if p.queue == name)
        assert mine == list(range(1, len(mine) + 1))
    # Wake every pool: the loop then tries them exactly in cluster order.
    queue.on_event(ClusterEvent.QUEUE_CHANGED)
    tried = []
    while (next_key := queue.pop()) is not None:
        tried.append(next_key)
    assert tried == sorted(keys, key=lambda k: placed[k].in_cluster)


@given(
    running=st.fixed_dictionaries({q: st.integers(min_value=0, max_value=6) for q in QUEUES}),
    nominal=st.fixed_dictionaries({q: st.integers(min_value=1, max_value=8) for q in QUEUES}),
    waiting=st.lists(
        st.tuples(st.sampled_from(QUEUES), st.integers(min_value=0, max_value=2)), max_size=12
    ),
)
def test_with_queues_in_use_the_scheduler_tries_groups_in_cluster_order(
    running: dict[str, int], nominal: dict[str, int], waiting: list[tuple[str, int]]
) -> None:
    """Queues using different shares of their nominal; every waiting gang is too big for
    any node, so no attempt changes a share: the attempts come in position order."""
    clock = Clock()
    scheduler = Scheduler(clock)
    everyone = frozenset(["default"])
    for name in QUEUES:
        scheduler.upsert_queue(
            QueuePolicy(name, nominal={"cpu": nominal[name] * 1000}, namespaces=everyone)
        )
    scheduler.upsert_node(node("n1", cpu="32"))
    for name, count in running.items():
        if count:
            scheduler.upsert_group(group(f"run-{name}", 1, queue=name))
            for index in range(count):
                scheduler.upsert_pod(pod(f"run-{name}-{index}", group=f"run-{name}", node="n1"))
    for index, (name, priority) in enumerate(waiting):
        key = f"wait-{index}"
        scheduler.upsert_group(group(key, 2, queue=name, priority=priority, created=index % 3))
        for member in gang(key, 2, cpu="64"):
            scheduler.upsert_pod(member)

    placed = scheduler.queue_positions()
    tried = []
    while (decision := scheduler.next_decision()) is not None:
        assert not decision.bindings
        tried.append(decision.group)
    assert tried == sorted(placed, key=lambda key: placed[key].in_cluster)
    assert sorted(p.in_cluster for p in placed.values()) == list(range(1, len(placed) + 1))
