"""The handlers: raw watch objects in, the real core fed; bad objects reported, never fatal."""

from __future__ import annotations

from dataclasses import dataclass

from coscheduler.api.adapters import sigs, xk8s
from coscheduler.api.labels import MIN_RUN_SECONDS_ANNOTATION
from coscheduler.api.pod import PodInfo
from coscheduler.api.reasons import Reason
from coscheduler.core.group import GroupKey
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.status import Code, Status
from coscheduler.runtime.handlers.base import InvalidObject
from coscheduler.runtime.handlers.registry import Handlers
from coscheduler.runtime.loop import _pod_message
from tests.builders import node_object, pod_object, podgroup_object
from tests.fed import Complaints


class Recorder:
    def __init__(self) -> None:
        self.changed: list[GroupKey] = []
        self.invalid: list[InvalidObject] = []


@dataclass(frozen=True)
class Cluster:
    """A scheduler and its handlers, fed by hand as the watches would feed them."""

    scheduler: Scheduler
    handlers: Handlers
    complaints: Complaints


def cluster(seen: Recorder | None = None, namespaces: frozenset[str] = frozenset()) -> Cluster:
    scheduler = Scheduler(lambda: 0.0)
    complaints = Complaints(None if seen is None else seen.invalid.append)
    handlers = Handlers.build(
        scheduler,
        complaints=complaints,
        group_changed=(lambda _key: None) if seen is None else seen.changed.append,
        namespaces=namespaces,
    )
    return Cluster(scheduler, handlers, complaints)


def make_state() -> tuple[Cluster, Recorder]:
    seen = Recorder()
    return cluster(seen), seen


def fed_pod(state: Cluster, raw: dict[str, object]) -> PodInfo | None:
    """The pod as the core holds it once its handler is given ``raw``."""
    uid = state.handlers.pods.upsert(raw)
    return None if uid is None else state.scheduler.pod(uid)


def test_a_malformed_pod_is_reported_and_the_others_still_schedule() -> None:
    state, seen = make_state()
    state.handlers.nodes.replace([node_object("n1")])
    bad = pod_object("bad", cpu="lots")
    state.handlers.pods.replace([bad, pod_object("good", cpu="1")])

    assert [(i.kind, i.name) for i in seen.invalid] == [("Pod", "bad")]
    assert "'lots'" in seen.invalid[0].message
    decision = state.scheduler.next_decision()
    assert decision is not None
    assert [b.uid for b in decision.bindings] == ["uid-default-good"]
    # Reported once, not at every event of the same pod.
    fed_pod(state, bad)
    assert len(seen.invalid) == 1


def test_amounts_past_what_the_core_counts_are_reported_not_fatal() -> None:
    # Found by tests/api/test_bad_input_properties.py: an overhead of 8Ei cpu (and a
    # request of 1e18 cpu, which the API server accepts) overflowed the core's int64
    # arrays at the next decision, stopping the loop.
    state, seen = make_state()
    huge = pod_object("huge", cpu="1")
    huge["spec"]["overhead"] = {"cpu": "8Ei"}
    big_node = node_object("n2", cpu="1e30")
    state.handlers.nodes.replace([node_object("n1"), big_node])
    state.handlers.pods.replace([huge, pod_object("good", cpu="1")])

    assert [(i.kind, i.name) for i in seen.invalid] == [("Node", "n2"), ("Pod", "huge")]
    assert "'8Ei' is more than coscheduler can count" in seen.invalid[1].message
    decision = state.scheduler.next_decision()
    assert decision is not None
    assert [b.uid for b in decision.bindings] == ["uid-default-good"]


def test_an_unreadable_pod_of_ours_that_waits_is_marked_so_its_condition_says_why() -> None:
    # Found by e2e/tests/test_bad_input.py: such a pod got one event, and once the
    # event expired (an hour) nothing said why it stayed Pending.
    state, seen = make_state()
    waiting = pod_object("waiting", cpu="1e18")
    bound = pod_object("bound", cpu="1e18", node="n1")
    theirs = pod_object("theirs", cpu="1e18", scheduler="default-scheduler")
    state.handlers.pods.replace([waiting, bound, theirs])
    assert [(i.name, i.waiting) for i in seen.invalid] == [
        ("waiting", True),
        ("bound", False),
        ("theirs", False),
    ]
    assert "uid-default-waiting" in state.complaints.waiting_uids
    assert "uid-default-bound" not in state.complaints.waiting_uids
    # Corrected, it is an ordinary pod again.
    fed_pod(state, pod_object("waiting", cpu="1"))
    assert "uid-default-waiting" not in state.complaints.waiting_uids


