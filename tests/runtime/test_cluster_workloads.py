"""The handlers with native Workloads: each pod's spec.workloadRef resolved into a gang, or none.

The real core decides here (no runtime I/O): a Workload's ``gang`` podGroup is
one group per replica key with ``minMember = minCount``, a ``basic`` one's
pods go alone, and a pod naming a Workload not seen yet waits for it.
"""

from __future__ import annotations

from typing import Any

from coscheduler.api.reasons import Reason
from coscheduler.core.group import KIND_POD, KIND_WORKLOAD, GroupKey
from coscheduler.core.planner import Decision
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import InvalidObject
from tests.builders import TOLD_AT_ONCE, node_object, pod_object, workload_object, workload_ref
from tests.fed import Fed


def make_state(**settings: Any) -> tuple[Fed, list[InvalidObject]]:
    invalid: list[InvalidObject] = []
    return Fed(Scheduler(lambda: 0.0, TOLD_AT_ONCE), on_invalid=invalid.append, **settings), invalid


def member(name: str, pod_group: str = "workers", replica: str | None = None, **pod: Any) -> Any:
    return pod_object(name, spec_extra=workload_ref("train", pod_group, replica), **pod)


def decisions(state: Fed) -> list[Decision]:
    made = []
    while (decision := state.scheduler.next_decision()) is not None:
        made.append(decision)
    return made


def gang_key(name: str = "train/workers") -> GroupKey:
    return GroupKey("default", name, KIND_WORKLOAD)


def test_a_gang_of_four_is_placed_whole_once_its_workload_is_seen() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(4)])
    state.handlers.pods.replace([member(f"w-{i}") for i in range(4)])

    [waiting] = decisions(state)
    assert waiting.status.reason is Reason.GROUP_NOT_FOUND
    assert "Workload default/train podGroup workers is not known" in waiting.status.message

    state.handlers.workloads.replace([workload_object("train", {"workers": 4})])
    [placed] = decisions(state)
    assert placed.group == gang_key()
    assert len(placed.bindings) == 4
    assert state.handlers.groups.podgroups[gang_key()].spec.min_member == 4


def test_a_gang_that_does_not_fit_whole_places_none() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(3)])
    state.handlers.workloads.replace([workload_object("train", {"workers": 4})])
    state.handlers.pods.replace([member(f"w-{i}") for i in range(4)])

    [refused] = decisions(state)
    assert refused.bindings == ()
    assert refused.status.reason is Reason.NOT_ENOUGH_RESOURCES
    assert "4 pods of Workload default/train podGroup workers" in refused.status.message


def test_each_replica_key_is_a_gang_of_its_own() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object("n0", cpu="3")])
    state.handlers.workloads.replace([workload_object("train", {"workers": 2})])
    state.handlers.pods.replace(
        [member(f"a-{i}", replica="a") for i in range(2)]
        + [member(f"b-{i}", replica="b") for i in range(2)]
    )

    made = decisions(state)
    by_group = {d.group.name: len(d.bindings) for d in made}
    # Room for three: one gang is placed whole, the other not at all.
    assert sorted(by_group.values()) == [0, 2]
    assert set(by_group) == {"train/workers/a", "train/workers/b"}


def test_a_basic_pod_group_s_pods_go_each_on_its_own() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object("n0", cpu="2")])
    state.handlers.workloads.replace([workload_object("train", {"workers": 4, "web": None})])
    state.handlers.pods.replace([member(f"web-{i}", "web") for i in range(3)])

    made = decisions(state)
    assert {d.group.kind for d in made} == {KIND_POD}
    assert sum(len(d.bindings) for d in made) == 2  # two fit; the third waits alone
    assert not any(key.kind == KIND_WORKLOAD for key in state.handlers.groups.podgroups)


