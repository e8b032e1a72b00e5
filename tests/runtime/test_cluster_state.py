"""ClusterState: raw watch objects in, the real core fed; bad objects reported, never fatal."""

from __future__ import annotations

from coscheduler.api.reasons import Reason
from coscheduler.core.group import GroupKey
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.status import Code, Status
from coscheduler.runtime.cluster import ClusterState, InvalidObject
from tests.builders import node_object, pod_object, podgroup_object


class Recorder:
    def __init__(self) -> None:
        self.changed: list[GroupKey] = []
        self.invalid: list[InvalidObject] = []


def make_state() -> tuple[ClusterState, Recorder]:
    seen = Recorder()
    state = ClusterState(
        Scheduler(lambda: 0.0),
        on_group_changed=seen.changed.append,
        on_invalid=seen.invalid.append,
    )
    return state, seen


def test_a_malformed_pod_is_reported_and_the_others_still_schedule() -> None:
    state, seen = make_state()
    state.replace_nodes([node_object("n1")])
    bad = pod_object("bad", cpu="lots")
    state.replace_pods([bad, pod_object("good", cpu="1")])

    assert [(i.kind, i.name) for i in seen.invalid] == [("Pod", "bad")]
    assert "'lots'" in seen.invalid[0].message
    decision = state.scheduler.next_decision()
    assert decision is not None
    assert [b.uid for b in decision.bindings] == ["uid-default-good"]
    # Reported once, not at every event of the same pod.
    state.upsert_pod(bad)
    assert len(seen.invalid) == 1


def test_a_malformed_node_is_reported_and_dropped() -> None:
    state, seen = make_state()
    broken = node_object("n2")
    broken["status"]["allocatable"]["cpu"] = "eight"
    state.replace_nodes([node_object("n1"), broken])
    assert [i.name for i in seen.invalid] == ["n2"]
    assert [n.name for n in state.scheduler.snapshot.nodes()] == ["n1"]


def test_an_invalid_podgroup_is_reported_and_ignored() -> None:
    state, seen = make_state()
    state.replace_podgroups([podgroup_object("zero", 0)])
    assert [i.kind for i in seen.invalid] == ["PodGroup"]
    assert "minMember" in seen.invalid[0].message
    assert state.podgroups == {}


def test_relist_forgets_what_disappeared() -> None:
    state, _ = make_state()
    state.replace_nodes([node_object("n1"), node_object("n2")])
    state.replace_pods([pod_object("a", group="g", node="n1"), pod_object("b", group="g")])
    state.replace_podgroups([podgroup_object("g", 2)])
    key = GroupKey("default", "g")
    assert {p.name for p in state.group_pods(key)} == {"a", "b"}

    state.replace_nodes([node_object("n1")])
    state.replace_pods([pod_object("a", group="g", node="n1")])
    state.replace_podgroups([])
    assert [n.name for n in state.scheduler.snapshot.nodes()] == ["n1"]
    assert {p.name for p in state.group_pods(key)} == {"a"}
    assert key not in state.podgroups


def test_group_members_include_finished_pods_for_status() -> None:
    state, seen = make_state()
    state.replace_pods(
        [
            pod_object("done", group="g", node="n1", phase="Succeeded"),
            pod_object("failed", group="g", node="n1", phase="Failed"),
            pod_object("waiting", group="g"),
        ]
    )
    key = GroupKey("default", "g")
    assert {p.phase for p in state.group_pods(key)} == {"Succeeded", "Failed", "Pending"}
    assert key in seen.changed


def test_priority_class_resolves_group_priority() -> None:
    state, _ = make_state()
    state.replace_priority_classes([{"metadata": {"name": "urgent"}, "value": 1000}])
    state.replace_podgroups([podgroup_object("g", 1, priorityClassName="urgent")])
    policy = state.scheduler.policy(GroupKey("default", "g"))
    assert policy is not None
    assert policy.priority == 1000
    state.set_priority_class({"metadata": {"name": "urgent"}, "value": 5})
    policy = state.scheduler.policy(GroupKey("default", "g"))
    assert policy is not None
    assert policy.priority == 5


def test_verdicts_notify_only_on_change() -> None:
    state, seen = make_state()
    key = GroupKey("default", "g")
    no_room = Status(Code.UNSCHEDULABLE, Reason.NOT_ENOUGH_RESOURCES, "no room")
    state.set_verdict(key, no_room)
    state.set_verdict(key, Status(Code.UNSCHEDULABLE, Reason.NOT_ENOUGH_RESOURCES, "no room"))
    state.set_verdict(key, None)
    state.set_verdict(key, None)
    assert seen.changed == [key, key]


def test_pods_outside_the_watched_namespaces_count_but_are_not_scheduled() -> None:
    state = ClusterState(Scheduler(lambda: 0.0), namespaces=frozenset({"mine"}))
    state.replace_nodes([node_object("n1", cpu="4")])
    state.replace_pods(
        [
            pod_object("theirs-bound", namespace="other", cpu="3", node="n1"),
            pod_object("theirs-pending", namespace="other", cpu="1"),
            pod_object("mine", namespace="mine", cpu="2"),
        ]
    )
    decision = state.scheduler.next_decision()
    assert decision is not None
    assert decision.bindings == ()  # 3 of 4 cpu are held by the other namespace's pod
    assert state.scheduler.next_decision() is None  # the other pending pod is not queued


def test_a_status_echo_is_not_a_group_change_but_a_spec_change_is() -> None:
    state, seen = make_state()
    raw = podgroup_object("train", 2, generation=1)
    key = state.upsert_podgroup(raw)
    assert key is not None
    seen.changed.clear()

    # Our own status write coming back: the stored status already says so.
    written = {"phase": "Pending", "pending": 2}
    group = state.podgroups[key]
    state.set_status(key, group.adapter.read_status(written), group.adapter.stored_form(written))
    echo = {**raw, "status": written}
    state.upsert_podgroup(echo)
    assert seen.changed == []

    # Someone else edited the status: the writer must put it right.
    state.upsert_podgroup({**raw, "status": {"phase": "Running", "running": 5}})
    assert seen.changed == [key]
    assert state.podgroups[key].status.phase == "Running"

    # A new spec (generation 2) reaches the scheduler's policy.
    changed = podgroup_object("train", 3, generation=2)
    state.upsert_podgroup(changed)
    policy = state.scheduler.policy(key)
    assert policy is not None
    assert policy.min_member == 3


def test_podgroups_outside_the_watched_namespaces_are_not_ours() -> None:
    seen = Recorder()
    state = ClusterState(
        Scheduler(lambda: 0.0),
        namespaces=frozenset({"team-a"}),
        on_group_changed=seen.changed.append,
        on_invalid=seen.invalid.append,
    )
    elsewhere = podgroup_object("train", 2)  # in "default"
    state.replace_podgroups([elsewhere])
    assert state.podgroups == {}
    assert seen.changed == []