def test_a_malformed_node_is_reported_and_dropped() -> None:
    state, seen = make_state()
    broken = node_object("n2")
    broken["status"]["allocatable"]["cpu"] = "eight"
    state.handlers.nodes.replace([node_object("n1"), broken])
    assert [i.name for i in seen.invalid] == ["n2"]
    assert [n.name for n in state.scheduler.snapshot.nodes()] == ["n1"]


def test_pods_of_an_unreadable_podgroup_are_told_why_not_that_it_does_not_exist() -> None:
    # Found by e2e/tests/test_bad_input.py: scheduler-plugins' schema lets minMember
    # reach 2**31-1; the group was refused, and its pods said "does not exist: create it".
    state, _ = make_state()
    state.handlers.nodes.replace([node_object("n1")])
    fed_pod(state, pod_object("w-0", group="train", group_label=xk8s.GROUP + "/pod-group"))
    state.handlers.podgroups[xk8s.API].upsert(
        podgroup_object("train", 2**31 - 1, api_version=xk8s.API.api_version)
    )
    key = GroupKey("default", "train")
    why = state.handlers.groups.unreadable_group(key)
    assert why is not None
    assert why.startswith("spec.minMember:")
    decision = state.scheduler.next_decision()
    assert decision is not None
    assert decision.why_pending is not None
    assert decision.why_pending.reason is Reason.GROUP_NOT_FOUND
    assert _pod_message(key, decision.why_pending, why) == (
        "PodGroup default/train cannot be read, so it is treated as missing: "
        "spec.minMember: Input should be less than or equal to 100000"
    )

    # Fixed, it is read; deleted or gone from a relist, nothing is said of it any more.
    state.handlers.podgroups[xk8s.API].upsert(
        podgroup_object("train", 1, api_version=xk8s.API.api_version, generation=2)
    )
    assert state.handlers.groups.unreadable_group(key) is None
    state.handlers.podgroups[sigs.API].upsert(podgroup_object("other", 0))
    assert state.handlers.groups.unreadable_group(GroupKey("default", "other")) is not None
    state.handlers.podgroups[sigs.API].replace([])
    assert state.handlers.groups.unreadable_group(GroupKey("default", "other")) is None


def test_a_status_someone_else_wrote_does_not_make_our_podgroup_unreadable() -> None:
    # Found by e2e/tests/test_bad_input.py: the schema lets status.allocated hold any
    # string; a status written with "x" in it made the whole group unreadable, its pods
    # stuck, and our writer never replaced the status it could not read.
    state, seen = make_state()
    state.handlers.podgroups[sigs.API].upsert(
        podgroup_object("g", 2, status={"allocated": {"cpu": "x"}})
    )
    assert seen.invalid == []
    group = state.handlers.groups.podgroups[GroupKey("default", "g")]
    assert group.spec.min_member == 2
    assert group.stored is None  # differs from anything ours: the writer replaces it
    # A bad spec is still refused, with the spec's reason.
    state.handlers.podgroups[sigs.API].upsert(
        podgroup_object("h", 0, status={"allocated": {"cpu": "x"}})
    )
    assert [i.name for i in seen.invalid] == ["h"]
    assert seen.invalid[0].message.startswith("spec.minMember")


def test_an_invalid_podgroup_is_reported_and_ignored() -> None:
    state, seen = make_state()
    state.handlers.podgroups[sigs.API].replace([podgroup_object("zero", 0)])
    assert [i.kind for i in seen.invalid] == ["PodGroup"]
    assert "minMember" in seen.invalid[0].message
    assert state.handlers.groups.podgroups == {}


