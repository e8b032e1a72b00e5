"""Properties of queues (hypothesis): caps hold, gates hold, gangs whole, work conserved,
order of feeding irrelevant, and backlogged queues converge to their weighted shares."""

from __future__ import annotations

import random
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from coscheduler.api.podgroup import DEFAULT_QUEUE
from coscheduler.core import GroupKey, QueuePolicy, Quotas, Scheduler
from tests.builders import Clock, gang, group, node, pod

NAMESPACES = ("ns-a", "ns-b")
MIXED = (1, 2, 4)


@dataclass(frozen=True)
class GroupSpec:
    name: str
    queue: str
    namespace: str
    size: int
    min_member: int
    cpu: int
    priority: int


@st.composite
def queue_policies(draw: st.DrawFn) -> list[QueuePolicy]:
    policies = []
    for i in range(draw(st.integers(1, 3))):
        nominal = draw(st.one_of(st.none(), st.integers(0, 16)))
        cap = draw(st.one_of(st.none(), st.integers(nominal or 0, 24)))
        policies.append(
            QueuePolicy(
                f"q{i}",
                nominal={} if nominal is None else {"cpu": nominal * 1000},
                max={} if cap is None else {"cpu": cap * 1000},
                weight=draw(st.integers(1, 4)),
                open=draw(st.booleans()),
                namespaces=frozenset(draw(st.sets(st.sampled_from(NAMESPACES)))),
            )
        )
    return policies


@st.composite
def group_specs(draw: st.DrawFn) -> list[GroupSpec]:
    specs = []
    for i in range(draw(st.integers(1, 8))):
        size = draw(st.integers(1, 4))
        specs.append(
            GroupSpec(
                name=f"g{i}",
                queue=draw(st.sampled_from(["q0", "q1", "q2", DEFAULT_QUEUE, "missing"])),
                namespace=draw(st.sampled_from(NAMESPACES)),
                size=size,
                min_member=draw(st.integers(1, size)),
                cpu=draw(st.integers(1, 4)),
                priority=draw(st.integers(0, 2)),
            )
        )
    return specs


def build(
    nodes_cpu: list[int], queues: list[QueuePolicy], specs: list[GroupSpec], reverse: bool = False
) -> tuple[Scheduler, Clock]:
    clock = Clock()
    scheduler = Scheduler(clock)
    for i, cpu in enumerate(nodes_cpu):
        scheduler.upsert_node(node(f"n{i}", cpu=str(cpu)))
    for policy in reversed(queues) if reverse else queues:
        scheduler.upsert_queue(policy)
    for spec in reversed(specs) if reverse else specs:
        scheduler.upsert_group(
            group(
                spec.name,
                spec.min_member,
                queue=spec.queue,
                namespace=spec.namespace,
                priority=spec.priority,
            )
        )
        for member in gang(spec.name, spec.size, namespace=spec.namespace, cpu=str(spec.cpu)):
            scheduler.upsert_pod(member)
    return scheduler, clock


def run_to_quiet(scheduler: Scheduler, clock: Clock, check: bool = True) -> None:
    """Decide until nothing is ready, letting backoffs expire, checking after each decision."""
    for _ in range(6):
        while (decision := scheduler.next_decision()) is not None:
            if check:
                if decision.bindings:
                    queue = scheduler.queue_name(decision.group)
                    assert scheduler.quotas.gate(queue, decision.group.namespace) is None
                check_invariants(scheduler)
        clock.advance(61)


def usage_by_queue(scheduler: Scheduler) -> dict[str, int]:
    """Bound cpu per queue, counted from the members (not from the ledger)."""
    usage: dict[str, int] = {}
    for key in list(scheduler.groups()):
        queue = scheduler.queue_name(key)
        for member in scheduler.members(key)[1]:
            usage[queue] = usage.get(queue, 0) + member.requests.get("cpu", 0)
    return usage


def check_invariants(scheduler: Scheduler) -> None:
    usage = usage_by_queue(scheduler)
    for name, cpu in usage.items():
        assert scheduler.quotas.usage(name).get("cpu", 0) == cpu
        queue = scheduler.quotas.policy(name)
        assert queue is not None
        if "cpu" in queue.max:
            assert cpu <= queue.max["cpu"], f"queue {name} over its max"
    for key in list(scheduler.groups()):
        policy = scheduler.policy(key)
        bound = len(scheduler.members(key)[1])
        if policy is not None:
            assert bound == 0 or bound >= policy.min_member, f"{key} partially bound"


nodes_strategy = st.lists(st.integers(4, 16), min_size=1, max_size=4)


@given(nodes_strategy, queue_policies(), group_specs())
def test_caps_gates_and_whole_gangs_hold_and_no_fitting_group_is_left_waiting(
    nodes_cpu: list[int], queues: list[QueuePolicy], specs: list[GroupSpec]
) -> None:
    scheduler, clock = build(nodes_cpu, queues, specs)
    run_to_quiet(scheduler, clock)
    # Work conservation: a group still waiting is held by its queue, or does not fit.
    for spec in specs:
        key = GroupKey(spec.namespace, spec.name)
        pending, bound = scheduler.members(key)
        if not pending or bound:
            continue
        queue = scheduler.queue_name(key)
        if scheduler.quotas.gate(queue, key.namespace) is not None:
            continue
        trial = scheduler.try_group(key)
        if not trial.ok:
            continue
        need = {"cpu": spec.cpu * 1000 * spec.min_member, "pods": spec.min_member}
        refusal = scheduler.quotas.admit(queue, need, scheduler.snapshot.free_capacity)
        assert refusal is not None, f"{key} fits and waits"


