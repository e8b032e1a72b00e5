"""The core's entry point: membership, queueing, timeouts and binding failures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from coscheduler.api.labels import POD_GROUP_LABEL
from coscheduler.api.pod import PodInfo
from coscheduler.api.reasons import Reason
from coscheduler.core import (
    Code,
    GroupKey,
    QueueSettings,
    Scheduler,
    SchedulerSettings,
    planner,
)
from coscheduler.core import pipeline as pipeline_module
from coscheduler.core.snapshot import Snapshot
from tests.builders import Clock, gang, group, node, pod, pod_object

TRAIN = GroupKey("default", "train")


def cluster(
    *nodes_cpu: str, clock: Clock | None = None, settings: SchedulerSettings | None = None
) -> Scheduler:
    scheduler = Scheduler(clock or Clock(), settings)
    for i, cpu in enumerate(nodes_cpu):
        scheduler.upsert_node(node(f"n{i}", cpu=cpu))
    return scheduler


def test_gang_waits_for_members_then_binds_when_the_last_arrives() -> None:
    clock = Clock()
    scheduler = cluster("8", clock=clock)
    scheduler.upsert_group(group("train", 3))
    members = gang("train", 3)
    for p in members[:2]:
        scheduler.upsert_pod(p)
    # Short of members: it gathers them, untried and untold, for gather_seconds.
    assert scheduler.next_decision() is None
    assert scheduler.queue.pool(TRAIN) == "gathering"
    assert scheduler.ready_at() == clock.now + 1.0
    clock.advance(1.0)
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.status.code is Code.WAITING
    assert decision.status.message == "2/3 members exist"
    assert scheduler.next_decision() is None
    scheduler.upsert_pod(members[2])  # the last member: tried at once
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.ok
    assert len(decision.bindings) == 3
    assert scheduler.next_decision() is None
    assert TRAIN not in scheduler.queue


def test_a_group_short_of_members_is_told_at_most_once_per_gather_seconds() -> None:
    clock = Clock()
    scheduler = cluster("8", clock=clock)
    scheduler.upsert_group(group("train", 4))
    members = gang("train", 4)
    scheduler.upsert_pod(members[0])
    assert scheduler.next_decision() is None
    clock.advance(1.0)
    told = scheduler.next_decision()
    assert told is not None
    assert told.status.message == "1/4 members exist"
    clock.advance(0.2)
    scheduler.upsert_pod(members[1])
    # A node added is no event a short group can use: it keeps gathering.
    scheduler.upsert_node(node("n1", cpu="8"))
    assert scheduler.next_decision() is None
    assert scheduler.queue.pool(TRAIN) == "gathering"
    assert scheduler.ready_at() == clock.now + 0.8
    clock.advance(0.8)
    told = scheduler.next_decision()
    assert told is not None
    assert told.status.message == "2/4 members exist"
    assert scheduler.next_decision() is None
    # Time alone tries it no more: it waits for its members.
    clock.advance(60.0)
    assert scheduler.next_decision() is None
    for member in members[2:]:
        scheduler.upsert_pod(member)
    placed = scheduler.next_decision()
    assert placed is not None
    assert len(placed.bindings) == 4


def test_gathering_off_tells_each_arrival_at_once() -> None:
    scheduler = cluster("8", settings=SchedulerSettings(queue=QueueSettings(gather_seconds=0.0)))
    scheduler.upsert_group(group("train", 3))
    scheduler.upsert_pod(gang("train", 3)[0])
    told = scheduler.next_decision()
    assert told is not None
    assert told.status.message == "1/3 members exist"


def test_a_group_deleted_while_gathering_leaves_no_trace() -> None:
    scheduler = cluster("8")
    scheduler.upsert_group(group("train", 3))
    [first, *_] = gang("train", 3)
    scheduler.upsert_pod(first)
    assert scheduler.next_decision() is None
    scheduler.remove_pod(first.uid)
    assert TRAIN not in scheduler.queue
    assert scheduler.queue.sizes()["gathering"] == 0
    assert scheduler.ready_at() is None


def test_pods_of_other_schedulers_count_but_are_not_placed() -> None:
    scheduler = cluster("4")
    scheduler.upsert_pod(pod("theirs", cpu="3", node="n0", scheduler="default-scheduler"))
    scheduler.upsert_pod(pod("pending-theirs", scheduler="default-scheduler"))
    scheduler.upsert_pod(pod("mine", cpu="2"))
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.status.code is Code.UNSCHEDULABLE
    assert scheduler.next_decision() is None
    scheduler.upsert_pod(
        pod("theirs", cpu="3", node="n0", phase="Succeeded", scheduler="default-scheduler")
    )
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.ok


def test_missing_group_waits_until_created() -> None:
    scheduler = cluster("8")
    for p in gang("train", 2):
        scheduler.upsert_pod(p)
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.status.reason == Reason.GROUP_NOT_FOUND
    scheduler.upsert_group(group("train", 2))
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.ok


def test_missing_group_can_mean_lone_pods() -> None:
    scheduler = cluster("8", settings=SchedulerSettings(lone_when_group_missing=True))
    for p in gang("train", 2):
        scheduler.upsert_pod(p)
    decisions = [scheduler.next_decision(), scheduler.next_decision()]
    assert all(d is not None and d.ok and d.group.lone for d in decisions)


def test_timeout_is_counted_from_the_first_attempt() -> None:
    clock = Clock()
    scheduler = cluster("1", clock=clock)
    scheduler.upsert_group(group("train", 2, timeout=30))
    for p in gang("train", 2):
        scheduler.upsert_pod(p)
    first = scheduler.next_decision()
    assert first is not None
    assert first.status.code is Code.UNSCHEDULABLE
    clock.advance(31)
    late = scheduler.next_decision()
    assert late is not None
    assert late.status.reason == Reason.TIMEOUT
    clock.advance(10)
    again = scheduler.next_decision()
    assert again is not None
    assert again.status.reason != Reason.TIMEOUT


def test_binding_failure_forgets_and_backs_off() -> None:
    scheduler = cluster("2")
    scheduler.upsert_group(group("train", 2))
    for p in gang("train", 2):
        scheduler.upsert_pod(p)
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.ok
    assert scheduler.snapshot.allocated("n0")["cpu"] == 2000
    scheduler.binding_failed(decision.bindings[0])
    assert scheduler.snapshot.node_of(decision.bindings[0].uid) is None
    # Its room waits for the gang's retry (a partial gang must not lose it to another).
    assert scheduler.snapshot.allocated("n0")["cpu"] == 2000
    assert scheduler.preemptions.restored(TRAIN) is not None
    assert scheduler.queue.pool(TRAIN) == "backoff"
    assert len(scheduler.members(TRAIN)[0]) == 1


def test_bound_pods_complete_a_partially_bound_gang_after_restart() -> None:
    scheduler = cluster("4")
    scheduler.upsert_group(group("train", 4))
    for i in range(4):
        scheduler.upsert_pod(pod(f"train-{i}", group="train", node="n0" if i < 2 else None))
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.ok
    assert [b.name for b in decision.bindings] == ["train-2", "train-3"]


def test_priority_orders_groups() -> None:
    scheduler = cluster("2")
    scheduler.upsert_group(group("low", 2, created=1.0))
    scheduler.upsert_group(group("high", 2, priority=10, created=2.0))
    for p in [*gang("low", 2), *gang("high", 2)]:
        scheduler.upsert_pod(p)
    first = scheduler.next_decision()
    assert first is not None
    assert first.group.name == "high"
    assert first.ok
    second = scheduler.next_decision()
    assert second is not None
    assert not second.ok


def test_node_heartbeat_does_not_wake_backed_off_groups() -> None:
    scheduler = cluster("1")
    scheduler.upsert_pod(pod("big", cpu="2"))
    scheduler.next_decision()
    scheduler.upsert_node(node("n0", cpu="1"))
    assert scheduler.next_decision() is None
    scheduler.upsert_node(node("n0", cpu="2"))
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.ok


def test_try_group_leaves_no_trace() -> None:
    scheduler = cluster("4")
    scheduler.upsert_group(group("train", 2))
    for p in gang("train", 2):
        scheduler.upsert_pod(p)
    assert scheduler.try_group(TRAIN).ok
    assert scheduler.snapshot.allocated("n0") == {}


def _with_spec(name: str, extra: Mapping[str, object], **fields: object) -> PodInfo:
    raw = pod_object(name, **fields)  # type: ignore[arg-type]
    raw["spec"].update(extra)
    return PodInfo.from_object(raw)


ONE_PER_NODE = {
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {POD_GROUP_LABEL: "train"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
}


def test_one_per_node_members_spread_over_nodes_or_the_gang_waits_whole() -> None:
    # The report of issue 20: three "one per node" members, room for two each.
    scheduler = cluster("4", "4", "4")
    scheduler.upsert_group(group("train", 3))
    for index in range(3):
        scheduler.upsert_pod(_with_spec(f"train-{index}", ONE_PER_NODE, group="train", cpu="2"))
    decision = scheduler.next_decision()
    assert decision is not None
    assert sorted(binding.node for binding in decision.bindings) == ["n0", "n1", "n2"]
    # A fourth member cannot go anywhere: it says so in kube-scheduler's words.
    scheduler.upsert_pod(_with_spec("train-3", ONE_PER_NODE, group="train", cpu="2"))
    decision = scheduler.next_decision()
    assert decision is not None
    assert not decision.bindings
    assert decision.why_pending is not None
    assert "3 node(s) didn't match pod anti-affinity rules" in decision.why_pending.message


def test_a_one_per_node_gang_larger_than_the_nodes_waits_whole() -> None:
    scheduler = cluster("8", "8")
    scheduler.upsert_group(group("train", 3))
    for index in range(3):
        scheduler.upsert_pod(_with_spec(f"train-{index}", ONE_PER_NODE, group="train"))
    decision = scheduler.next_decision()
    assert decision is not None
    assert not decision.bindings
    assert decision.status.reason == Reason.NOT_ENOUGH_RESOURCES
    assert "didn't match pod anti-affinity rules" in decision.status.message
    assert scheduler.snapshot.allocated("n0") == {}


def test_gated_pods_are_not_members_to_place_until_their_gates_go() -> None:
    clock = Clock()
    scheduler = cluster("8", clock=clock)
    scheduler.upsert_group(group("train", 2))
    gate = {"schedulingGates": [{"name": "example.com/admission"}]}
    scheduler.upsert_pod(pod("train-0", group="train"))
    scheduler.upsert_pod(_with_spec("train-1", gate, group="train"))
    assert scheduler.next_decision() is None  # gathering its members
    clock.advance(1.0)
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.status.reason is Reason.NOT_ENOUGH_MEMBERS
    assert decision.status.message == "1/2 members exist"
    scheduler.upsert_pod(pod("train-1", group="train"))
    decision = scheduler.next_decision()
    assert decision is not None
    assert len(decision.bindings) == 2


def test_a_bug_met_deciding_for_one_group_backs_it_off_and_the_others_go_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Found by e2e/tests/test_bad_input.py: an exception in the core (an int64
    # overflow) ended the scheduling loop, and with it the process, for everyone.
    real_plan = planner.plan

    def plan_with_a_bug(snapshot: Snapshot, key: GroupKey, *args: Any, **kwargs: Any) -> Any:
        if key.name == "bad":
            snapshot.assume(args[1][0], "n0")  # half-way through a trial
            raise OverflowError("Python int too large to convert to C long")
        return real_plan(snapshot, key, *args, **kwargs)

    monkeypatch.setattr(pipeline_module, "plan", plan_with_a_bug)
    scheduler = cluster("4")
    scheduler.upsert_group(group("bad", 2, priority=10))
    scheduler.upsert_group(group("good", 2))
    for p in [*gang("bad", 2), *gang("good", 2)]:
        scheduler.upsert_pod(p)

    failed = scheduler.next_decision()
    assert failed is not None
    assert failed.group == GroupKey("default", "bad")
    assert failed.status.reason is Reason.INTERNAL_ERROR
    assert "OverflowError: Python int too large" in failed.status.message
    assert isinstance(failed.error, OverflowError)
    assert len(failed.pending) == 2
    assert scheduler.snapshot.allocated("n0").get("cpu", 0) == 0  # the half-trial undone
    assert scheduler.queue.pool(GroupKey("default", "bad")) == "backoff"

    placed = scheduler.next_decision()
    assert placed is not None
    assert placed.group == GroupKey("default", "good")
    assert len(placed.bindings) == 2
