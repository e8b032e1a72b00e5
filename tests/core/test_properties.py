"""Properties of the core over random clusters and workloads (hypothesis).

1. No node is ever over-committed on any resource by what we place.
2. No group ends a decision with fewer than minMember bound, unless it had
   bound members before the decision.
3. Decisions depend on the input only: not on the order nodes, groups and
   pods were fed in.
4. Two groups that each need 60% of the cluster never both end partially placed.
5. A group is never placed while a group ahead of it in queue order that fits
   waits.
6. The vector scores equal the plain ones, bit for bit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.core import Decision, GroupKey, GroupPolicy, Scheduler, SchedulerSettings, Strategy
from coscheduler.core.scoring import score, scores
from tests.builders import Clock, group, node, pod


@dataclass
class World:
    nodes: list[NodeInfo]
    groups: list[GroupPolicy]
    pods: list[PodInfo]
    foreign: list[PodInfo] = field(default_factory=list)


@st.composite
def worlds(draw: Any) -> World:
    node_count = draw(st.integers(1, 6))
    nodes = []
    for i in range(node_count):
        nodes.append(
            node(
                f"n{i}",
                cpu=str(draw(st.integers(1, 8))),
                memory=f"{draw(st.integers(1, 16))}Gi",
                pods=str(draw(st.integers(1, 6))),
                extra={"nvidia.com/gpu": str(draw(st.integers(0, 2)))},
                labels={"zone": draw(st.sampled_from(["a", "b"]))},
                taints=[("gpu", "true", "NoSchedule")]
                if draw(st.booleans()) and i % 3 == 0
                else [],
            )
        )
    groups, pods = [], []
    for g in range(draw(st.integers(1, 4))):
        name = f"g{g}"
        size = draw(st.integers(1, 6))
        min_member = draw(st.integers(1, size + 1))
        groups.append(
            group(
                name,
                min_member,
                priority=draw(st.sampled_from([None, 0, 5])),
                created=float(draw(st.integers(0, 3))),
            )
        )
        cpu = draw(st.sampled_from(["500m", "1", "2", "3"]))
        gpu = draw(st.sampled_from(["0", "0", "1"]))
        selector = draw(st.sampled_from([None, None, {"zone": "a"}]))
        tolerate = draw(st.booleans())
        for i in range(size):
            pods.append(
                pod(
                    f"{name}-{i}",
                    group=name,
                    cpu=cpu,
                    memory=f"{draw(st.integers(1, 4))}Gi",
                    requests={"nvidia.com/gpu": gpu},
                    node_selector=selector,
                    priority=draw(st.sampled_from([0, 1])),
                    created=draw(st.integers(0, 5)),
                    tolerations=[{"key": "gpu", "operator": "Exists"}] if tolerate else [],
                )
            )
    for i in range(draw(st.integers(0, 3))):
        pods.append(pod(f"lone-{i}", cpu=draw(st.sampled_from(["1", "2"]))))
    return World(nodes, groups, pods)


def feed(
    world: World, shuffle: random.Random | None = None, strategy: Strategy = Strategy.MOST_ALLOCATED
) -> Scheduler:
    scheduler = Scheduler(Clock(), SchedulerSettings(strategy=strategy))
    items: list[Any] = [*world.nodes, *world.groups, *world.pods]
    if shuffle is not None:
        shuffle.shuffle(items)
    for item in items:
        if isinstance(item, NodeInfo):
            scheduler.upsert_node(item)
        elif isinstance(item, GroupPolicy):
            scheduler.upsert_group(item)
        else:
            scheduler.upsert_pod(item)
    return scheduler


def drain(scheduler: Scheduler, limit: int = 200) -> list[Decision]:
    decisions: list[Decision] = []
    while (decision := scheduler.next_decision()) is not None and len(decisions) < limit:
        decisions.append(decision)
    return decisions


def assert_not_overcommitted(scheduler: Scheduler) -> None:
    for n in scheduler.snapshot.nodes():
        for resource, amount in scheduler.snapshot.allocated(n.name).items():
            assert amount <= n.allocatable.get(resource, 0), (n.name, resource)


@given(worlds(), st.sampled_from(list(Strategy)))
def test_no_node_is_overcommitted(world: World, strategy: Strategy) -> None:
    scheduler = feed(world, strategy=strategy)
    drain(scheduler)
    assert_not_overcommitted(scheduler)


@given(worlds())
def test_gangs_are_placed_whole_or_not_at_all(world: World) -> None:
    scheduler = feed(world)
    minimum = {p.key: p.min_member for p in world.groups}
    while True:
        before = {
            key: len(scheduler.members(key)[1]) for key in {GroupKey.of_pod(p) for p in world.pods}
        }
        decision = scheduler.next_decision()
        if decision is None:
            break
        key = decision.group
        after = len(scheduler.members(key)[1])
        needed = minimum.get(key, 1)
        if before[key] == 0:
            assert after == 0 or after >= needed, (key, after, needed)
        assert decision.ok == bool(decision.bindings) or decision.admitted


@given(worlds(), st.randoms(use_true_random=False))
def test_decisions_do_not_depend_on_feeding_order(world: World, rng: random.Random) -> None:
    def outcome(scheduler: Scheduler) -> list[tuple[str, str, tuple[tuple[str, str], ...]]]:
        return [
            (str(d.group), d.status.message, tuple((b.name, b.node) for b in d.bindings))
            for d in drain(scheduler)
        ]

    assert outcome(feed(world)) == outcome(feed(world, shuffle=rng))


@given(st.integers(2, 8), st.integers(1, 4), st.sampled_from(list(Strategy)))
def test_two_sixty_percent_gangs_never_both_partial(
    nodes: int, per_node: int, strategy: Strategy
) -> None:
    capacity = nodes * per_node
    need = capacity * 6 // 10 + 1
    world = World(
        nodes=[node(f"n{i}", cpu=str(per_node)) for i in range(nodes)],
        groups=[group("a", need), group("b", need)],
        pods=[pod(f"{g}-{i}", group=g, cpu="1") for g in "ab" for i in range(need)],
    )
    scheduler = feed(world, strategy=strategy)
    drain(scheduler)
    bound = [len(scheduler.members(GroupKey("default", g))[1]) for g in "ab"]
    assert sorted(bound) in ([0, need], [0, 0]) or need <= capacity // 2
    assert_not_overcommitted(scheduler)


@given(worlds())
def test_no_group_jumps_a_higher_one_that_fits(world: World) -> None:
    scheduler = feed(world)
    while True:
        waiting = {}
        for key in {GroupKey.of_pod(p) for p in world.pods}:
            pending, bound = scheduler.members(key)
            policy = scheduler.policy(key)
            if not pending or policy is None:
                continue
            priority = (
                policy.priority if policy.priority is not None else max(p.priority for p in pending)
            )
            order = (-priority, policy.created, key.namespace, key.name, key.kind)
            attempt = scheduler.try_group(key)
            waiting[key] = (order, attempt.ok and bool(attempt.bindings) and not bound)
        decision = scheduler.next_decision()
        if decision is None:
            break
        if not decision.bindings or decision.group not in waiting:
            continue
        mine = waiting[decision.group][0]
        for key, (order, fits) in waiting.items():
            if key != decision.group and order < mine:
                assert not fits, f"{decision.group} placed while {key} fits and is ahead"


@given(
    st.lists(st.tuples(st.integers(1, 2**40), st.integers(0, 2**40)), min_size=1, max_size=20),
    st.integers(0, 2**20),
    st.sampled_from(list(Strategy)),
)
def test_vector_and_plain_scores_agree(
    rows: list[tuple[int, int]], request: int, strategy: Strategy
) -> None:
    allocatable = np.array([[a, a] for a, _ in rows], dtype=np.int64)
    used = np.array([[u, u // 2] for _, u in rows], dtype=np.int64)
    scored = [(0, 1.0), (1, 2.0)]
    wanted = {0: request, 1: request}
    vector = scores(strategy, allocatable, used, wanted, scored)
    for i in range(len(rows)):
        assert vector[i] == score(
            strategy, allocatable[i].tolist(), used[i].tolist(), wanted, scored
        )
