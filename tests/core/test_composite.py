"""A CompositePodGroup in the core: one gang whose roles are its child PodGroups.

The API layer composes the composite and its children into a spec
(:func:`coscheduler.api.composite.compose`); the core sees a plain policy with
role minimums and role topology. What must hold: every child is placed whole
in the same trial, or none is; preemption never leaves a child short.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.composite import ChildGroup, Composed, compose, read_composite
from coscheduler.api.pod import PodInfo
from coscheduler.api.reasons import Reason
from coscheduler.core import GroupKey, GroupPolicy, Snapshot, plan
from coscheduler.core.group import KIND_COMPOSITE
from coscheduler.core.preemption import Preemptor, find_plan
from coscheduler.core.preemption.search import _without_covered
from coscheduler.core.victims import RunningGroup, victim_units
from tests.builders import node, pod

KEY = GroupKey("default", "job", KIND_COMPOSITE)


def composite_policy(children: Sequence[ChildGroup], topology: str | None = None) -> GroupPolicy:
    raw = {
        "metadata": {"namespace": "default", "name": "job"},
        "spec": {
            "workloadRef": {"workloadName": "w", "templateName": "t"},
            "schedulingPolicy": {"gang": {"minGroupCount": len(children)}},
        },
    }
    if topology is not None:
        raw["spec"]["schedulingConstraints"] = {"topology": [{"key": topology}]}  # type: ignore[index]
    composed = compose(read_composite(raw), children)
    assert isinstance(composed, Composed)
    spec = composed.spec
    return GroupPolicy(
        namespace="default",
        name="job",
        kind=KEY.kind,
        min_member=spec.min_member,
        role_minimums=spec.role_minimums(),
        role_topology=spec.role_topology(),
        topology_levels=spec.topology.levels() if spec.topology else (),
    )


def members(child: str, count: int, cpu: str) -> list[PodInfo]:
    """The pods of one child PodGroup: the runtime gives each its child's name as its role."""
    return [pod(f"{child}-{i}", cpu=cpu, role=child) for i in range(count)]


def snapshot_of(*cpus: str, labels: Sequence[dict[str, str]] = ()) -> Snapshot:
    snapshot = Snapshot()
    for i, cpu in enumerate(cpus):
        snapshot.upsert_node(node(f"n{i}", cpu=cpu, labels=labels[i] if labels else None))
    return snapshot


def test_leader_and_workers_are_placed_together() -> None:
    policy = composite_policy([ChildGroup("leader", 1), ChildGroup("workers", 3)])
    pending = members("leader", 1, "2") + members("workers", 3, "2")
    decision = plan(snapshot_of("4", "4"), KEY, policy, pending, [])
    assert len(decision.bindings) == 4
    assert decision.status.reason is Reason.MIN_MEMBER_SCHEDULED


def test_a_composite_that_cannot_fit_whole_places_no_child() -> None:
    policy = composite_policy([ChildGroup("leader", 1), ChildGroup("workers", 3)])
    pending = members("leader", 1, "2") + members("workers", 3, "2")
    # Room for the leader and two workers: the workers' gang alone would not fit
    # whole, and the leader alone must not go either.
    decision = plan(snapshot_of("4", "2"), KEY, policy, pending, [])
    assert decision.bindings == ()
    assert decision.status.reason is Reason.NOT_ENOUGH_RESOURCES


def test_a_missing_child_member_holds_every_child() -> None:
    policy = composite_policy([ChildGroup("leader", 1), ChildGroup("workers", 3)])
    pending = members("leader", 1, "1") + members("workers", 2, "1")
    decision = plan(snapshot_of("8"), KEY, policy, pending, [])
    assert decision.bindings == ()
    assert decision.status.reason is Reason.NOT_ENOUGH_MEMBERS
    assert "PodGroup workers: 2/3 members exist" in decision.status.message


def test_the_composite_topology_keeps_every_child_in_one_domain() -> None:
    policy = composite_policy([ChildGroup("a", 2), ChildGroup("b", 2)], topology="zone")
    zones = [{"zone": "x"}, {"zone": "x"}, {"zone": "y"}, {"zone": "y"}]
    snapshot = snapshot_of("1", "1", "2", "2", labels=zones)
    decision = plan(snapshot, KEY, policy, members("a", 2, "1") + members("b", 2, "1"), [])
    assert {binding.node for binding in decision.bindings} <= {"n2", "n3"}
    assert len(decision.bindings) == 4


@given(
    minimums=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    extra=st.lists(st.integers(0, 2), min_size=4, max_size=4),
    nodes=st.lists(st.sampled_from(["1", "2", "3", "4"]), min_size=1, max_size=5),
    cpus=st.lists(st.sampled_from(["1", "2"]), min_size=4, max_size=4),
)
def test_all_children_placed_together_or_none(
    minimums: list[int], extra: list[int], nodes: list[str], cpus: list[str]
) -> None:
    """Property: either nothing is bound, or every child reaches its minimum in the one decision."""
    children = [ChildGroup(f"c{i}", minimum) for i, minimum in enumerate(minimums)]
    policy = composite_policy(children)
    pending = [
        pod_
        for i, child in enumerate(children)
        for pod_ in members(child.name, minimums[i] + extra[i], cpus[i])
    ]
    decision = plan(snapshot_of(*nodes), KEY, policy, pending, [])
    by_uid = {pod_.uid: pod_ for pod_ in pending}
    placed = Counter(by_uid[binding.uid].role for binding in decision.bindings)
    if decision.bindings:
        assert all(placed[child.name] >= child.min_count for child in children if child.min_count)
    else:
        assert decision.status.reason is not Reason.MIN_MEMBER_SCHEDULED


