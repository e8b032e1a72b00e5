"""The handlers with CompositePodGroups, fed by hand: the real core decides.

A composite's child PodGroups are the roles of one gang keyed
``CompositePodGroup``: every child whole in one decision, or none. A child
of a basic composite is a gang of its own; what is refused waits with the
field named; a child naming a missing composite waits for it.
"""

from __future__ import annotations

from typing import Any

from coscheduler.api.adapters import native
from coscheduler.api.reasons import Reason
from coscheduler.core.group import KIND_COMPOSITE, KIND_NATIVE_POD_GROUP, GroupKey
from coscheduler.core.planner import Decision
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import InvalidObject
from coscheduler.runtime.readmodel import ReadModel
from tests.builders import native_podgroup_object, node_object, pod_object, scheduling_group
from tests.fed import Fed

BETA = native.ADAPTERS[0]
JOB = GroupKey("default", "job", KIND_COMPOSITE)


def make_state() -> tuple[Fed, list[InvalidObject], list[GroupKey]]:
    invalid: list[InvalidObject] = []
    changed: list[GroupKey] = []
    state = Fed(Scheduler(lambda: 0.0), on_invalid=invalid.append, on_group_changed=changed.append)
    return state, invalid, changed


def composite_object(
    name: str = "job", min_group_count: int | None = 2, **spec: Any
) -> dict[str, Any]:
    policy = (
        {"basic": {}} if min_group_count is None else {"gang": {"minGroupCount": min_group_count}}
    )
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"namespace": "default", "name": name, "uid": f"uid-cpg-{name}"},
        "spec": {
            "workloadRef": {"workloadName": name, "templateName": name},
            "schedulingPolicy": policy,
            **spec,
        },
    }


def child(name: str, min_count: int | None, parent: str = "job") -> dict[str, Any]:
    return native_podgroup_object(
        name,
        min_count,
        parentCompositePodGroupName=parent,
        workloadRef={"workloadName": parent, "templateName": name},
    )


def members(group: str, count: int, cpu: str = "1") -> list[dict[str, Any]]:
    return [
        pod_object(f"{group}-{i}", cpu=cpu, spec_extra=scheduling_group(group))
        for i in range(count)
    ]


def decisions(state: Fed) -> list[Decision]:
    made = []
    while (decision := state.scheduler.next_decision()) is not None:
        made.append(decision)
    return made


def leader_and_workers(state: Fed, *, cpu: str = "1") -> None:
    state.handlers.composites.upsert(composite_object())
    state.handlers.podgroups[BETA.api].upsert(child("leader", 1))
    state.handlers.podgroups[BETA.api].upsert(child("workers", 3))
    state.handlers.pods.replace(members("leader", 1, cpu) + members("workers", 3, cpu))


def test_leader_and_workers_are_one_gang_placed_together() -> None:
    state, invalid, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="2") for i in range(2)])
    leader_and_workers(state)
    [placed] = decisions(state)
    assert placed.group == JOB
    assert len(placed.bindings) == 4
    policy = state.scheduler.policy(JOB)
    assert policy is not None
    assert policy.min_member == 4
    assert dict(policy.role_minimums) == {"leader": 1, "workers": 3}
    assert {pod.role for pod in state.handlers.groups.group_pods(JOB)} == {"leader", "workers"}
    assert not invalid


def test_a_composite_that_cannot_fit_places_no_child() -> None:
    state, _, _ = make_state()
    state.handlers.nodes.replace([node_object("n0", cpu="3")])  # the leader and two workers only
    leader_and_workers(state)
    [refused] = decisions(state)
    assert refused.group == JOB
    assert refused.status.reason is Reason.NOT_ENOUGH_RESOURCES
    assert not refused.bindings


def test_pods_first_then_children_then_the_composite() -> None:
    state, _, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="2") for i in range(2)])
    state.handlers.pods.replace(members("leader", 1) + members("workers", 3))
    state.handlers.podgroups[BETA.api].upsert(child("leader", 1))
    state.handlers.podgroups[BETA.api].upsert(child("workers", 3))
    waiting = decisions(state)
    assert {decision.group for decision in waiting} == {JOB}
    assert waiting[0].status.reason is Reason.GROUP_NOT_FOUND
    assert "CompositePodGroup default/job" in waiting[0].status.message
    assert not any(decision.bindings for decision in waiting)

    state.handlers.composites.upsert(composite_object())
    [placed] = decisions(state)
    assert placed.group == JOB
    assert len(placed.bindings) == 4


def test_too_few_children_wait_and_more_than_min_group_count_is_refused() -> None:
    state, _, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="2") for i in range(2)])
    state.handlers.composites.upsert(composite_object())
    state.handlers.podgroups[BETA.api].upsert(child("leader", 1))
    state.handlers.pods.replace(members("leader", 1))
    [waiting] = decisions(state)
    assert waiting.status.reason is Reason.NOT_ENOUGH_MEMBERS
    assert "minGroupCount 2" in waiting.status.message

    state.handlers.composites.upsert(composite_object(min_group_count=1))
    state.handlers.podgroups[BETA.api].upsert(child("workers", 1))
    state.handlers.pods.replace(members("leader", 1) + members("workers", 1))
    [refused] = decisions(state)
    assert refused.status.reason is Reason.UNSUPPORTED_FIELD
    assert "spec.schedulingPolicy.gang.minGroupCount" in refused.status.message
    assert not refused.bindings


