"""The preemption benchmark's figures: minimal plans from the shape, and what the replay shows."""

from __future__ import annotations

import pytest

from bench.observe import PodRecord
from bench.preemption_analysis import (
    Arrival,
    broken_spells,
    minimal_plans,
    preemption_figures,
)


def pod(
    name: str, gang: str, *, bound: float | None = None, terminating: float | None = None,
    deleted: float | None = None, disrupted: bool = True, cpu: float = 2.0,
    seen: float | None = None,
) -> PodRecord:  # fmt: skip
    return PodRecord(
        name, gang, cpu, 2**30, bound=bound, terminating=terminating, deleted=deleted,
        disrupted=disrupted and (terminating is not None or deleted is not None), seen=seen,
    )  # fmt: skip


def gang_pods(gang: str, size: int, **kwargs: float | None) -> list[PodRecord]:
    return [pod(f"{gang}-{i}", gang, **kwargs) for i in range(size)]  # type: ignore[arg-type]


# --- minimal plans ------------------------------------------------------------------------


def test_a_plan_ends_the_fewest_gangs_then_evicts_the_fewest_pods() -> None:
    (plan,) = minimal_plans([8, 4, 2, 2], [("h", 3)])
    assert (plan.gangs, plan.pods, plan.victim_sizes) == (1, 4, (4,))
    assert plan.pod_minimum == 3
    assert plan.free_after == 1
    # Five slots: one gang of 8 ends fewer gangs than 4 + 2, though it evicts more pods.
    (plan,) = minimal_plans([8, 4, 2], [("h", 5)])
    assert (plan.gangs, plan.pods) == (1, 8)


def test_room_left_by_one_plan_serves_the_next_gang() -> None:
    plans = minimal_plans([8, 8, 4, 4, 2], [("a", 6), ("b", 2), ("c", 4)])
    assert [(p.need, p.pods, p.free_after) for p in plans] == [(6, 8, 2), (0, 0, 0), (4, 4, 0)]
    # A pod-by-pod preemption leaves no room over: it needs a pod per member.
    assert [p.pod_minimum for p in plans] == [6, 2, 4]


def test_the_suite_s_shape_needs_as_many_pods_whole_as_pod_by_pod() -> None:
    plans = minimal_plans(
        [8] * 5 + [4] * 8 + [2] * 12,
        [("h0", 4), ("h1", 3), ("h2", 8), ("h3", 6), ("h4", 2), ("h5", 5)],
    )
    assert [p.pods for p in plans] == [4, 4, 8, 8, 0, 4]
    assert sum(p.pods for p in plans) == sum(p.pod_minimum for p in plans) == 28


def test_no_plan_when_the_low_gangs_cannot_make_room() -> None:
    with pytest.raises(ValueError, match="no whole-gang plan"):
        minimal_plans([2, 2], [("h", 5)])


# --- broken victim gangs ------------------------------------------------------------------


def test_a_gang_evicted_whole_at_once_is_not_broken() -> None:
    pods = gang_pods("low", 4, bound=1.0, terminating=10.0, deleted=13.0)
    assert broken_spells(pods, {"low": 4}, since=5.0, end=30.0, allowance={"low": 1.0}) == []


def test_a_gang_losing_one_member_is_broken_until_the_end_with_the_cpu_it_holds() -> None:
    pods = gang_pods("low", 4, bound=1.0)
    pods[0] = pod("low-0", "low", bound=1.0, terminating=10.0, deleted=12.0)
    (spell,) = broken_spells(pods, {"low": 4}, since=5.0, end=30.0, allowance={"low": 1.0})
    assert (spell.start, spell.end, spell.open_at_end) == (10.0, 30.0, True)
    assert spell.cpu_s == pytest.approx(3 * 2.0 * 20.0)


def test_members_evicted_over_a_burst_are_not_broken_but_a_slow_eviction_is() -> None:
    fast = [pod(f"a-{i}", "a", bound=1.0, terminating=10.0 + 0.1 * i) for i in range(4)]
    slow = [pod(f"b-{i}", "b", bound=1.0, terminating=10.0 + 2.0 * i) for i in range(4)]
    spells = broken_spells(
        [*fast, *slow], {"a": 4, "b": 4}, since=5.0, end=30.0, allowance={"a": 1.0, "b": 1.0}
    )
    assert [(s.gang, s.start, s.end, s.open_at_end) for s in spells] == [("b", 10.0, 16.0, False)]
    assert spells[0].cpu_s == pytest.approx(2.0 * (3 * 2 + 2 * 2 + 1 * 2))


def test_a_gang_filling_up_before_the_first_arrival_is_not_a_victim() -> None:
    pods = [pod(f"low-{i}", "low", bound=1.0 + i) for i in range(4)]  # bound one by one
    assert broken_spells(pods, {"low": 4}, since=0.0, end=30.0, allowance={"low": 1.0}) == []


def test_a_member_replaced_at_the_same_instant_still_left() -> None:
    pods = gang_pods("low", 2, bound=1.0)
    pods[0] = pod("low-0", "low", bound=1.0, terminating=10.0)
    pods.append(pod("low-new", "low", bound=10.0))
    assert broken_spells(pods, {"low": 2}, since=5.0, end=30.0, allowance={"low": 1.0}) == []


# --- per high gang ------------------------------------------------------------------------


