"""The gang invariant checker of e2e and bench (e2e/gangs.py), on synthetic pod timelines."""

from __future__ import annotations

from typing import Any

from e2e.gangs import PodEvent, gang_of, min_member_of, min_members, partial_gangs, slim

Json = dict[str, Any]
NS = "team"
KNOWN = {(NS, "g"): 3}


def pod(
    name: str,
    *,
    node: str | None = None,
    group: str | None = "g",
    deleting: bool = False,
    scheduler: str = "coscheduler",
    **meta: Any,
) -> Json:
    metadata: Json = {"name": name, "namespace": NS, "uid": f"uid-{name}", **meta}
    if group is not None:
        metadata["labels"] = {"scheduling.sigs.k8s.io/pod-group": group}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-25T00:00:00Z"
    spec: Json = {"schedulerName": scheduler}
    if node is not None:
        spec["nodeName"] = node
    return {"metadata": metadata, "spec": spec, "status": {"phase": "Pending"}}


class Trace:
    """A timeline written in order: ``add``, ``bind``, ``delete`` at given seconds."""

    def __init__(self) -> None:
        self.events: list[PodEvent] = []

    def add(self, at: float, *names: str, **kwargs: Any) -> Trace:
        self.events += [PodEvent(at, "ADDED", pod(n, **kwargs)) for n in names]
        return self

    def bind(self, at: float, *names: str, **kwargs: Any) -> Trace:
        self.events += [PodEvent(at, "MODIFIED", pod(n, node="n1", **kwargs)) for n in names]
        return self

    def delete(self, at: float, *names: str, grace: float = 0.0) -> Trace:
        for name in names:
            self.events.append(PodEvent(at, "MODIFIED", pod(name, node="n1", deleting=True)))
            self.events.append(PodEvent(at + grace, "DELETED", pod(name, node="n1", deleting=True)))
        return self


def test_a_gang_bound_whole_is_no_violation() -> None:
    trace = Trace().add(0, "a", "b", "c").bind(1, "a", "b", "c")
    assert partial_gangs(trace.events, KNOWN, end=100) == []


def test_a_member_bound_alone_and_left_so_is_a_violation() -> None:
    trace = Trace().add(0, "a", "b", "c").bind(1, "a").bind(60, "b")
    [violation] = partial_gangs(trace.events, KNOWN, end=100)
    assert violation.gang == (NS, "g")
    assert (violation.start, violation.end, violation.open_at_end) == (1, 100, True)
    assert (violation.bound, violation.fewest_bound, violation.most_bound) == (2, 1, 2)
    assert violation.bound_pods == ("a @ 1.0s", "b @ 60.0s")
    assert "team/g partially bound for 99.0s" in str(violation)
    assert "2/3 bound (1-2 during it)" in str(violation)


def test_a_replacement_bound_then_the_others_evicted_is_a_violation() -> None:
    # Issue #26: a whole gang loses a member, its replacement is bound, then the other
    # members go: the replacement was bound into a gang left short.
    trace = (
        Trace()
        .add(0, "a", "b", "c")
        .bind(1, "a", "b", "c")
        .delete(50, "c", grace=1)
        .add(51, "c2")
        .bind(55, "c2")
        .delete(57, "a", "b", grace=1)
    )
    [violation] = partial_gangs(trace.events, KNOWN, end=100)
    assert (violation.start, violation.end) == (57, 100)
    assert violation.bound == 1
    assert violation.bound_pods == ("c2 @ 55.0s",)


def test_a_whole_gang_losing_a_member_long_after_is_no_violation() -> None:
    trace = Trace().add(0, "a", "b", "c").bind(1, "a", "b", "c").delete(60, "c", grace=5)
    assert partial_gangs(trace.events, KNOWN, end=200) == []


def test_a_gang_made_whole_again_by_its_replacement_is_no_violation() -> None:
    # A member evicted (a refusal halfway through a victim gang), its replacement placed
    # back 30 s later: the binding that completes the gang is not a partial binding.
    trace = (
        Trace()
        .add(0, "a", "b", "c")
        .bind(1, "a", "b", "c")
        .delete(50, "c", grace=1)
        .add(51, "c2")
        .bind(80, "c2")
    )
    assert partial_gangs(trace.events, KNOWN, end=100) == []
    # Bound alone long after the others, the first member still is one.
    late = Trace().add(0, "a", "b", "c").bind(1, "a").bind(30, "b", "c")
    [violation] = partial_gangs(late.events, KNOWN, end=100)
    assert violation.bound_pods == ("a @ 1.0s", "b @ 30.0s")  # c made it whole
    assert (violation.start, violation.end, violation.open_at_end) == (1, 30, False)


def test_a_partial_moment_during_a_bind_burst_is_no_violation() -> None:
    trace = Trace().add(0, "a", "b", "c").bind(1, "a").bind(4, "b").bind(9, "c")
    assert partial_gangs(trace.events, KNOWN, end=100) == []
    # The same burst, longer than allowed.
    assert partial_gangs(trace.events, KNOWN, end=100, burst_seconds=5)


def test_an_interval_open_at_the_end_counts_until_the_end() -> None:
    trace = Trace().add(0, "a", "b", "c").bind(1, "a")
    assert partial_gangs(trace.events, KNOWN, end=10) == []  # 9 s: within the burst
    [violation] = partial_gangs(trace.events, KNOWN, end=12)
    assert violation.open_at_end
    assert violation.seconds == 11
    # Without an end, the trace ends at its last event.
    assert partial_gangs(trace.events, KNOWN) == []


