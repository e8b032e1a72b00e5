"""The handlers with Kueue's Workloads: the pods of a job Kueue admitted are one gang.

The real core decides here (no runtime I/O): an admitted Workload's pods are placed
whole (its pod sets as roles, each to its admitted count) or not at all; a pod Kueue
labelled whose Workload is not known yet, or not admitted, waits; an eviction (the
Workload no longer admitted) takes the gang away from the pods that are left.
"""

from __future__ import annotations

from typing import Any

from coscheduler.api.adapters import kueue, sigs
from coscheduler.api.reasons import Reason
from coscheduler.core.group import KIND_KUEUE, GroupKey
from coscheduler.core.planner import Decision
from coscheduler.core.preemption import Mode, PreemptionSettings
from coscheduler.core.scheduler import Scheduler, SchedulerSettings
from coscheduler.runtime.handlers.base import InvalidObject
from tests.builders import TOLD_AT_ONCE, job_object, node_object, pod_object, podgroup_object
from tests.fed import Fed

WORKLOAD = "job-train-1a2b3"
KEY = GroupKey("default", WORKLOAD, KIND_KUEUE)
JOB_OWNER = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "name": "train",
    "uid": "uid-job-train",
    "controller": True,
}


def make_state() -> tuple[Fed, list[InvalidObject]]:
    invalid: list[InvalidObject] = []
    state = Fed(Scheduler(lambda: 0.0, TOLD_AT_ONCE), on_invalid=invalid.append)
    state.handlers.jobs.replace([job_object("train", scheduler="coscheduler")])
    return state, invalid


def kueue_workload(
    pod_sets: dict[str, int], *, admitted: dict[str, int] | None = None, uid: str = "wl-1"
) -> dict[str, Any]:
    """A Workload as Kueue v0.17 writes it for Job ``train``; ``admitted``: each pod set's
    assigned count (None: not admitted)."""
    status: dict[str, Any] = {}
    if admitted is not None:
        status = {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": name, "flavors": {"cpu": "default"}, "count": count}
                    for name, count in admitted.items()
                ],
            },
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
                {"type": "Admitted", "status": "True", "reason": "Admitted"},
            ],
        }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": WORKLOAD,
            "namespace": "default",
            "uid": uid,
            "ownerReferences": [JOB_OWNER],
        },
        "spec": {
            "queueName": "lq",
            "priority": 5,
            "podSets": [{"name": name, "count": count} for name, count in pod_sets.items()],
        },
        "status": status,
    }


def member(name: str, pod_set: str = "main") -> dict[str, Any]:
    return pod_object(name, owner="train", labels={kueue.POD_SET_LABEL: pod_set})


def decisions(state: Fed) -> list[Decision]:
    made = []
    while (decision := state.scheduler.next_decision()) is not None:
        made.append(decision)
    return made


def test_an_admitted_job_is_placed_whole_once_its_workload_is_seen() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(4)])
    state.handlers.pods.replace([member(f"train-{i}") for i in range(4)])

    [waiting] = decisions(state)
    assert waiting.bindings == ()
    assert waiting.status.reason is Reason.GROUP_NOT_FOUND
    assert "not admitted by Kueue" in waiting.status.message

    state.handlers.kueue_workloads.upsert(kueue_workload({"main": 4}, admitted={"main": 4}))
    [placed] = decisions(state)
    assert placed.group == KEY
    assert len(placed.bindings) == 4
    assert state.handlers.groups.podgroups[KEY].spec.min_member == 4
    assert state.handlers.groups.podgroups[KEY].spec.priority == 5


def test_an_admitted_gang_that_does_not_fit_places_none() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(3)])
    state.handlers.kueue_workloads.upsert(kueue_workload({"main": 4}, admitted={"main": 4}))
    state.handlers.pods.replace([member(f"train-{i}") for i in range(4)])

    [refused] = decisions(state)
    assert refused.group == KEY
    assert refused.bindings == ()
    assert refused.status.reason is Reason.NOT_ENOUGH_RESOURCES


def test_a_workload_not_admitted_holds_its_pods() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(4)])
    state.handlers.kueue_workloads.upsert(kueue_workload({"main": 4}))
    state.handlers.pods.replace([member(f"train-{i}") for i in range(4)])

    [waiting] = decisions(state)
    assert waiting.bindings == ()
    assert waiting.status.reason is Reason.GROUP_NOT_FOUND
    assert KEY not in state.handlers.groups.podgroups


def test_pod_sets_are_roles_each_to_its_admitted_count() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(3)])
    # Partial admission: 2 of the 3 workers.
    state.handlers.kueue_workloads.upsert(
        kueue_workload({"driver": 1, "workers": 3}, admitted={"driver": 1, "workers": 2})
    )
    state.handlers.pods.replace([member("w-0", "workers"), member("w-1", "workers")])

    [short] = decisions(state)
    assert short.bindings == ()
    assert short.status.reason is Reason.NOT_ENOUGH_MEMBERS
    assert state.handlers.groups.podgroups[KEY].spec.role_minimums() == {"driver": 1, "workers": 2}

    state.handlers.pods.upsert(member("d-0", "driver"))
    [placed] = decisions(state)
    assert len(placed.bindings) == 3


