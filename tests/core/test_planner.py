"""Gang planner scenarios: declared pods, nodes and groups, and the expected bindings."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.api.reasons import Reason
from coscheduler.core import Code, Decision, GroupKey, GroupPolicy, Snapshot, Strategy, plan
from coscheduler.core.scoring import Scoring
from tests.builders import gang, group, node, pod


def snapshot_of(nodes: Sequence[NodeInfo], bound: Sequence[PodInfo] = ()) -> Snapshot:
    snapshot = Snapshot()
    for n in nodes:
        snapshot.upsert_node(n)
    for p in bound:
        snapshot.update_pod(p)
    return snapshot


def run(
    snapshot: Snapshot,
    policy: GroupPolicy | None,
    pending: list[PodInfo],
    bound: Sequence[PodInfo] = (),
    key: GroupKey | None = None,
    **kw: object,
) -> Decision:
    key = key or (policy.key if policy else GroupKey("default", "train"))
    return plan(snapshot, key, policy, pending, list(bound), **kw)  # type: ignore[arg-type]


def placed(decision: Decision) -> dict[str, str]:
    return {f"{b.namespace}/{b.name}": b.node for b in decision.bindings}


SCENARIOS = [
    pytest.param(
        [node("a", cpu="4"), node("b", cpu="4")],
        group("train", 4),
        gang("train", 4, cpu="2"),
        {
            "default/train-0": "a",
            "default/train-1": "a",
            "default/train-2": "b",
            "default/train-3": "b",
        },
        id="packs-most-allocated",
    ),
    pytest.param(
        [node("a", cpu="4"), node("b", cpu="4")],
        group("train", 5),
        gang("train", 5, cpu="2"),
        {},
        id="all-or-nothing",
    ),
    pytest.param(
        [node("a", cpu="4"), node("b", cpu="8")],
        group("train", 2),
        gang("train", 3, cpu="4"),
        {"default/train-0": "a", "default/train-1": "b", "default/train-2": "b"},
        id="extras-beyond-min-placed-individually",
    ),
    pytest.param(
        [node("a", cpu="4", labels={"zone": "x"}), node("b", cpu="4", labels={"zone": "y"})],
        group("train", 2),
        gang("train", 2, cpu="1", node_selector={"zone": "y"}),
        {"default/train-0": "b", "default/train-1": "b"},
        id="selector",
    ),
    pytest.param(
        [node("a", cpu="8", taints=[("gpu", "true", "NoSchedule")]), node("b", cpu="2")],
        group("train", 2),
        gang("train", 2, cpu="1"),
        {"default/train-0": "b", "default/train-1": "b"},
        id="taint-avoided",
    ),
    pytest.param(
        [node("a", cpu="8"), node("b", cpu="8")],
        group("train", 2),
        gang("train", 2, cpu="1", host_ports=[8080]),
        {"default/train-0": "a", "default/train-1": "b"},
        id="host-ports-spread",
    ),
]


@pytest.mark.parametrize(("nodes", "policy", "pods", "expected"), SCENARIOS)
def test_scenarios(
    nodes: list[NodeInfo], policy: GroupPolicy, pods: list[PodInfo], expected: dict[str, str]
) -> None:
    snapshot = snapshot_of(nodes)
    decision = run(snapshot, policy, pods)
    assert placed(decision) == expected
    assert decision.ok == bool(expected)
    if not expected:
        assert all(not snapshot.allocated(n.name) for n in nodes), "a failed trial left traces"


def test_least_allocated_spreads() -> None:
    snapshot = snapshot_of([node("a", cpu="4"), node("b", cpu="4")])
    decision = run(
        snapshot,
        group("train", 4),
        gang("train", 4, cpu="1"),
        scoring=Scoring(Strategy.LEAST_ALLOCATED),
    )
    assert sorted(placed(decision).values()) == ["a", "a", "b", "b"]
    assert list(placed(decision).values()) == ["a", "b", "a", "b"]


def test_failure_message_is_a_histogram() -> None:
    nodes = [node(f"n{i:02d}", cpu="2") for i in range(96)]
    nodes += [node(f"g{i}", cpu="64", taints=[("gpu", "true", "NoSchedule")]) for i in range(4)]
    decision = run(snapshot_of(nodes), group("train", 4), gang("train", 4, cpu="4"))
    assert decision.status.code is Code.UNSCHEDULABLE
    assert decision.status.reason == Reason.NOT_ENOUGH_RESOURCES
    assert decision.status.message == (
        "0/100 nodes are available for 4 pods of group default/train: 96 Insufficient cpu, "
        "4 node(s) had untolerated taint {gpu: true}."
    )
    assert decision.status.filter == "NodeResourcesFit"


def test_not_enough_members() -> None:
    decision = run(
        snapshot_of([node("a")]),
        group("train", 4, roles={"ps": 1}),
        gang("train", 3, role="worker"),
    )
    assert decision.status.code is Code.WAITING
    assert decision.status.reason == Reason.NOT_ENOUGH_MEMBERS
    assert decision.why_pending == decision.status
    assert not decision.status.room_would_help
    assert decision.status.message == (
        "3/4 members exist; role ps: 0/1 members exist; 3 members name role worker, which the "
        "group does not declare (they count toward its minimum only)"
    )


def test_a_role_the_group_does_not_declare_is_named_when_a_role_is_short() -> None:
    # Volcano's pods name their task; a task missing from minTaskMember fills no role.
    decision = run(
        snapshot_of([node("a")]),
        group("train", 2, roles={"ps": 1, "worker": 1}),
        [pod("train-0", group="train", role="wrker"), pod("train-1", group="train", role="ps")],
    )
    assert decision.status.reason == Reason.NOT_ENOUGH_MEMBERS
    assert decision.status.message == (
        "role worker: 0/1 members exist; 1 member names role wrker, which the group does not "
        "declare (they count toward its minimum only)"
    )


def test_group_not_found() -> None:
    decision = run(snapshot_of([node("a")]), None, gang("train", 2))
    assert (decision.status.code, decision.status.reason) == (Code.WAITING, Reason.GROUP_NOT_FOUND)
    assert decision.status.message == "PodGroup default/train does not exist; 2 pods name it"


def test_min_resources_checked_before_trial() -> None:
    nodes = [node(f"n{i}", cpu="10") for i in range(4)]
    decision = run(
        snapshot_of(nodes), group("train", 1, min_resources={"cpu": "64"}), gang("train", 1)
    )
    assert decision.status.reason == Reason.MIN_RESOURCES_UNAVAILABLE
    assert decision.status.message == "minResources cpu=64 exceeds free capacity cpu=40"


def test_roles_each_reach_their_minimum() -> None:
    nodes = [node("a", cpu="8")]
    pods = [
        *gang("train", 6, cpu="1", role="worker"),
        pod("ps-0", group="train", cpu="1", role="ps", created=5),
    ]
    decision = run(snapshot_of(nodes), group("train", 3, roles={"ps": 1, "worker": 2}), pods)
    assert decision.ok
    assert "default/ps-0" in placed(decision)
    assert len(decision.bindings) == 7


def test_bound_members_count_toward_min_member() -> None:
    bound = [pod(f"train-{i}", group="train", node="a") for i in range(3)]
    snapshot = snapshot_of([node("a", cpu="4")], bound)
    decision = run(snapshot, group("train", 4), [pod("train-3", group="train")], bound)
    assert placed(decision) == {"default/train-3": "a"}
    assert decision.bound == 3
    assert decision.needed == 1


def test_admitted_group_places_what_fits() -> None:
    bound = [pod(f"train-{i}", group="train", node="a", cpu="2") for i in range(2)]
    snapshot = snapshot_of([node("a", cpu="6")], bound)
    decision = run(
        snapshot,
        group("train", 2),
        gang("train", 3, cpu="2")[:0] + [pod(f"x-{i}", group="train", cpu="2") for i in range(2)],
        bound,
    )
    assert len(decision.bindings) == 1
    assert_left_for_want_of_room(decision, "default/x-1")


def test_members_beyond_min_member_that_do_not_fit_have_a_reason() -> None:
    # minMember 2, four members of 2 cpu, 6 cpu free: three bound, the fourth says why.
    decision = run(snapshot_of([node("a", cpu="6")]), group("train", 2), gang("train", 4, cpu="2"))
    assert len(decision.bindings) == 3
    assert_left_for_want_of_room(decision, "default/train-3")


def assert_left_for_want_of_room(decision: Decision, left: str) -> None:
    """Admitted, with one member left pending that says no node has room for it."""
    assert decision.ok
    assert decision.admitted
    assert decision.pending == (left,)
    why = decision.why_pending
    assert why is not None
    assert why.reason is Reason.NOT_ENOUGH_RESOURCES
    assert why.room_would_help
    assert why.message == (
        "0/1 nodes are available for 1 pod of group default/train: 1 Insufficient cpu."
    )


def test_admitted_group_with_no_room_reports_its_pending_members() -> None:
    bound = [pod(f"train-{i}", group="train", node="a", cpu="2") for i in range(2)]
    snapshot = snapshot_of([node("a", cpu="4")], bound)
    waiting = [pod("train-2", group="train", cpu="2")]
    decision = run(snapshot, group("train", 2), waiting, bound)
    assert decision.admitted
    assert not decision.bindings
    assert decision.status.code is Code.UNSCHEDULABLE
    assert decision.why_pending == decision.status
    assert decision.status.reason is Reason.NOT_ENOUGH_RESOURCES


def test_nothing_pending_needs_no_reason() -> None:
    decision = run(snapshot_of([node("a", cpu="8")]), group("train", 2), gang("train", 2))
    assert decision.ok
    assert decision.why_pending is None


def test_skips_a_member_that_does_not_fit_for_another() -> None:
    pods = [pod("big", group="train", cpu="16"), *gang("train", 2, cpu="1", created=1)]
    decision = run(snapshot_of([node("a", cpu="4")]), group("train", 2), pods)
    assert sorted(placed(decision)) == ["default/train-0", "default/train-1"]
    assert decision.pending == ("default/big",)


def test_timeout_reason() -> None:
    decision = run(
        snapshot_of([node("a", cpu="1")]),
        group("train", 2, timeout=30),
        gang("train", 2, cpu="1"),
        elapsed=31.0,
    )
    assert decision.status.reason == Reason.TIMEOUT
    assert decision.status.cause is Reason.NOT_ENOUGH_RESOURCES
    assert decision.status.room_would_help
    assert decision.status.code is Code.UNSCHEDULABLE
    assert decision.status.message.startswith("not scheduled within scheduleTimeoutSeconds=30: ")


def test_lone_pod_message() -> None:
    p = pod("web", cpu="9")
    decision = run(snapshot_of([node("a")]), GroupPolicy.lone(p), [p], key=GroupKey.of_pod(p))
    assert decision.status.message == (
        "0/1 nodes are available for pod default/web: 1 Insufficient cpu."
    )