def test_relist_forgets_what_disappeared() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object("n1"), node_object("n2")])
    state.handlers.pods.replace([pod_object("a", group="g", node="n1"), pod_object("b", group="g")])
    state.handlers.podgroups[sigs.API].replace([podgroup_object("g", 2)])
    key = GroupKey("default", "g")
    assert {p.name for p in state.handlers.groups.group_pods(key)} == {"a", "b"}

    state.handlers.nodes.replace([node_object("n1")])
    state.handlers.pods.replace([pod_object("a", group="g", node="n1")])
    state.handlers.podgroups[sigs.API].replace([])
    assert [n.name for n in state.scheduler.snapshot.nodes()] == ["n1"]
    assert {p.name for p in state.handlers.groups.group_pods(key)} == {"a"}
    assert key not in state.handlers.groups.podgroups


def test_group_members_include_finished_pods_for_status() -> None:
    state, seen = make_state()
    state.handlers.pods.replace(
        [
            pod_object("done", group="g", node="n1", phase="Succeeded"),
            pod_object("failed", group="g", node="n1", phase="Failed"),
            pod_object("waiting", group="g"),
        ]
    )
    key = GroupKey("default", "g")
    assert {p.phase for p in state.handlers.groups.group_pods(key)} == {
        "Succeeded",
        "Failed",
        "Pending",
    }
    assert key in seen.changed


def test_priority_class_resolves_group_priority() -> None:
    state, _ = make_state()
    state.handlers.priority_classes.replace([{"metadata": {"name": "urgent"}, "value": 1000}])
    state.handlers.podgroups[sigs.API].replace(
        [podgroup_object("g", 1, priorityClassName="urgent")]
    )
    policy = state.scheduler.policy(GroupKey("default", "g"))
    assert policy is not None
    assert policy.priority == 1000
    state.handlers.priority_classes.upsert({"metadata": {"name": "urgent"}, "value": 5})
    policy = state.scheduler.policy(GroupKey("default", "g"))
    assert policy is not None
    assert policy.priority == 5


def test_verdicts_notify_only_on_change() -> None:
    state, seen = make_state()
    key = GroupKey("default", "g")
    no_room = Status(Code.UNSCHEDULABLE, Reason.NOT_ENOUGH_RESOURCES, "no room")
    state.handlers.groups.set_verdict(key, no_room)
    state.handlers.groups.set_verdict(
        key, Status(Code.UNSCHEDULABLE, Reason.NOT_ENOUGH_RESOURCES, "no room")
    )
    state.handlers.groups.set_verdict(key, None)
    state.handlers.groups.set_verdict(key, None)
    assert seen.changed == [key, key]