def running(child: str, count: int) -> list[PodInfo]:
    return [pod(f"{child}-{i}", cpu="1", role=child, node="n0") for i in range(count)]


def test_victims_above_the_minimum_never_leave_a_child_short() -> None:
    # minMember 5 = leader 1 + workers 4; 1 leader and 6 workers run: the two
    # above the minimum must be workers, never the leader.
    pods = running("leader", 1) + running("workers", 6)
    group = RunningGroup(KEY, tuple(pods), 5, 0, role_minimums=(("leader", 1), ("workers", 4)))
    units = victim_units(group, lambda pod_: True)
    singles = [unit for unit in units if not unit.whole]
    assert len(singles) == 2
    assert all(unit.pods[0].role == "workers" for unit in singles)
    assert units[-1].whole


@given(
    counts=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 3)), min_size=1, max_size=4),
    slack=st.integers(0, 3),
)
def test_no_set_of_surplus_victims_breaks_a_role(counts: list[tuple[int, int]], slack: int) -> None:
    """Property: evicting every unit above the minimum together leaves each role at its minimum."""
    pods = [
        pod_
        for i, (minimum, more) in enumerate(counts)
        for pod_ in running(f"c{i}", minimum + more)
    ]
    roles = tuple((f"c{i}", minimum) for i, (minimum, _) in enumerate(counts))
    min_member = max(1, sum(minimum for _, minimum in roles) - slack)
    group = RunningGroup(KEY, tuple(pods), min_member, 0, role_minimums=roles)
    gone = {unit.pods[0].uid for unit in victim_units(group, lambda pod_: True) if not unit.whole}
    left = Counter(pod_.role for pod_ in pods if pod_.uid not in gone)
    assert all(left[role] >= minimum for role, minimum in roles)
    assert sum(left.values()) >= min_member


def composite_running(
    *, roles_apart: bool, whole_only: bool = False
) -> tuple[RunningGroup, Snapshot]:
    """A running composite: leader (1 pod on n0), workers (2 pods, minCount 2, on n1)."""
    pods = (
        pod("leader-0", cpu="4", role="leader", node="n0", priority=1),
        pod("workers-0", cpu="4", role="workers", node="n1", priority=1),
        pod("workers-1", cpu="4", role="workers", node="n1", priority=1),
    )
    group = RunningGroup(
        KEY,
        pods,
        3,
        1,
        role_minimums=(("leader", 1), ("workers", 2)),
        roles_apart=roles_apart,
        whole_only=whole_only,
    )
    snapshot = snapshot_of("4", "8")
    for member in pods:
        snapshot.update_pod(member)
    return group, snapshot


def urgent(cpu: str) -> Preemptor:
    policy = GroupPolicy(namespace="default", name="urgent", min_member=1, priority=100)
    return Preemptor(policy, [pod("urgent-0", cpu=cpu, priority=100)], [], 100)


def test_single_evicts_one_child_whole_and_its_siblings_run_on() -> None:
    group, snapshot = composite_running(roles_apart=True)
    found = find_plan(snapshot, urgent("8"), [group], 0.0)
    assert {member.name for member in found.pods} == {"workers-0", "workers-1"}
    assert "workers of default/job" in found.summary


def test_all_evicts_the_composite_whole() -> None:
    group, snapshot = composite_running(roles_apart=False, whole_only=True)
    found = find_plan(snapshot, urgent("8"), [group], 0.0)
    assert {member.name for member in found.pods} == {"leader-0", "workers-0", "workers-1"}


@given(
    counts=st.lists(st.tuples(st.integers(1, 3), st.integers(0, 2)), min_size=1, max_size=4),
    picks=st.lists(st.booleans(), min_size=12, max_size=12),
    apart=st.booleans(),
)
def test_no_chosen_set_of_units_leaves_a_child_partly_bound(
    counts: list[tuple[int, int]], picks: list[bool], apart: bool
) -> None:
    """Property: any set of the composite's units, as the search keeps them, leaves every
    child at its minimum or gone whole."""
    pods = [
        pod_
        for i, (minimum, more) in enumerate(counts)
        for pod_ in running(f"c{i}", minimum + more)
    ]
    roles = tuple((f"c{i}", minimum) for i, (minimum, _) in enumerate(counts))
    group = RunningGroup(
        KEY,
        tuple(pods),
        sum(minimum for _, minimum in roles),
        0,
        role_minimums=roles,
        roles_apart=apart,
    )
    units = victim_units(group, lambda pod_: True)
    chosen = [unit for unit, pick in zip(units, picks, strict=False) if pick]
    gone = {pod_.uid for unit in _without_covered(chosen) for pod_ in unit.pods}
    left = Counter(pod_.role for pod_ in pods if pod_.uid not in gone)
    assert all(left[role] in (0, *range(minimum, 99)) for role, minimum in roles)
    if not apart:
        assert all(left[role] >= minimum for role, minimum in roles) or not left