def test_an_evicted_workload_takes_the_gang_away() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(3)])
    state.handlers.kueue_workloads.upsert(kueue_workload({"main": 4}, admitted={"main": 4}))
    state.handlers.pods.replace([member(f"train-{i}") for i in range(4)])
    assert KEY in state.handlers.groups.podgroups

    state.handlers.kueue_workloads.upsert(kueue_workload({"main": 4}))
    assert KEY not in state.handlers.groups.podgroups
    [waiting] = decisions(state)
    assert waiting.bindings == ()
    assert waiting.status.reason is Reason.GROUP_NOT_FOUND


def test_a_pod_kueue_did_not_label_is_not_kueues() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object("n0", cpu="1")])
    state.handlers.kueue_workloads.upsert(kueue_workload({"main": 4}, admitted={"main": 4}))
    uid = state.handlers.pods.upsert(pod_object("alone"))
    assert uid is not None
    pod = state.scheduler.pod(uid)
    assert pod is not None
    assert pod.kueue_workload is None


def test_an_unreadable_workload_is_reported_and_its_pods_wait() -> None:
    state, invalid = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(4)])
    bad = kueue_workload({"main": 4}, admitted={"other": 4})
    state.handlers.kueue_workloads.upsert(bad)
    state.handlers.pods.replace([member(f"train-{i}") for i in range(4)])

    [complaint] = invalid
    assert "'other' is no pod set" in complaint.message
    [waiting] = decisions(state)
    assert waiting.bindings == ()


def test_pods_named_by_kueues_workload_annotation_join_it_whatever_owns_them() -> None:
    # A JobSet's pods: owned by its child Jobs, the Workload by the JobSet.
    state, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(2)])
    workload = kueue_workload({"main": 2}, admitted={"main": 2})
    workload["metadata"]["ownerReferences"] = [{**JOB_OWNER, "kind": "JobSet", "uid": "js"}]
    state.handlers.kueue_workloads.upsert(workload)
    for i in range(2):
        pod = member(f"js-{i}")
        pod["metadata"]["annotations"] = {"kueue.x-k8s.io/workload": WORKLOAD}
        state.handlers.pods.upsert(pod)

    [placed] = decisions(state)
    assert placed.group == KEY
    assert len(placed.bindings) == 2


def test_plain_pods_join_the_workload_of_their_kueue_pod_group() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(2)])
    state.handlers.pods.replace([
        pod_object(f"p-{i}", labels={kueue.POD_GROUP_LABEL: WORKLOAD, kueue.POD_SET_LABEL: "x"})
        for i in range(2)
    ])  # fmt: skip
    [waiting] = decisions(state)
    assert waiting.group == KEY
    assert waiting.bindings == ()

    workload = kueue_workload({"x": 2}, admitted={"x": 2})
    workload["metadata"]["ownerReferences"] = []  # a pod group's Workload: no controller
    state.handlers.kueue_workloads.upsert(workload)
    [placed] = decisions(state)
    assert len(placed.bindings) == 2


def test_kueue_queue_stacks_one_of_our_queues_on_kueues_quota() -> None:
    stacked = Fed(Scheduler(lambda: 0.0), kueue_queue="research")
    stacked.handlers.jobs.replace([job_object("train", scheduler="coscheduler")])
    stacked.handlers.kueue_workloads.upsert(kueue_workload({"main": 1}, admitted={"main": 1}))
    stacked.handlers.pods.upsert(member("train-0"))
    assert stacked.handlers.groups.podgroups[KEY].spec.queue == "research"

    state, _ = make_state()
    state.handlers.kueue_workloads.upsert(kueue_workload({"main": 1}, admitted={"main": 1}))
    state.handlers.pods.upsert(member("train-0"))
    assert state.handlers.groups.podgroups[KEY].spec.queue == "default"


def test_an_admitted_gang_waits_for_kueues_victims_and_evicts_none_itself() -> None:
    """Kueue evicts Workloads to admit one; were ours to preempt too, a lower gang would
    go for room that Kueue's victims are already freeing."""
    settings = SchedulerSettings(preemption=PreemptionSettings(mode=Mode.ON))
    state = Fed(Scheduler(lambda: 0.0, settings))
    state.handlers.jobs.replace([job_object("train", scheduler="coscheduler")])
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(4)])
    state.handlers.podgroups[sigs.API].upsert(podgroup_object("low", 4, priority=0))
    low = [
        pod_object(f"low-{i}", group="low", node=f"n{i}", priority=0, phase="Running")
        for i in range(4)
    ]
    state.handlers.kueue_workloads.upsert(kueue_workload({"main": 4}, admitted={"main": 4}))
    state.handlers.pods.replace([*low, *(member(f"train-{i}") for i in range(4))])

    policy = state.scheduler.policy(KEY)
    assert policy is not None
    assert policy.priority == 5
    assert policy.no_preemption is not None
    assert "Kueue" in policy.no_preemption
    [waiting] = [d for d in decisions(state) if d.group == KEY]
    assert waiting.bindings == ()
    assert waiting.preemption is not None
    assert not waiting.preemption.evict
    assert "Kueue preempts" in waiting.preemption.plan.summary
