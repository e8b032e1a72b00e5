"""The victim search (core/preemption): cases a person can follow, then properties.

Properties over random clusters (hypothesis):

1. Never a victim of equal or higher priority.
2. Victims are whole groups or members above a gang's minimum only: no
   gang is left below minMember with members running.
3. After the plan, the whole preemptor fits (the planner admits it).
4. Minimality: no chosen victim can be spared.
5. No plan means no eviction, and then not even every allowed victim would do.
6. The snapshot is unchanged by a search.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.pod import PodInfo
from coscheduler.core.group import KIND_POD, GroupKey
from coscheduler.core.planner import plan
from coscheduler.core.preemption import PreemptionPlan, Preemptor, find_plan
from coscheduler.core.snapshot import Snapshot
from coscheduler.core.victims import RunningGroup, Victim
from tests.builders import group, node, pod

NOW = 10_000.0


def running_pod(name: str, node_name: str, *, started: float = 0.0, **fields: Any) -> PodInfo:
    placed = pod(name, node=node_name, phase="Running", **fields)
    return placed.__class__(**{**_fields(placed), "started": started})


def _fields(info: PodInfo) -> dict[str, Any]:
    return {name: getattr(info, name) for name in info.__dataclass_fields__}


def gang(
    name: str,
    nodes: Sequence[str],
    *,
    min_member: int,
    priority: int,
    cpu: str = "4",
    started: float = 0.0,
) -> RunningGroup:
    pods = tuple(
        running_pod(f"{name}-{i}", n, group=name, cpu=cpu, priority=priority, started=started)
        for i, n in enumerate(nodes)
    )
    return RunningGroup(GroupKey("default", name), pods, min_member, priority)


def cluster(nodes: int, cpu: str = "8", *running: RunningGroup) -> Snapshot:
    snapshot = Snapshot()
    for i in range(nodes):
        snapshot.upsert_node(node(f"n{i}", cpu=cpu))
    for running_group in running:
        for member in running_group.pods:
            snapshot.update_pod(member)
    return snapshot


def preemptor(size: int, *, priority: int = 100, cpu: str = "4", **fields: Any) -> Preemptor:
    policy = group("urgent", size, priority=priority)
    pending = [
        pod(f"urgent-{i}", group="urgent", cpu=cpu, priority=priority, **fields)
        for i in range(size)
    ]
    return Preemptor(policy, pending, [], priority)


def evicted(found: PreemptionPlan) -> set[str]:
    return {member.name for member in found.pods}


# -- cases -----------------------------------------------------------------


def test_a_whole_low_gang_makes_room_and_the_higher_one_is_left_alone() -> None:
    low = gang("low", ["n0", "n0", "n1", "n1"], min_member=4, priority=1)
    high = gang("high", ["n2", "n2", "n3", "n3"], min_member=4, priority=500)
    snapshot = cluster(4, "8", low, high)
    found = find_plan(snapshot, preemptor(4), [low, high], NOW)
    assert found.found
    assert evicted(found) == {"low-0", "low-1", "low-2", "low-3"}
    assert {b.node for b in found.nominated} == {"n0", "n1"}
    assert found.summary == "would preempt default/low (4 pods, priority 1, running 167 min)"


def test_members_above_the_minimum_go_before_any_gang_is_broken() -> None:
    elastic = gang("elastic", ["n0", "n0", "n1", "n1"], min_member=2, priority=1)
    cheap = gang("cheap", ["n2", "n2", "n3", "n3"], min_member=4, priority=0)
    snapshot = cluster(4, "8", elastic, cheap)
    found = find_plan(snapshot, preemptor(2), [elastic, cheap], NOW)
    assert found.cost is not None
    assert found.cost.gangs_broken == 0
    assert len(found.pods) == 2
    assert {member.name[:-2] for member in found.pods} == {"elastic"}
    assert "2 pods of default/elastic above its minMember" in found.summary


def test_a_group_disrupted_only_whole_goes_whole_or_not_at_all() -> None:
    # disruptionMode all: the two members above its minimum may not go alone.
    elastic = gang("elastic", ["n0", "n0", "n1", "n1"], min_member=2, priority=1)
    whole_only = RunningGroup(elastic.key, elastic.pods, 2, 1, whole_only=True)
    snapshot = cluster(2, "8", whole_only)
    found = find_plan(snapshot, preemptor(2), [whole_only], NOW)
    assert found.cost is not None
    assert found.cost.gangs_broken == 1
    assert evicted(found) == {f"elastic-{i}" for i in range(4)}


def test_a_group_whose_preemption_policy_is_never_waits() -> None:
    low = gang("low", ["n0", "n0"], min_member=2, priority=1)
    snapshot = cluster(1, "8", low)
    never = preemptor(2)
    never = Preemptor(
        dataclasses.replace(never.policy, no_preemption="its group's preemptionPolicy is Never"),
        never.pending,
        [],
        100,
    )
    found = find_plan(snapshot, never, [low], NOW)
    assert not found.found
    assert "preemptionPolicy is Never" in found.summary


def test_equal_priority_is_never_a_victim_and_no_plan_evicts_nothing() -> None:
    peer = gang("peer", ["n0", "n0", "n1", "n1"], min_member=4, priority=100)
    snapshot = cluster(2, "8", peer)
    found = find_plan(snapshot, preemptor(2), [peer], NOW)
    assert not found.found
    assert found.pods == ()
    assert found.summary == "no pod it may preempt runs where it could go"


def test_fewest_gangs_broken_beats_lower_priority() -> None:
    # Two small gangs of priority 0 would do; one bigger gang of priority 5 does it alone.
    small_a = gang("small-a", ["n0"], min_member=1, priority=0)
    small_b = gang("small-b", ["n1"], min_member=1, priority=0)
    big = gang("big", ["n2", "n2", "n3", "n3"], min_member=4, priority=5)
    snapshot = cluster(4, "4", small_a, small_b, big)
    found = find_plan(snapshot, preemptor(2, cpu="4"), [small_a, small_b, big], NOW)
    assert found.cost is not None
    assert found.cost.gangs_broken == 1


def test_a_group_within_its_minimum_run_time_is_spared() -> None:
    fresh = gang("fresh", ["n0", "n0"], min_member=2, priority=0)
    fresh = RunningGroup(fresh.key, fresh.pods, 2, 0, protected_until=NOW + 60)
    old = gang("old", ["n1", "n1"], min_member=2, priority=0)
    snapshot = cluster(2, "8", fresh, old)
    found = find_plan(snapshot, preemptor(2), [fresh, old], NOW)
    assert evicted(found) == {"old-0", "old-1"}


def test_a_preemptor_whose_policy_is_never_waits() -> None:
    low = gang("low", ["n0", "n0"], min_member=2, priority=0)
    snapshot = cluster(1, "8", low)
    waiting = preemptor(2, spec_extra={"preemptionPolicy": "Never"})
    found = find_plan(snapshot, waiting, [low], NOW)
    assert not found.found
    assert "preemptionPolicy is Never" in found.summary


def test_a_caller_rule_can_refuse_a_victim() -> None:
    low = gang("low", ["n0", "n0"], min_member=2, priority=0)
    other = gang("other", ["n1", "n1"], min_member=2, priority=3)
    snapshot = cluster(2, "8", low, other)

    def spare_low(victim: Victim, chosen: Sequence[Victim]) -> bool:
        return victim.group.key.name != "low" and victim.group.priority < 100

    found = find_plan(snapshot, preemptor(2), [low, other], NOW, rule=spare_low)
    assert evicted(found) == {"other-0", "other-1"}


def test_hopeless_cases_cost_no_trial() -> None:
    low = gang("low", ["n0", "n0"], min_member=2, priority=0)
    snapshot = cluster(1, "8", low)
    found = find_plan(snapshot, preemptor(3), [low], NOW)
    assert not found.found
    assert found.trials == 0
    assert "too little cpu" in found.summary


def test_the_budget_returns_the_best_sufficient_plan_so_far() -> None:
    lone = [
        RunningGroup(
            GroupKey("default", f"p{i}", KIND_POD),
            (running_pod(f"p{i}", f"n{i}", cpu="4", priority=0),),
            1,
            0,
            gang=False,
        )
        for i in range(8)
    ]
    snapshot = cluster(8, "4", *lone)
    found = find_plan(snapshot, preemptor(4), lone, NOW, budget=1)
    assert found.trials == 1
    assert found.exhausted
    assert found.found
    assert _fits(snapshot, preemptor(4), found.victims)


def test_lone_pods_of_other_schedulers_go_one_by_one() -> None:
    lone = [
        RunningGroup(
            GroupKey("default", f"p{i}", KIND_POD),
            (running_pod(f"p{i}", f"n{i % 2}", cpu="2", priority=0, scheduler="other"),),
            1,
            0,
            gang=False,
        )
        for i in range(8)
    ]
    snapshot = cluster(2, "8", *lone)
    found = find_plan(snapshot, preemptor(1, cpu="4"), lone, NOW)
    assert len(found.pods) == 2
    assert found.cost is not None
    assert found.cost.gangs_broken == 0


# -- properties ------------------------------------------------------------


@dataclass
class World:
    snapshot: Snapshot
    running: list[RunningGroup]
    preemptor: Preemptor


@st.composite
def worlds(draw: Any) -> World:
    nodes = draw(st.integers(1, 5))
    snapshot = Snapshot()
    for i in range(nodes):
        snapshot.upsert_node(node(f"n{i}", cpu=str(draw(st.integers(2, 8)))))
    running: list[RunningGroup] = []
    for g in range(draw(st.integers(1, 8))):
        size = draw(st.integers(1, 4))
        lone = size == 1 and draw(st.booleans())
        priority = draw(st.integers(0, 12))
        cpu = draw(st.sampled_from(["500m", "1", "2", "3"]))
        name = f"g{g}"
        members = []
        for i in range(size):
            where = [f"n{i}" for i in range(nodes)]
            target = draw(st.sampled_from(where))
            member = running_pod(
                f"{name}-{i}",
                target,
                group=None if lone else name,
                cpu=cpu,
                priority=priority,
                started=float(draw(st.integers(0, 9_000))),
            )
            if snapshot.fits(member)[snapshot.slot_of(target) or 0]:
                snapshot.update_pod(member)
                members.append(member)
        if not members:
            continue
        if lone:
            key = GroupKey("default", members[0].name, KIND_POD)
            running.append(RunningGroup(key, tuple(members), 1, priority, gang=False))
        else:
            minimum = draw(st.integers(1, len(members)))
            running.append(
                RunningGroup(GroupKey("default", name), tuple(members), minimum, priority)
            )
    size = draw(st.integers(1, 4))
    priority = draw(st.integers(1, 12))
    cpu = draw(st.sampled_from(["1", "2", "3"]))
    policy = group("urgent", draw(st.integers(1, size)), priority=priority)
    pending = [pod(f"urgent-{i}", group="urgent", cpu=cpu, priority=priority) for i in range(size)]
    return World(snapshot, running, Preemptor(policy, pending, [], priority))


def _fits(snapshot: Snapshot, who: Preemptor, victims: Sequence[Victim]) -> bool:
    """Take the victims out, try the preemptor, put everything back."""
    out = {member.uid: member for victim in victims for member in victim.pods}
    for uid in out:
        snapshot.remove_pod(uid)
    try:
        decision = plan(snapshot, who.key, who.policy, who.pending, who.bound)
        for binding in decision.bindings:
            snapshot.forget(binding.uid)
        return decision.admitted
    finally:
        for member in out.values():
            snapshot.update_pod(member)


def _state(snapshot: Snapshot) -> dict[str, object]:
    return {n.name: sorted(p.uid for p in snapshot.pods_on(n.name)) for n in snapshot.nodes()}


@given(worlds())
def test_properties_of_a_plan(world: World) -> None:
    snapshot, who = world.snapshot, world.preemptor
    if _fits(snapshot, who, []):
        return  # no preemption is asked for a group that fits
    before = _state(snapshot)
    found = find_plan(snapshot, who, world.running, NOW)
    assert _state(snapshot) == before  # 6
    if not found.found:
        assert found.pods == ()  # 5
        allowed = [
            Victim(g, g.pods, whole=True) for g in world.running if g.priority < who.priority
        ]
        assert not found.exhausted
        assert not _fits(snapshot, who, allowed)
        return
    for victim in found.victims:
        assert victim.group.priority < who.priority  # 1
    gone = Counter(victim.group.key for victim in found.victims for _ in victim.pods)
    for running_group in world.running:
        lost = gone.get(running_group.key, 0)
        left = len(running_group.pods) - lost
        if running_group.gang:
            assert left == 0 or left >= running_group.min_member  # 2
    assert _fits(snapshot, who, found.victims)  # 3
    if not found.exhausted:
        for victim in found.victims:  # 4
            rest = [other for other in found.victims if other is not victim]
            assert not _fits(snapshot, who, rest), f"{victim} could be spared"


@given(worlds(), st.integers(0, 12_000))
def test_a_plan_with_a_queue_rule_satisfies_it_and_is_minimal_under_it(
    world: World, returned_millicpu: int
) -> None:
    """``admits`` as a queue's would be (monotone: more victims return more usage): a plan
    both fits and is admitted, and no victim can be spared without losing one or the other."""
    snapshot, who = world.snapshot, world.preemptor

    def admits(victims: Sequence[Victim]) -> bool:
        pods = {p.uid: p for v in victims for p in v.pods}  # units may share pods
        freed = sum(p.requests.get("cpu", 0) for p in pods.values())
        return freed >= returned_millicpu

    if _fits(snapshot, who, []) and admits([]):
        return
    found = find_plan(snapshot, who, world.running, NOW, admits=admits, anywhere=True)
    if not found.found:
        assert found.pods == ()
        allowed = [
            Victim(g, g.pods, whole=True) for g in world.running if g.priority < who.priority
        ]
        assert not found.exhausted
        assert not (_fits(snapshot, who, allowed) and admits(allowed))
        return
    assert _fits(snapshot, who, found.victims)
    assert admits(found.victims)
    if not found.exhausted:
        for victim in found.victims:
            rest = [other for other in found.victims if other is not victim]
            assert not (_fits(snapshot, who, rest) and admits(rest)), f"{victim} could be spared"
