"""Lending limits: what a queue keeps of its nominal is never held by borrowers (unit and
hypothesis property tests)."""

from __future__ import annotations

import dataclasses
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from coscheduler.api.reasons import Reason
from coscheduler.core import GroupKey, QueuePolicy, Quotas, Scheduler
from coscheduler.core.preemption import Mode, PreemptionSettings
from coscheduler.core.settings import SchedulerSettings
from tests.builders import Clock, gang, group, node, pod

EVERYONE = frozenset({"default"})


def cpu(cores: float) -> dict[str, int]:
    return {"cpu": int(cores * 1000)}


def lender(name: str, nominal: float, lends: float | None, **fields: object) -> QueuePolicy:
    return QueuePolicy(
        name,
        nominal=cpu(nominal),
        lending_limit={} if lends is None else cpu(lends),
        namespaces=EVERYONE,
        **fields,  # type: ignore[arg-type]
    )


def cluster(*nodes_cpu: int, preemption: bool = False, clock: Clock | None = None) -> Scheduler:
    settings = SchedulerSettings(
        preemption=PreemptionSettings(mode=Mode.ON if preemption else Mode.OFF)
    )
    scheduler = Scheduler(clock or Clock(), settings)
    for i, cores in enumerate(nodes_cpu):
        scheduler.upsert_node(node(f"n{i}", cpu=str(cores)))
    return scheduler


def submit(scheduler: Scheduler, name: str, size: int, queue: str, created: int = 0) -> None:
    scheduler.upsert_group(group(name, size, queue=queue, created=created))
    for member in gang(name, size, created=created):
        scheduler.upsert_pod(member)


def bound(scheduler: Scheduler, name: str) -> int:
    return len(scheduler.members(GroupKey("default", name))[1])


def test_a_borrower_takes_only_what_the_lender_lends() -> None:
    # 8 cpu: a lends 2 of its nominal 8, so b (no nominal) may borrow 2 and no more.
    scheduler = cluster(8)
    scheduler.upsert_queue(lender("a", 8, 2))
    scheduler.upsert_queue(lender("b", 0, None))
    submit(scheduler, "big", 4, "b")
    decision = scheduler.next_decision()
    assert decision is not None
    assert not decision.bindings
    assert decision.status.reason is Reason.QUEUE_CANNOT_BORROW
    assert "kept by their lendingLimit: a (cpu 6)" in decision.status.message
    submit(scheduler, "small", 2, "b", created=1)
    while scheduler.next_decision() is not None:
        pass
    assert bound(scheduler, "small") == 2
    assert bound(scheduler, "big") == 0
    # a's kept 6 cpu stay free for its own gang.
    submit(scheduler, "own", 6, "a", created=2)
    while scheduler.next_decision() is not None:
        pass
    assert bound(scheduler, "own") == 6


def test_without_a_lending_limit_the_whole_unused_nominal_is_lent() -> None:
    scheduler = cluster(8)
    scheduler.upsert_queue(lender("a", 8, None))
    scheduler.upsert_queue(lender("b", 0, None))
    submit(scheduler, "big", 8, "b")
    decision = scheduler.next_decision()
    assert decision is not None
    assert len(decision.bindings) == 8


def test_a_sibling_keeps_its_part_inside_the_parent() -> None:
    scheduler = cluster(8)
    scheduler.upsert_queue(QueuePolicy("org", nominal=cpu(8), namespaces=EVERYONE))
    scheduler.upsert_queue(lender("a", 6, 1, parent="org"))
    scheduler.upsert_queue(lender("b", 2, None, parent="org"))
    submit(scheduler, "wide", 4, "b")  # 2 of its own, 1 lent by a, 1 more would be a's kept
    decision = scheduler.next_decision()
    assert decision is not None
    assert not decision.bindings
    assert decision.status.reason is Reason.QUEUE_CANNOT_BORROW
    submit(scheduler, "fits", 3, "b", created=1)
    while scheduler.next_decision() is not None:
        pass
    assert bound(scheduler, "fits") == 3


def test_an_entitled_queue_whose_lent_quota_is_in_use_does_not_take_anothers_kept_room() -> None:
    # c lends all of its 4, a keeps all of its 4; b borrowed c's 4. c's own group then must
    # not land in a's kept room: it waits for reclaim (here off), told why.
    scheduler = cluster(8)
    scheduler.upsert_queue(lender("a", 4, 0))
    scheduler.upsert_queue(lender("c", 4, 4))
    scheduler.upsert_queue(lender("b", 0, None))
    submit(scheduler, "borrower", 4, "b")
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.ok
    submit(scheduler, "lender", 4, "c", created=1)
    decision = scheduler.next_decision()
    assert decision is not None
    assert not decision.bindings
    assert decision.status.reason is Reason.QUEUE_CANNOT_BORROW
    assert decision.status.message == (
        "queue c needs cpu 4 of its nominal quota, lent and in use; of cpu 4 idle, cpu 4 is "
        "held for queues under their nominal with groups waiting, or kept by their "
        "lendingLimit: a (cpu 4); quota a queue lent comes back by reclaim"
    )