@given(nodes_strategy, queue_policies(), group_specs())
def test_decisions_do_not_depend_on_feeding_order(
    nodes_cpu: list[int], queues: list[QueuePolicy], specs: list[GroupSpec]
) -> None:
    placed = []
    for reverse in (False, True):
        scheduler, clock = build(nodes_cpu, queues, specs, reverse=reverse)
        run_to_quiet(scheduler, clock, check=False)
        placed.append(
            sorted(
                spec.name
                for spec in specs
                if scheduler.members(GroupKey(spec.namespace, spec.name))[1]
            )
        )
    assert placed[0] == placed[1]


def long_run(
    weights: tuple[int, ...], seed: int, steps: int = 400, sizes: tuple[int, ...] = MIXED
) -> list[float]:
    """Backlogged queues of gangs of ``sizes`` with random completions; each queue's mean share.

    On 64 cpu, gangs of 1, 2 and 4 cpu: when the queue furthest below its share
    cannot use the capacity a finished gang freed (its next gang is bigger), the
    others take it (work conservation), which moves the shares a few points
    towards equal; gangs of one land on the weighted share.
    """
    rng = random.Random(seed)
    clock = Clock()
    scheduler = Scheduler(clock)
    for i in range(16):
        scheduler.upsert_node(node(f"n{i}", cpu="4"))
    names = [f"t{i}" for i in range(len(weights))]
    for name, weight in zip(names, weights, strict=True):
        scheduler.upsert_queue(QueuePolicy(name, weight=weight, namespaces=frozenset({"default"})))
    serial = 0
    running: list[tuple[str, str, str]] = []  # (group, pod name, node)
    shares = [0.0] * len(names)
    for step in range(steps):
        for name in names:  # keep every queue backlogged
            while sum(1 for k in scheduler.queue._order if k.name.startswith(name)) < 4:
                size = rng.choice(sizes)
                gname = f"{name}-g{serial}"
                serial += 1
                scheduler.upsert_group(group(gname, size, queue=name, created=serial))
                for member in gang(gname, size, created=serial % 3600):
                    scheduler.upsert_pod(member)
        while (decision := scheduler.next_decision()) is not None:
            for binding in decision.bindings:
                running.append((decision.group.name, binding.name, binding.node))
        if step >= steps // 4:
            total = sum(scheduler.quotas.usage(name).get("cpu", 0) for name in names)
            for i, name in enumerate(names):
                shares[i] += scheduler.quotas.usage(name).get("cpu", 0) / max(total, 1)
        # A random running gang finishes whole.
        if running:
            gname = rng.choice(running)[0]
            for entry in [r for r in running if r[0] == gname]:
                scheduler.upsert_pod(pod(entry[1], group=gname, node=entry[2], phase="Succeeded"))
                running.remove(entry)
        clock.advance(1)
    measured = steps - steps // 4
    return [share / measured for share in shares]


def test_two_backlogged_queues_of_weights_one_and_three_share_one_to_three() -> None:
    light, heavy = long_run((1, 3), seed=7, sizes=(1,))
    assert abs(light - 0.25) < 0.02
    assert abs(heavy - 0.75) < 0.02
    light, heavy = long_run((1, 3), seed=7)
    assert abs(light - 0.25) < 0.08


@settings(max_examples=15)
@given(st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)), st.integers(0, 99))
def test_backlogged_queues_converge_to_their_weighted_fair_share(
    weights: tuple[int, int, int], seed: int
) -> None:
    """Gangs of one, so that packing cannot move the shares: what is left is the queue order.

    With mixed sizes the shares drift towards equal by an amount that depends
    on which gangs the random completions free room for (up to 0.11 from the
    weighted share in 240 random runs of 300 steps, so no tolerance there is
    both tight and true); the example test above shows that drift. With gangs of
    one, 100 random runs of 200 steps stayed within 0.013 (of 300 steps, 60 within
    0.011): two thirds of the steps hold the same tolerance.
    """
    shares = long_run(weights, seed, steps=200, sizes=(1,))
    for share, weight in zip(shares, weights, strict=True):
        assert abs(share - weight / sum(weights)) < 0.03


@given(
    st.integers(0, 16),
    st.integers(0, 16),
    st.integers(0, 32),
    st.integers(0, 32),
    st.integers(0, 32),
)
def test_reclaim_never_takes_a_lender_below_its_nominal_nor_gives_to_a_queue_at_its_own(
    taker_nominal: int, lender_nominal: int, taker_used: int, lender_used: int, removed: int
) -> None:
    quotas = Quotas()
    everyone = frozenset({"default"})
    quotas.upsert_queue(QueuePolicy("t", nominal={"cpu": taker_nominal}, namespaces=everyone))
    quotas.upsert_queue(QueuePolicy("l", nominal={"cpu": lender_nominal}, namespaces=everyone))
    quotas.charge("t", {"cpu": taker_used})
    quotas.charge("l", {"cpu": lender_used})
    if quotas.may_reclaim("t", "l", {"cpu": removed}):
        assert lender_used - removed >= lender_nominal
        assert lender_used > lender_nominal  # it had borrowed
        assert taker_used < taker_nominal
