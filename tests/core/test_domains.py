"""Gangs kept inside one topology domain (a PodGroup's ``spec.topology``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import GroupTopology
from coscheduler.api.reasons import Reason
from coscheduler.core import GroupKey, GroupPolicy, Snapshot
from coscheduler.core.planner import Decision, plan
from coscheduler.core.status import Code
from tests.builders import node, pod

RACK = "rack"
ZONE = "zone"
GROUP = GroupKey("default", "g")


def cluster(racks: dict[str, tuple[str, Sequence[str]]]) -> Snapshot:
    """``{rack: (zone, [cpu of each node])}``; nodes named ``<rack>-<i>``."""
    snapshot = Snapshot()
    for rack, (zone, cpus) in racks.items():
        for index, cpu in enumerate(cpus):
            snapshot.upsert_node(node(f"{rack}-{index}", cpu=cpu, labels={RACK: rack, ZONE: zone}))
    return snapshot


def place(
    snapshot: Snapshot,
    size: int,
    levels: tuple[str, ...],
    *,
    name: str = "g",
    min_member: int | None = None,
    bound: Sequence[str] = (),
) -> Decision:
    pending = [pod(f"{name}-{i}", group=name, cpu="1") for i in range(size)]
    held = [
        pod(f"{name}-bound-{i}", group=name, cpu="1", node=where, phase="Running")
        for i, where in enumerate(bound)
    ]
    for member in held:
        snapshot.update_pod(member)
    policy = GroupPolicy(
        "default", name, min_member=min_member or size + len(held), topology_levels=levels
    )
    return plan(snapshot, GroupKey("default", name), policy, pending, held)


def racks_of(decision: Decision) -> set[str]:
    return {binding.node.rsplit("-", 1)[0] for binding in decision.bindings}


def test_the_gang_goes_to_the_tightest_rack_that_holds_it_whole() -> None:
    snapshot = cluster({"r0": ("a", ["3", "3"]), "r1": ("a", ["4", "4"]), "r2": ("a", ["8"] * 4)})
    decision = place(snapshot, 8, (RACK,))
    assert racks_of(decision) == {"r1"}
    assert decision.status.message.endswith("in rack=r1")


def test_without_a_rack_that_holds_it_the_gang_waits_naming_the_closest() -> None:
    snapshot = cluster({"r0": ("a", ["3", "3"]), "r1": ("a", ["2", "2"])})
    decision = place(snapshot, 8, (RACK,))
    assert not decision.bindings
    assert (decision.status.code, decision.status.reason) == (
        Code.UNSCHEDULABLE,
        Reason.NOT_ENOUGH_RESOURCES,
    )
    assert "no domain of rack holds the 8 needed members" in decision.status.message
    assert "closest: rack=r0, with room for 6 of 8" in decision.status.message
    assert all(snapshot.allocated(name) == {} for name in ("r0-0", "r0-1", "r1-0", "r1-1"))


def test_preferred_levels_fall_back_from_rack_to_zone_but_never_split_a_zone() -> None:
    snapshot = cluster(
        {"r0": ("a", ["4"]), "r1": ("a", ["4"]), "r2": ("b", ["2"]), "r3": ("b", ["2"])}
    )
    decision = place(snapshot, 6, (RACK, ZONE))
    assert racks_of(decision) == {"r0", "r1"}
    assert decision.status.message.endswith("in zone=a")
    # 7 members: zone a has room for 2 more, zone b 4; nothing may span both.
    assert not place(snapshot, 7, (RACK, ZONE), name="h").bindings


def test_a_small_gang_takes_the_nearly_full_rack_and_leaves_the_big_one_whole() -> None:
    # A naive choice (the roomiest, or the best-scored node) would put the small
    # gang in r-big and strand the large gang that needs all of it.
    snapshot = cluster({"small": ("a", ["4"]), "big": ("a", ["8", "8"])})
    assert racks_of(place(snapshot, 4, (RACK,), name="s")) == {"small"}
    assert racks_of(place(snapshot, 16, (RACK,), name="l")) == {"big"}


def test_nodes_without_the_label_belong_to_no_domain() -> None:
    snapshot = cluster({"r0": ("a", ["2"])})
    snapshot.upsert_node(node("bare", cpu="64"))
    assert not place(snapshot, 4, (RACK,)).bindings


def test_members_beyond_min_member_and_later_ones_stay_in_the_groups_rack() -> None:
    snapshot = cluster({"r0": ("a", ["4"]), "r1": ("a", ["16"])})
    decision = place(snapshot, 6, (RACK,), min_member=3)
    assert racks_of(decision) == {"r0"}  # the tightest rack for 3: all six do not fit there
    assert len(decision.bindings) == 4  # r0 is full; r1 is not theirs
    assert decision.pending


def test_bound_members_pin_the_group_to_their_rack() -> None:
    snapshot = cluster({"r0": ("a", ["4"]), "r1": ("a", ["2"])})
    decision = place(snapshot, 2, (RACK,), bound=["r0-0"])
    assert racks_of(decision) == {"r0"}


def test_members_bound_by_an_earlier_decision_pin_the_group_before_the_server_says_so() -> None:
    # Assumed on r0-0 by the decision that bound it: its pod does not name the node yet.
    snapshot = cluster({"r0": ("a", ["1"]), "r1": ("a", ["4"])})
    first = pod("g-0", group="g", cpu="1")
    snapshot.assume(first, "r0-0")
    policy = GroupPolicy("default", "g", min_member=1, topology_levels=(RACK,))
    later = [pod("g-1", group="g", cpu="1")]
    decision = plan(snapshot, GROUP, policy, later, [first])
    assert not decision.bindings  # r0 is full; r1 is not the group's


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({}, "set topology.required, topology.preferred, or both"),
        ({"preferred": ["rack", "rack"]}, "repeats a key"),
        ({"required": "zone", "preferred": ["zone"]}, "widest level already"),
        ({"required": "not a key!"}, "should match pattern"),
    ],
)
def test_a_topology_that_makes_no_sense_is_refused(spec: dict[str, object], error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        GroupTopology.model_validate(spec)


def test_levels_are_narrow_to_wide_with_required_last() -> None:
    topology = GroupTopology.model_validate({"required": "zone", "preferred": ["rack", "block"]})
    assert topology.levels() == ("rack", "block", "zone")


@st.composite
def racked(draw: Any) -> tuple[Snapshot, int, tuple[str, ...]]:
    racks = {}
    for index in range(draw(st.integers(1, 4))):
        zone = draw(st.sampled_from(["a", "b"]))
        cpus = draw(st.lists(st.sampled_from(["1", "2", "4"]), min_size=1, max_size=3))
        racks[f"r{index}"] = (zone, cpus)
    levels = draw(st.sampled_from([(RACK,), (ZONE,), (RACK, ZONE)]))
    return cluster(racks), draw(st.integers(1, 10)), levels


@settings(max_examples=200, deadline=None)
@given(racked())
def test_a_gang_kept_in_one_domain_never_spans_two_of_the_widest_level(
    world: tuple[Snapshot, int, tuple[str, ...]],
) -> None:
    snapshot, size, levels = world
    decision = place(snapshot, size, levels)
    if not decision.bindings:
        return
    assert len(decision.bindings) == size
    labels = {n.name: n.labels for n in snapshot.nodes()}
    assert len({labels[b.node][levels[-1]] for b in decision.bindings}) == 1
    if len({labels[b.node][levels[0]] for b in decision.bindings}) > 1:
        # Spread beyond the narrowest level only when no domain of it held the gang.
        assert decision.status.message.endswith(
            f"in {levels[-1]}={labels[decision.bindings[0].node][levels[-1]]}"
        )


def _roles_gang(workers: int) -> tuple[GroupPolicy, list[PodInfo]]:
    members = [pod("ps-0", group="g", role="ps", cpu="1")]
    members += [pod(f"w-{i}", group="g", role="worker", cpu="1") for i in range(workers)]
    policy = GroupPolicy(
        "default",
        "g",
        min_member=1 + workers,
        role_minimums={"ps": 1, "worker": workers},
        role_topology={"worker": (RACK,)},
    )
    return policy, members


def test_a_role_kept_in_one_rack_goes_there_while_the_others_go_anywhere() -> None:
    snapshot = cluster({"r0": ("a", ["3"]), "r1": ("a", ["6"])})
    policy, members = _roles_gang(5)
    decision = plan(snapshot, GROUP, policy, members, [])
    workers = {b.node for b in decision.bindings if b.name.startswith("w-")}
    assert workers == {"r1-0"}
    assert len(decision.bindings) == 6  # the ps took r0's room or r1's last core


def test_a_role_no_domain_holds_holds_the_gang_and_says_which_role() -> None:
    snapshot = cluster({"r0": ("a", ["3"]), "r1": ("a", ["6"])})
    policy, members = _roles_gang(8)
    decision = plan(snapshot, GROUP, policy, members, [])
    assert not decision.bindings
    assert decision.status.message.startswith(
        "role worker: no domain of rack holds its 8 needed members; "
        "closest: rack=r1, with room for 6 of 8."
    )
    assert all(snapshot.allocated(name) == {} for name in ("r0-0", "r1-0"))