def test_figures_of_a_gang_bound_whole_after_its_victims_went() -> None:
    pods = [
        *gang_pods("low-a", 4, bound=1.0, terminating=20.2, deleted=23.0),
        *gang_pods("low-b", 4, bound=1.0),
        *(pod(f"high-{i}", "high", bound=23.1, seen=20.01 + 0.02 * i) for i in range(3)),
    ]
    plans = minimal_plans([4, 4], [("high", 3)])
    figures = preemption_figures(
        pods, [Arrival("high", 3, 20.0)], {"low-a": 4, "low-b": 4}, plans, end=40.0, qps=1000
    )
    (row,) = figures["per_gang"]
    assert row["bound_s"] == pytest.approx(3.1)
    assert row["evicted"] == 4
    assert row["minimal_pods"] == 4
    assert row["members_seen_s"] == pytest.approx(0.05)
    assert row["first_eviction_s"] == pytest.approx(0.2)
    assert row["victims_gone_s"] == pytest.approx(3.0)
    assert row["bind_after_victims_gone_s"] == pytest.approx(0.1)
    assert row["in_time"] is True
    assert figures["evicted_pods"] == 4
    assert figures["broken_gangs"] == 0
    assert figures["partial_preemptors"] == 0
    assert figures["victim_termination_p50_s"] == pytest.approx(2.8)


def test_pod_by_pod_preemption_breaks_gangs_and_leaves_a_partial_preemptor() -> None:
    # Two high members: one victim from each of two low gangs; the second member waits.
    pods = [
        *gang_pods("low-a", 2, bound=1.0),
        *gang_pods("low-b", 2, bound=1.0),
        pod("high-0", "high", bound=13.0),
        pod("high-1", "high", bound=19.0),
    ]
    pods[0] = pod("low-a-0", "low-a", bound=1.0, terminating=10.0, deleted=13.0)
    pods[2] = pod("low-b-0", "low-b", bound=1.0, terminating=16.0, deleted=19.0)
    plans = minimal_plans([2, 2], [("high", 2)])
    figures = preemption_figures(
        pods, [Arrival("high", 2, 9.0)], {"low-a": 2, "low-b": 2}, plans, end=29.0, qps=1000
    )
    (row,) = figures["per_gang"]
    assert (row["evicted"], row["victim_gangs"], row["minimal_pods"]) == (2, 2, 2)
    assert row["partial_s"] == pytest.approx(6.0)
    assert row["bind_after_victims_gone_s"] == pytest.approx(0.0)
    assert figures["partial_preemptors"] == 1
    assert figures["broken_gangs"] == 2
    assert figures["broken_at_end"] == 2
    # low-a: one member of 2 cpu from 10 to 29; low-b: from 16 to 29.
    assert figures["broken_cpu_s"] == pytest.approx(2.0 * 19 + 2.0 * 13)
    assert (figures["replacements_bound"], figures["replacements_evicted"]) == (0, 0)


def test_a_victims_replacement_placed_in_freed_room_and_evicted_again_is_counted() -> None:
    pods = [
        pod("low-a-0", "low-a", bound=1.0, terminating=10.0, deleted=12.0),
        pod("low-a-new", "low-a", bound=12.5, terminating=15.0, deleted=17.0),
        pod("high-0", "high", bound=17.1),
    ]
    figures = preemption_figures(
        pods, [Arrival("high", 1, 9.0)], {"low-a": 1}, minimal_plans([1], [("high", 1)]),
        end=20.0, qps=1000,
    )  # fmt: skip
    assert (figures["replacements_bound"], figures["replacements_evicted"]) == (1, 1)
    assert figures["evicted_pods"] == 2


def test_a_gang_never_bound_and_deletions_without_disruption_are_apart() -> None:
    pods = [
        *gang_pods("low-a", 2, bound=1.0, terminating=12.0, deleted=12.0, disrupted=False),
        *gang_pods("low-b", 2, bound=1.0, terminating=11.0, deleted=14.0),
        pod("high-0", "high", bound=14.5),
    ]
    figures = preemption_figures(
        pods, [Arrival("high", 2, 10.0)], {"low-a": 2, "low-b": 2},
        minimal_plans([2, 2], [("high", 2)]), end=60.0, qps=1000,
    )  # fmt: skip
    (row,) = figures["per_gang"]
    assert row["bound_s"] is None
    assert row["in_time"] is False
    assert row["partial_s"] == pytest.approx(45.5)
    assert figures["high_gangs_bound"] == 0
    assert figures["bound_p50_s"] is None
    assert figures["evicted_pods"] == 2
    assert figures["other_deletions"] == 2


def test_evictions_are_charged_to_the_gang_that_arrived_last() -> None:
    pods = [
        *gang_pods("low-a", 2, bound=1.0, terminating=10.5, deleted=12.0),
        *gang_pods("low-b", 2, bound=1.0, terminating=20.5, deleted=22.0),
        *gang_pods("h1", 2, bound=12.1),
        *gang_pods("h2", 2, bound=22.5),
    ]
    plans = minimal_plans([2, 2], [("h1", 2), ("h2", 2)])
    figures = preemption_figures(
        pods, [Arrival("h1", 2, 10.0), Arrival("h2", 2, 20.0)], {"low-a": 2, "low-b": 2},
        plans, end=30.0, qps=1000,
    )  # fmt: skip
    assert [r["evicted"] for r in figures["per_gang"]] == [2, 2]
    assert [r["bind_after_victims_gone_s"] for r in figures["per_gang"]] == [
        pytest.approx(0.1),
        pytest.approx(0.5),
    ]
    assert figures["bound_in_time"] == 2
    assert figures["bound_max_s"] == pytest.approx(2.5)