def test_a_workload_deleted_or_recreated_regroups_its_pods() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object("n0", cpu="8")])
    state.handlers.pods.replace([member(f"w-{i}") for i in range(3)])
    gang = workload_object("train", {"workers": 4})
    state.handlers.workloads.upsert(gang)
    [short] = decisions(state)
    assert short.status.reason is Reason.NOT_ENOUGH_MEMBERS

    state.handlers.workloads.remove(gang)
    assert gang_key() not in state.handlers.groups.podgroups
    [gone] = decisions(state)
    assert gone.status.reason is Reason.GROUP_NOT_FOUND

    # Recreated (a new uid) with the same podGroup now basic: each pod alone.
    state.handlers.workloads.upsert(workload_object("train", {"workers": None}, uid="uid-2"))
    made = decisions(state)
    assert len(made) == 3
    assert all(d.group.kind == KIND_POD and len(d.bindings) == 1 for d in made)


def test_a_pod_group_the_workload_lacks_waits_as_not_found() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object("n0")])
    state.handlers.workloads.replace([workload_object("train", {"workers": 1})])
    state.handlers.pods.replace([member("x-0", "typo")])
    [waiting] = decisions(state)
    assert waiting.status.reason is Reason.GROUP_NOT_FOUND
    assert "podGroup typo" in waiting.status.message


def test_a_gang_whose_last_pod_is_gone_is_forgotten() -> None:
    state, _ = make_state()
    state.handlers.workloads.replace([workload_object("train", {"workers": 2})])
    state.handlers.pods.replace([member("w-0"), member("w-1")])
    assert gang_key() in state.handlers.groups.podgroups
    assert {p.name for p in state.handlers.groups.group_pods(gang_key())} == {"w-0", "w-1"}

    state.handlers.pods.replace([member("w-0")])
    assert gang_key() in state.handlers.groups.podgroups
    state.handlers.pods.replace([])
    assert gang_key() not in state.handlers.groups.podgroups
    assert state.scheduler.policy(gang_key()) is None


def test_another_scheduler_s_workload_pods_make_no_gang_here() -> None:
    state, _ = make_state()
    state.handlers.workloads.replace([workload_object("train", {"workers": 2})])
    state.handlers.pods.replace([member(f"w-{i}", scheduler="default-scheduler") for i in range(2)])
    assert state.handlers.groups.podgroups == {}
    assert decisions(state) == []


def test_a_workload_that_cannot_be_read_is_reported_and_its_pods_wait() -> None:
    state, invalid = make_state()
    state.handlers.nodes.replace([node_object("n0")])
    bad = workload_object("train", {"workers": 1})
    bad["spec"]["podGroups"][0]["policy"] = {"basic": {}, "gang": {"minCount": 1}}
    state.handlers.workloads.replace([bad])
    state.handlers.pods.replace([member("w-0")])

    [report] = invalid
    assert (report.kind, report.name) == ("Workload", "train")
    assert report.api_version == "scheduling.k8s.io/v1alpha1"
    assert "exactly one of basic and gang" in report.message
    [waiting] = decisions(state)
    assert waiting.status.reason is Reason.GROUP_NOT_FOUND


def test_workloads_outside_the_namespaces_served_are_not_read() -> None:
    state, _ = make_state(namespaces=frozenset({"mine"}))
    assert state.handlers.workloads.upsert(workload_object("train", {"workers": 1})) is None
    assert state.handlers.workloads.upsert(
        workload_object("train", {"w": 1}, namespace="mine")
    ) == (
        "mine",
        "train",
    )


def test_a_metadata_change_keeps_the_gang_and_its_status() -> None:
    state, _ = make_state()
    state.handlers.workloads.replace([workload_object("train", {"workers": 2})])
    state.handlers.pods.replace([member("w-0"), member("w-1")])
    before = state.handlers.groups.podgroups[gang_key()]
    relabelled = workload_object("train", {"workers": 2})
    relabelled["metadata"]["labels"] = {"team": "ml"}
    state.handlers.workloads.upsert(relabelled)
    assert state.handlers.groups.podgroups[gang_key()] is before