def test_reclaim_brings_lent_quota_back_and_leaves_kept_room_alone() -> None:
    clock = Clock()
    scheduler = cluster(8, preemption=True, clock=clock)
    scheduler.upsert_queue(lender("a", 4, 0))
    scheduler.upsert_queue(lender("c", 4, 4))
    scheduler.upsert_queue(lender("b", 0, None))
    submit(scheduler, "borrower", 4, "b")
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.ok
    for binding in decision.bindings:  # the binding seen: the borrower runs
        scheduler.upsert_pod(
            pod(binding.name, group="borrower", node=binding.node, phase="Running")
        )
    clock.advance(600)  # past the time a newly placed gang is spared
    submit(scheduler, "lender", 4, "c", created=1)
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.preemption is not None
    plan = decision.preemption.plan
    # The borrower is the victim: c takes back what it lent, not a's kept room.
    assert [victim.group.key.name for victim in plan.victims] == ["borrower"]


def test_the_report_carries_the_lending_limit() -> None:
    quotas = Quotas()
    quotas.upsert_queue(lender("a", 8, 2))
    assert quotas.report("a").lending_limit == cpu(2)


# -- properties ----------------------------------------------------------------------------


@st.composite
def lending_cluster(draw: st.DrawFn) -> tuple[list[int], list[QueuePolicy]]:
    """Nodes, and queues whose nominals fit the cluster (every one may set a lending limit),
    and a queue ``b`` with no nominal that only borrows."""
    nodes = draw(st.lists(st.integers(4, 8), min_size=1, max_size=3))
    capacity = sum(nodes)
    queues = []
    left = capacity
    for i in range(draw(st.integers(1, 3))):
        nominal = draw(st.integers(0, left))
        left -= nominal
        lends = draw(st.one_of(st.none(), st.integers(0, nominal)))
        queues.append(lender(f"q{i}", nominal, lends))
    if draw(st.booleans()):  # the lenders as children of one parent, the borrower beside it
        total = sum(q.nominal.get("cpu", 0) for q in queues) // 1000
        queues = [dataclasses.replace(q, parent="org") for q in queues]
        queues.append(lender("org", total, draw(st.one_of(st.none(), st.integers(0, total)))))
    queues.append(lender("b", 0, None))
    return nodes, queues


def kept_unused(quotas: Quotas, queue: QueuePolicy, queues: list[QueuePolicy]) -> int:
    """What the queue and the queues below it keep of their nominal and do not use now."""
    own = max(0, queue.kept("cpu") - quotas.usage(queue.name).get("cpu", 0))
    children = sum(kept_unused(quotas, q, queues) for q in queues if q.parent == queue.name)
    return max(own, children)


def check_lending(scheduler: Scheduler, queues: list[QueuePolicy], capacity: int) -> None:
    quotas = scheduler.quotas
    free = scheduler.snapshot.free_capacity().get("cpu", 0)
    tops = [q for q in queues if q.parent is None]
    kept = {q.name: kept_unused(quotas, q, queues) for q in queues}
    # What every queue keeps and does not use is still free: no borrower holds it ...
    assert free >= sum(kept[q.name] for q in tops)
    # ... so all that is borrowed at the top fits in the idle capacity and what the top
    # queues lend now (their unused nominal, less what they keep).
    borrowed = sum(
        max(0, quotas.usage(q.name).get("cpu", 0) - q.nominal.get("cpu", 0)) for q in tops
    )
    idle = capacity - sum(q.nominal.get("cpu", 0) for q in tops)
    lent = sum(
        max(0, q.nominal.get("cpu", 0) - quotas.usage(q.name).get("cpu", 0)) - kept[q.name]
        for q in tops
    )
    assert borrowed <= idle + lent
    # A queue below what it keeps is admitted up to it, and the room is there.
    for queue in queues:
        room = max(0, queue.kept("cpu") - quotas.usage(queue.name).get("cpu", 0))
        if room and queue.name != "org":
            assert quotas.admit(queue.name, {"cpu": room}, scheduler.snapshot.free_capacity) is None
            assert free >= room


@settings(max_examples=60)
@given(lending_cluster(), st.integers(0, 2**16))
def test_borrowers_never_hold_kept_room_and_borrow_at_most_what_is_lent(
    setup: tuple[list[int], list[QueuePolicy]], seed: int
) -> None:
    nodes, queues = setup
    rng = random.Random(seed)
    clock = Clock()
    scheduler = Scheduler(clock)
    for i, cores in enumerate(nodes):
        scheduler.upsert_node(node(f"n{i}", cpu=str(cores)))
    for queue in queues:
        scheduler.upsert_queue(queue)
    capacity = sum(nodes) * 1000
    running: list[tuple[str, str, str]] = []
    for step in range(12):
        for _ in range(rng.randint(0, 3)):
            name = f"g{step}-{rng.randrange(10**6)}"
            size = rng.randint(1, 4)
            leaf = rng.choice([q for q in queues if q.name != "org"]).name
            scheduler.upsert_group(group(name, size, queue=leaf, created=step))
            for member in gang(name, size, created=step):
                scheduler.upsert_pod(member)
        while (decision := scheduler.next_decision()) is not None:
            for binding in decision.bindings:
                running.append((decision.group.name, binding.name, binding.node))
            check_lending(scheduler, queues, capacity)
        if running and rng.random() < 0.6:
            finished = rng.choice(running)[0]
            for entry in [r for r in running if r[0] == finished]:
                scheduler.upsert_pod(
                    pod(entry[1], group=finished, node=entry[2], phase="Succeeded")
                )
                running.remove(entry)
            check_lending(scheduler, queues, capacity)
        clock.advance(11)