def test_a_basic_composite_leaves_each_child_a_gang_of_its_own() -> None:
    state, _, _ = make_state()
    state.handlers.nodes.replace([node_object("n0", cpu="3")])
    state.handlers.composites.upsert(composite_object(min_group_count=None))
    state.handlers.podgroups[BETA.api].upsert(child("leader", 1))
    state.handlers.podgroups[BETA.api].upsert(child("workers", 3))
    state.handlers.pods.replace(members("leader", 1) + members("workers", 3))
    made = {decision.group: decision for decision in decisions(state)}
    leader = GroupKey("default", "leader", KIND_NATIVE_POD_GROUP)
    workers = GroupKey("default", "workers", KIND_NATIVE_POD_GROUP)
    assert set(made) == {leader, workers}
    assert len(made[leader].bindings) == 1
    assert not made[workers].bindings  # 3 workers do not fit beside the leader: none goes


def test_nesting_and_a_basic_composite_with_topology_are_refused() -> None:
    state, _, _ = make_state()
    state.handlers.nodes.replace([node_object("n0", cpu="8")])
    state.handlers.composites.upsert(
        composite_object(
            min_group_count=None,
            schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/zone"}]},
        )
    )
    state.handlers.podgroups[BETA.api].upsert(child("leader", 1))
    state.handlers.pods.replace(members("leader", 1))
    [refused] = decisions(state)
    assert refused.group == JOB
    assert refused.status.reason is Reason.UNSUPPORTED_FIELD
    assert "spec.schedulingConstraints.topology" in refused.status.message

    state.handlers.composites.upsert(
        composite_object(min_group_count=1, parentCompositePodGroupName="top")
    )
    state.handlers.pods.replace(members("leader", 1))
    [nested] = decisions(state)
    assert "spec.parentCompositePodGroupName" in nested.status.message


def test_the_composite_gone_its_children_wait_for_it() -> None:
    state, _, _ = make_state()
    state.handlers.nodes.replace([node_object("n0", cpu="1")])  # too small: nothing gets bound
    leader_and_workers(state)
    decisions(state)
    state.handlers.composites.remove(composite_object())
    [waiting] = decisions(state)
    assert waiting.group == JOB
    assert waiting.status.reason is Reason.GROUP_NOT_FOUND


def test_a_child_status_follows_its_own_pods_and_the_composite_verdict() -> None:
    state, _, changed = make_state()
    state.handlers.nodes.replace([node_object("n0", cpu="1")])
    leader_and_workers(state)
    [refused] = decisions(state)
    changed.clear()
    state.handlers.groups.set_verdict(JOB, refused.status)
    leader = GroupKey("default", "leader", KIND_NATIVE_POD_GROUP)
    assert leader in changed, "the composite's verdict marks its children"
    model = ReadModel(state.scheduler, state.handlers)
    assert [pod.name for pod in model.members(leader)] == ["leader-0"]
    assert model.verdict(leader) == refused.status


def test_disruption_all_and_preemption_never_reach_the_policy() -> None:
    state, _, _ = make_state()
    state.handlers.composites.upsert(
        composite_object(disruptionMode={"all": {}}, preemptionPolicy="Never", priority=5)
    )
    state.handlers.podgroups[BETA.api].upsert(child("leader", 1))
    state.handlers.podgroups[BETA.api].upsert(child("workers", 1))
    policy = state.scheduler.policy(JOB)
    assert policy is not None
    assert policy.evict_whole
    assert policy.no_preemption is not None
    assert policy.priority == 5


def test_an_unreadable_composite_is_reported_and_its_children_wait() -> None:
    state, invalid, _ = make_state()
    state.handlers.nodes.replace([node_object("n0", cpu="8")])
    bad = composite_object()
    bad["spec"]["schedulingPolicy"] = {"gang": {"minGroupCount": 0}}
    assert state.handlers.composites.upsert(bad) is None
    assert invalid
    assert "minGroupCount" in invalid[0].message
    assert invalid[0].kind == "CompositePodGroup"
    state.handlers.podgroups[BETA.api].upsert(child("leader", 1))
    state.handlers.pods.replace(members("leader", 1))
    [waiting] = decisions(state)
    assert waiting.status.reason is Reason.GROUP_NOT_FOUND


def test_a_preempted_composite_and_its_children_say_so() -> None:
    state, _, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="2") for i in range(2)])
    leader_and_workers(state)
    decisions(state)
    state.handlers.groups.preempted(JOB, "4 pods (the whole gang) preempted")
    for key in (JOB, GroupKey("default", "workers", KIND_NATIVE_POD_GROUP)):
        condition = state.handlers.groups.podgroups[key].status.condition("DisruptionTarget")
        assert condition is not None
        assert condition.reason == "PreemptionByScheduler"