def test_a_terminating_member_is_not_bound() -> None:
    trace = Trace().add(0, "a", "b", "c").bind(1, "a", "b", "c")
    trace.events.append(PodEvent(2, "MODIFIED", pod("c", node="n1", deleting=True)))
    trace.bind(3, "c2")  # never added: its first sighting already bound
    assert partial_gangs(trace.events, KNOWN, end=100) == []
    trace.events.append(PodEvent(4, "MODIFIED", pod("c2", node="n1", deleting=True)))
    [violation] = partial_gangs(trace.events, KNOWN, end=100)
    assert violation.bound == 2
    assert violation.start == 4


def test_a_finished_member_still_counts_as_bound() -> None:
    trace = Trace().add(0, "a", "b", "c").bind(1, "a", "b", "c")
    done = pod("a", node="n1")
    done["status"]["phase"] = "Succeeded"
    trace.events.append(PodEvent(5, "MODIFIED", done))
    assert partial_gangs(trace.events, KNOWN, end=100) == []


def test_other_schedulers_pods_and_unknown_groups_are_not_judged() -> None:
    trace = Trace().add(0, "a", "b", "c", scheduler="default-scheduler")
    trace.bind(1, "a", scheduler="default-scheduler")
    trace.add(0, "x", group="unknown").bind(1, "x", group="unknown")
    assert partial_gangs(trace.events, KNOWN, end=100) == []
    assert partial_gangs(trace.events, KNOWN, end=100, scheduler_names=["default-scheduler"])


def test_pods_already_bound_when_the_trace_starts_were_not_bound_by_it() -> None:
    trace = Trace().bind(0, "a")  # a listing: one member was on a node before the watch
    assert partial_gangs(trace.events, KNOWN, start=0, end=100) == []
    assert partial_gangs(trace.events, KNOWN, end=100)


def test_membership_by_legacy_labels_job_owner_and_workload_ref() -> None:
    known = min_members(
        [
            {"apiVersion": "scheduling.x-k8s.io/v1alpha1",
             "metadata": {"namespace": NS, "name": "pg"}, "spec": {"minMember": 4}},
            {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
             "metadata": {"namespace": NS, "name": "train"}, "spec": {}},
            {"apiVersion": "scheduling.k8s.io/v1alpha1",
             "metadata": {"namespace": NS, "name": "wl"},
             "spec": {"podGroups": [
                 {"name": "workers", "policy": {"gang": {"minCount": 2}}},
                 {"name": "solo", "policy": {"basic": {}}},
             ]}},
        ]
    )  # fmt: skip
    assert known == {(NS, "pg"): 4, (NS, "train"): 1, (NS, "wl/workers"): 2}
    legacy = pod("p", group=None)
    legacy["metadata"]["labels"] = {"pod-group.scheduling.sigs.k8s.io": "pg"}
    assert gang_of(legacy, known) == (NS, "pg")
    job_pod = pod("j", group=None, ownerReferences=[{"kind": "Job", "name": "train",
                                                     "controller": True}])  # fmt: skip
    assert gang_of(job_pod, known) == (NS, "train")
    orphan = pod("o", group=None, ownerReferences=[{"kind": "Job", "name": "other",
                                                    "controller": True}])  # fmt: skip
    assert gang_of(orphan, known) is None
    native = pod("w", group=None)
    native["spec"]["workloadRef"] = {"name": "wl", "podGroup": "workers"}
    assert gang_of(native, known) == (NS, "wl/workers")
    native["spec"]["workloadRef"]["podGroupReplicaKey"] = "r1"
    assert gang_of(native, known) == (NS, "wl/workers/r1")
    assert min_member_of((NS, "wl/workers/r1"), known) == 2
    assert min_member_of((NS, "wl/solo/r1"), known) is None


def test_each_workload_replica_is_judged_as_a_gang_of_its_own() -> None:
    known = {(NS, "wl/workers"): 2}

    def member(name: str, replica: str, node: str | None = None) -> Json:
        native = pod(name, group=None, node=node)
        native["spec"]["workloadRef"] = {
            "name": "wl", "podGroup": "workers", "podGroupReplicaKey": replica,
        }  # fmt: skip
        return native

    events = [
        PodEvent(1, "MODIFIED", member("a0", "a", "n1")),
        PodEvent(1, "MODIFIED", member("a1", "a", "n1")),
        PodEvent(2, "MODIFIED", member("b0", "b", "n1")),  # b's second member never bound
    ]
    [violation] = partial_gangs(events, known, end=100)
    assert violation.gang == (NS, "wl/workers/b")


def test_slim_keeps_what_the_checker_reads() -> None:
    full = pod("a", node="n1", deleting=True, ownerReferences=[{"kind": "Job"}])
    full["spec"]["containers"] = [{"name": "main"}]
    full["metadata"]["annotations"] = {"big": "x" * 1000}
    small = slim(full)
    assert "containers" not in small["spec"]
    assert "annotations" not in small["metadata"]
    trace = [PodEvent(1, "ADDED", small)]
    assert partial_gangs(trace, KNOWN, end=100) == partial_gangs(
        [PodEvent(1, "ADDED", full)], KNOWN, end=100
    )


def test_a_native_podgroup_s_members_are_judged_apart_from_a_label_s_group() -> None:
    known = min_members(
        [
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "metadata": {"namespace": NS, "name": "g"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
            },
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "metadata": {"namespace": NS, "name": "solo"},
                "spec": {"schedulingPolicy": {"basic": {}}},
            },
        ]
    )
    assert known == {(NS, "native:g"): 2}
    member = pod("a", group=None)
    member["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    assert gang_of(member, known) == (NS, "native:g")
    assert slim(member)["spec"]["schedulingGroup"] == {"podGroupName": "g"}
    events = [PodEvent(1, "MODIFIED", {**member, "spec": {**member["spec"], "nodeName": "n1"}})]
    [violation] = partial_gangs(events, known, end=100)
    assert violation.gang == (NS, "native:g")
