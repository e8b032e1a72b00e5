"""The exact search behind the planner: packings the greedy trial misses."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.pod import PodInfo
from coscheduler.core import Code
from coscheduler.core.scoring import Scoring
from coscheduler.core.search import find_packing
from coscheduler.core.statement import Statement
from coscheduler.core.strategy import Strategy
from coscheduler.core.trial import greedy_trial
from tests.builders import group, node, pod
from tests.core.test_planner import run, snapshot_of


def mixed_gang() -> list[PodInfo]:
    """Two small members (tried first: higher priority) and two large ones."""
    small = [pod(f"train-s{i}", group="train", cpu="1", priority=10) for i in range(2)]
    large = [pod(f"train-l{i}", group="train", cpu="2") for i in range(2)]
    return small + large


def test_greedy_trial_alone_misses_the_packing() -> None:
    # The premise of the search: packing the small members together leaves no node
    # for the second large one, though 2+1 on each node fits.
    snapshot = snapshot_of([node("a", cpu="3"), node("b", cpu="3")])
    statement = Statement(snapshot)
    placed, _, failure, _ = greedy_trial(
        statement, mixed_gang(), {}, 4, Scoring(Strategy.MOST_ALLOCATED, None)
    )
    statement.discard()
    assert placed == 3
    assert failure is not None


def test_the_planner_finds_the_packing_the_trial_missed() -> None:
    snapshot = snapshot_of([node("a", cpu="3"), node("b", cpu="3")])
    decision = run(snapshot, group("train", 4), mixed_gang())
    assert decision.status.code is Code.SUCCESS
    on = {b.name: b.node for b in decision.bindings}
    assert on["train-s0"] != on["train-s1"]
    assert sorted(on.values()) == ["a", "a", "b", "b"]
    assert snapshot.allocated("a")["cpu"] == 3000
    assert snapshot.allocated("b")["cpu"] == 3000


def test_no_packing_leaves_the_snapshot_untouched() -> None:
    snapshot = snapshot_of([node("a", cpu="3"), node("b", cpu="2")])
    decision = run(snapshot, group("train", 4), mixed_gang())
    assert decision.status.code is Code.UNSCHEDULABLE
    assert not decision.bindings
    assert snapshot.allocated("a").get("cpu", 0) == 0
    assert snapshot.allocated("b").get("cpu", 0) == 0


def test_spare_members_are_left_out_when_that_is_what_fits() -> None:
    # minMember 3 of 4: one large member must stay pending; the packing leaves out
    # the lowest-priority one that makes it fit.
    members = mixed_gang()
    snapshot = snapshot_of([node("a", cpu="3"), node("b", cpu="2")])
    packing = find_packing(snapshot, members, {}, 3)
    assert packing is not None
    assert len(packing) == 3
    cpu = {"a": 0, "b": 0}
    for member, name in packing:
        cpu[name] += member.requests["cpu"]
    assert cpu["a"] <= 3000
    assert cpu["b"] <= 2000
    assert sorted(member.name for member, _ in packing) == ["train-l0", "train-s0", "train-s1"]


def test_role_minimums_are_met() -> None:
    workers = [pod(f"job-w{i}", group="job", role="worker", cpu="1") for i in range(3)]
    driver = [pod("job-d", group="job", role="driver", cpu="2")]
    snapshot = snapshot_of([node("a", cpu="2"), node("b", cpu="2")])
    packing = find_packing(snapshot, workers + driver, {"driver": 1, "worker": 1}, 3)
    assert packing is not None
    roles = sorted(member.role or "" for member, _ in packing)
    assert roles == ["driver", "worker", "worker"]


def test_host_ports_and_out_of_budget_give_up() -> None:
    snapshot = snapshot_of([node("a", cpu="3"), node("b", cpu="3")])
    with_ports = [pod("p-0", group="p", host_ports=[80])]
    assert find_packing(snapshot, with_ports, {}, 1) is None
    assert find_packing(snapshot, mixed_gang(), {}, 4, budget=1) is None


@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=4),
    st.lists(st.integers(1, 4), min_size=1, max_size=6),
)
def test_the_planner_is_exact_for_small_gangs(capacities: list[int], sizes: list[int]) -> None:
    """Trial plus search place the gang exactly when brute force over every assignment can."""
    nodes = [node(f"n{i}", cpu=str(c)) for i, c in enumerate(capacities)]
    members = [pod(f"g-{i}", group="g", cpu=str(s)) for i, s in enumerate(sizes)]
    snapshot = snapshot_of(nodes)
    exists = any(
        all(
            sum(s for s, at in zip(sizes, assignment, strict=True) if at == n) <= c
            for n, c in enumerate(capacities)
        )
        for assignment in itertools.product(range(len(capacities)), repeat=len(sizes))
    )
    decision = run(snapshot, group("g", len(members)), members)
    assert decision.ok == exists
    if decision.ok:
        assert len(decision.bindings) == len(members)
        for n, c in zip(nodes, capacities, strict=True):
            assert snapshot.allocated(n.name).get("cpu", 0) <= c * 1000