def test_pods_outside_the_watched_namespaces_count_but_are_not_scheduled() -> None:
    state = cluster(namespaces=frozenset({"mine"}))
    state.handlers.nodes.replace([node_object("n1", cpu="4")])
    state.handlers.pods.replace(
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
    key = state.handlers.podgroups[sigs.API].upsert(raw)
    assert key is not None
    seen.changed.clear()

    # Our own status write coming back: the stored status already says so.
    written = {"phase": "Pending", "pending": 2}
    group = state.handlers.groups.podgroups[key]
    state.handlers.groups.set_status(
        key, group.adapter.read_status(written), group.adapter.stored_form(written)
    )
    echo = {**raw, "status": written}
    state.handlers.podgroups[sigs.API].upsert(echo)
    assert seen.changed == []

    # Someone else edited the status: the writer must put it right.
    state.handlers.podgroups[sigs.API].upsert({**raw, "status": {"phase": "Running", "running": 5}})
    assert seen.changed == [key]
    assert state.handlers.groups.podgroups[key].status.phase == "Running"

    # A new spec (generation 2) reaches the scheduler's policy.
    changed = podgroup_object("train", 3, generation=2)
    state.handlers.podgroups[sigs.API].upsert(changed)
    policy = state.scheduler.policy(key)
    assert policy is not None
    assert policy.min_member == 3


def test_podgroups_outside_the_watched_namespaces_are_not_ours() -> None:
    seen = Recorder()
    state = cluster(seen, namespaces=frozenset({"team-a"}))
    elsewhere = podgroup_object("train", 2)  # in "default"
    state.handlers.podgroups[sigs.API].replace([elsewhere])
    assert state.handlers.groups.podgroups == {}
    assert seen.changed == []


# -- PodGroups of two APIs ----------------------------------------------------

XK8S = "scheduling.x-k8s.io/v1alpha1"


def test_a_scheduling_x_k8s_io_group_is_scheduled_as_ours() -> None:
    state, _ = make_state()
    key = state.handlers.podgroups[xk8s.API].upsert(
        podgroup_object("train", 3, api_version=XK8S, scheduleTimeoutSeconds=30)
    )
    assert key is not None
    assert state.handlers.groups.podgroups[key].api is xk8s.API
    policy = state.scheduler.policy(key)
    assert policy is not None
    assert (policy.min_member, policy.schedule_timeout_seconds) == (3, 30)


def test_ours_wins_a_name_held_in_both_apis_and_the_other_takes_over_when_it_goes() -> None:
    state, seen = make_state()
    theirs = podgroup_object("train", 4, api_version=XK8S)
    ours = podgroup_object("train", 2)
    key = state.handlers.podgroups[xk8s.API].upsert(theirs)
    assert key is not None
    state.handlers.podgroups[sigs.API].upsert(ours)

    def min_member() -> int | None:
        policy = state.scheduler.policy(key)
        return None if policy is None else policy.min_member

    assert (state.handlers.groups.podgroups[key].api, min_member()) == (sigs.API, 2)

    # Theirs changing while ours holds the name changes nothing.
    seen.changed.clear()
    state.handlers.podgroups[xk8s.API].upsert(
        podgroup_object("train", 5, api_version=XK8S, generation=2)
    )
    assert (state.handlers.groups.podgroups[key].api, min_member(), seen.changed) == (
        sigs.API,
        2,
        [],
    )

    state.handlers.podgroups[sigs.API].remove(ours)
    assert (state.handlers.groups.podgroups[key].api, min_member()) == (xk8s.API, 5)
    assert seen.changed == [key]

    state.handlers.podgroups[xk8s.API].remove(theirs)
    assert key not in state.handlers.groups.podgroups
    assert state.scheduler.policy(key) is None


def test_a_relist_of_one_api_forgets_only_that_api_s_groups() -> None:
    state, _ = make_state()
    state.handlers.podgroups[sigs.API].replace([podgroup_object("ours", 2)])
    state.handlers.podgroups[xk8s.API].replace([podgroup_object("theirs", 2, api_version=XK8S)])
    state.handlers.podgroups[xk8s.API].replace([])
    assert [key.name for key in state.handlers.groups.podgroups] == ["ours"]


def test_an_invalid_x_k8s_io_group_is_reported_under_its_own_api() -> None:
    state, seen = make_state()
    state.handlers.podgroups[xk8s.API].upsert(
        podgroup_object("bad", 2, api_version=XK8S, minResources={"cpu": "lots"})
    )
    [invalid] = seen.invalid
    assert (invalid.kind, invalid.api_version, invalid.name) == ("PodGroup", XK8S, "bad")
    assert "lots" in invalid.message
    assert state.handlers.groups.podgroups == {}


def test_our_write_of_an_x_k8s_io_status_coming_back_is_no_change_but_another_s_is() -> None:
    state, seen = make_state()
    raw = podgroup_object("train", 2, api_version=XK8S)
    key = state.handlers.podgroups[xk8s.API].upsert(raw)
    assert key is not None
    group = state.handlers.groups.podgroups[key]
    ours = group.status.model_copy(update={"conditions": [], "phase": "Scheduled"})
    written = xk8s.ADAPTER.render_status(ours, [])
    state.handlers.groups.set_status(key, ours, xk8s.ADAPTER.stored_form(written))
    seen.changed.clear()

    state.handlers.podgroups[xk8s.API].upsert({**raw, "status": {"phase": "Scheduling"}})
    assert seen.changed == []  # the same in their shape: our own write coming back

    state.handlers.podgroups[xk8s.API].upsert({**raw, "status": {"phase": "Finished"}})
    assert seen.changed == [key]  # someone else wrote: the writer puts it right
    assert state.handlers.groups.podgroups[key].status.phase == "Finished"


def test_the_min_run_seconds_annotation_protects_a_group_and_a_bad_one_is_reported() -> None:
    state, seen = make_state()
    protected = podgroup_object("steady", 1)
    protected["metadata"]["annotations"] = {MIN_RUN_SECONDS_ANNOTATION: "600"}
    bad = podgroup_object("typo", 1)
    bad["metadata"]["annotations"] = {MIN_RUN_SECONDS_ANNOTATION: "ten minutes"}
    state.handlers.podgroups[sigs.API].replace([protected, bad])
    steady = state.scheduler.policy(GroupKey("default", "steady"))
    assert steady is not None
    assert steady.min_run_seconds == 600
    typo = state.scheduler.policy(GroupKey("default", "typo"))
    assert typo is not None
    assert typo.min_run_seconds is None
    assert [(i.kind, i.name) for i in seen.invalid] == [("PodGroup", "typo")]
    assert "'ten minutes' is not a number of seconds" in seen.invalid[0].message


def queue_object(name: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "Queue",
        "metadata": {"name": name, "uid": f"uid-queue-{name}"},
        "spec": spec,
    }


def test_queues_are_fed_to_the_core_and_a_malformed_one_keeps_the_last_good_spec() -> None:
    state, seen = make_state()
    state.handlers.queues.replace(
        [queue_object("team-a", max={"cpu": "4"}, namespaces=["default"])]
    )
    assert state.scheduler.quotas.names() == ["team-a"]
    policy = state.scheduler.quotas.policy("team-a")
    assert policy is not None
    assert policy.max == {"cpu": 4000}
    state.handlers.queues.upsert(queue_object("team-a", max={"cpu": "four"}))
    assert [(i.kind, i.name, i.api_version) for i in seen.invalid] == [
        ("Queue", "team-a", "scheduling.sigs.k8s.io/v1alpha1")
    ]
    assert "four" in seen.invalid[0].message
    policy = state.scheduler.quotas.policy("team-a")
    assert policy is not None
    assert policy.max == {"cpu": 4000}
    state.handlers.nodes.replace([node_object("n1")])
    state.handlers.pods.replace([pod_object("lone", cpu="1")])
    decision = state.scheduler.next_decision()
    assert decision is not None
    assert decision.ok


def test_a_relist_forgets_deleted_queues() -> None:
    state, _ = make_state()
    state.handlers.queues.replace([queue_object("a"), queue_object("b")])
    state.handlers.queues.replace([queue_object("b")])
    assert state.scheduler.quotas.names() == ["b"]
    assert sorted(state.handlers.queues.objects) == ["b"]


def test_a_pods_progress_is_read_and_any_other_change_is_read_whole() -> None:
    state, seen = make_state()
    state.handlers.nodes.replace([node_object("n1", cpu="8")])
    raw = pod_object("p", cpu="1", group="g")
    state.handlers.pods.replace([raw])
    bound = pod_object("p", cpu="1", group="g", node="n1")
    assert (pod := fed_pod(state, bound)) is not None
    assert pod.node_name == "n1"
    running = pod_object("p", cpu="1", group="g", node="n1", phase="Running")
    assert (pod := fed_pod(state, running)) is not None
    assert pod.phase == "Running"
    assert state.scheduler.snapshot.allocated("n1") == {"cpu": 1000, "pods": 1}
    # Resized in place: not progress, read whole.
    resized = pod_object("p", cpu="2", group="g", node="n1", phase="Running")
    assert (pod := fed_pod(state, resized)) is not None
    assert pod.requests["cpu"] == 2000
    assert state.scheduler.snapshot.allocated("n1") == {"cpu": 2000, "pods": 1}
    # Progress that cannot be read: reported, and the pod forgotten, as a full read does.
    broken = pod_object("p", cpu="2", group="g", node="n1")
    broken["status"] = {"phase": 7}
    assert fed_pod(state, broken) is None
    assert [i.name for i in seen.invalid] == ["p"]
    assert state.scheduler.pod("uid-default-p") is None
