"""The handlers with Jobs: a Job's pods join its gang by owner, never race ahead of it alone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.adapters import volcano
from coscheduler.api.adapters.apis import SIGS
from coscheduler.api.owners import GangOwner
from coscheduler.api.reasons import Reason
from coscheduler.core.group import GroupKey
from coscheduler.core.scheduler import Scheduler, SchedulerSettings
from tests.builders import job_object, node_object, pod_object, podgroup_object
from tests.fed import Fed

TRAIN = GroupKey("default", "train")


def make_state(
    *, watched: bool = True, namespaces: frozenset[str] = frozenset()
) -> tuple[Fed, list[GangOwner]]:
    marked: list[GangOwner] = []
    state = Fed(Scheduler(lambda: 0.0), on_owner_changed=marked.append, namespaces=namespaces)
    state.handlers.owners.watched = watched
    state.handlers.nodes.replace([node_object("n1", cpu="8")])
    return state, marked


def job_pods(count: int, job: str = "train") -> list[dict[str, object]]:
    return [pod_object(f"{job}-{i}", owner=job) for i in range(count)]


def bound_names(state: Fed) -> set[str]:
    names = set()
    while (decision := state.scheduler.next_decision()) is not None:
        names |= {binding.name for binding in decision.bindings}
    return names


def test_pods_seen_before_their_job_wait_then_go_alone_when_it_asks_for_no_gang() -> None:
    state, marked = make_state()
    state.handlers.pods.replace(job_pods(2))

    decision = state.scheduler.next_decision()
    assert decision is not None
    assert not decision.bindings
    assert decision.group == TRAIN
    assert decision.status.reason is Reason.GROUP_NOT_FOUND
    message = state.handlers.owners.wait_message(TRAIN)
    assert message is not None
    assert "waiting to see Job default/train" in message

    state.handlers.jobs.upsert(job_object("train"))
    assert bound_names(state) == {"train-0", "train-1"}
    assert not marked  # nothing to make for a Job without the annotation


def test_an_annotated_jobs_pods_wait_for_its_podgroup_then_go_whole() -> None:
    state, marked = make_state()
    state.handlers.jobs.replace([job_object("train", gang="true", parallelism=3)])
    assert [owner.name for owner in marked] == ["train"]
    for raw in job_pods(3):
        state.handlers.pods.upsert(raw)
    assert bound_names(state) == set()
    message = state.handlers.owners.wait_message(TRAIN)
    assert message is not None
    assert "coscheduler makes for Job default/train" in message
    assert {pod.name for pod in state.handlers.groups.group_pods(TRAIN)} == {
        "train-0",
        "train-1",
        "train-2",
    }

    state.handlers.podgroups[SIGS].upsert(podgroup_object("train", 3))
    decision = state.scheduler.next_decision()
    assert decision is not None
    assert {binding.name for binding in decision.bindings} == {"train-0", "train-1", "train-2"}


def test_an_invalid_annotation_holds_the_pods_and_says_what_to_fix() -> None:
    state, _ = make_state()
    state.handlers.jobs.upsert(job_object("train", gang="many"))
    state.handlers.pods.replace(job_pods(2))
    assert bound_names(state) == set()
    message = state.handlers.owners.wait_message(TRAIN)
    assert message is not None
    assert "'many'" in message
    assert "kubectl describe job" in message


def test_removing_the_annotation_lets_the_pods_go_one_by_one() -> None:
    state, _ = make_state()
    state.handlers.jobs.upsert(job_object("train", gang="true", parallelism=2))
    state.handlers.pods.replace(job_pods(2))
    assert bound_names(state) == set()
    state.handlers.jobs.upsert(job_object("train", parallelism=2))
    assert bound_names(state) == {"train-0", "train-1"}
    assert state.handlers.owners.owner_of_group(TRAIN) is None


def test_a_deleted_job_holds_what_is_left_of_its_pods() -> None:
    state, _ = make_state()
    state.handlers.jobs.upsert(job_object("train"))
    state.handlers.jobs.replace([])
    state.handlers.pods.replace(job_pods(1))
    assert bound_names(state) == set()


def test_an_orphaned_pod_is_a_gang_of_one() -> None:
    state, _ = make_state()
    state.handlers.jobs.upsert(job_object("train", gang="true"))
    raw = pod_object("train-0", owner="train")
    state.handlers.pods.upsert(raw)
    del raw["metadata"]["ownerReferences"]
    state.handlers.pods.upsert(raw)
    assert bound_names(state) == {"train-0"}


def test_the_podgroup_named_after_a_job_going_marks_the_job_again() -> None:
    state, marked = make_state()
    state.handlers.jobs.upsert(job_object("train", gang="true"))
    state.handlers.podgroups[SIGS].upsert(podgroup_object("train", 4))
    state.handlers.podgroups[SIGS].remove(podgroup_object("train", 4))
    assert [owner.name for owner in marked] == ["train", "train", "train"]


def test_a_job_status_change_that_changes_nothing_marks_nothing() -> None:
    state, marked = make_state()
    job = job_object("train", gang="true")
    state.handlers.jobs.upsert(job)
    job["status"] = {"active": 4}
    state.handlers.jobs.upsert(job)
    assert len(marked) == 1


def test_without_the_job_watch_a_jobs_pods_are_placed_alone_as_before() -> None:
    state, _ = make_state(watched=False)
    state.handlers.pods.replace(job_pods(2))
    assert bound_names(state) == {"train-0", "train-1"}


def test_jobs_outside_our_namespaces_are_not_read() -> None:
    state, marked = make_state(namespaces=frozenset({"team"}))
    state.handlers.jobs.upsert(job_object("train", gang="true"))
    assert not state.handlers.owners.owners
    assert not marked


@given(
    order=st.permutations(["job", "podgroup", "pod-0", "pod-1", "pod-2"]),
    annotated=st.booleans(),
)
def test_whatever_order_the_events_come_in_a_gang_is_placed_whole_or_not_at_all(
    order: list[str], annotated: bool
) -> None:
    """The pod-before-Job and pod-before-PodGroup races, every interleaving of them."""
    state, _ = make_state()
    bindings: list[set[str]] = []
    seen: set[str] = set()
    for item in order:
        seen.add(item)
        if item == "job":
            state.handlers.jobs.upsert(
                job_object("train", gang="true" if annotated else None, parallelism=3)
            )
        elif item == "podgroup":
            if annotated:  # coscheduler would make it for the annotated Job only
                state.handlers.podgroups[SIGS].upsert(podgroup_object("train", 3))
        else:
            state.handlers.pods.upsert(pod_object(f"train-{item[-1]}", owner="train"))
        while (decision := state.scheduler.next_decision()) is not None:
            if decision.bindings:
                bindings.append({binding.name for binding in decision.bindings})
                # Never alone before the Job is known; a gang only with its PodGroup.
                assert ("podgroup" if annotated else "job") in seen
    if annotated:
        assert bindings == [{"train-0", "train-1", "train-2"}]
    else:
        assert all(len(placed) == 1 for placed in bindings)
        assert set().union(*bindings) == {"train-0", "train-1", "train-2"}


def test_under_volcano_s_name_a_replica_set_s_pods_wait_for_it_then_for_its_gang() -> None:
    """Volcano's ``group-min-member`` on a plain pod's ReplicaSet: the pods wait until the
    ReplicaSet is seen, then in the group Volcano names ``podgroup-<its uid>``."""
    marked: list[GangOwner] = []
    state = Fed(
        Scheduler(lambda: 0.0, SchedulerSettings(scheduler_name="volcano")),
        on_owner_changed=marked.append,
    )
    state.handlers.nodes.replace([node_object("n1", cpu="8")])
    state.handlers.replica_sets.replace([])
    pods = [pod_object(f"web-{i}", owner="web", scheduler="volcano") for i in range(2)]
    for raw in pods:
        raw["metadata"]["ownerReferences"][0]["kind"] = "ReplicaSet"
    state.handlers.pods.replace(pods)
    uid = pods[0]["metadata"]["ownerReferences"][0]["uid"]
    group = GroupKey("default", f"podgroup-{uid}")
    message = state.handlers.owners.wait_message(group)
    assert message is not None
    assert "waiting to see ReplicaSet default/web" in message
    assert bound_names(state) == set()

    replica_set = {
        "metadata": {
            "namespace": "default",
            "name": "web",
            "uid": uid,
            "annotations": {"scheduling.volcano.sh/group-min-member": "2"},
        },
        "spec": {"template": {"spec": {"schedulerName": "volcano"}}},
    }
    state.handlers.replica_sets.upsert(replica_set)
    assert [(o.kind, o.group_name, o.api.group) for o in marked] == [
        ("ReplicaSet", group.name, "scheduling.volcano.sh")
    ]
    assert bound_names(state) == set(), "the gang waits for its PodGroup"
    state.handlers.podgroups[volcano.ADAPTER.api].replace(
        [podgroup_object(group.name, 2, api_version="scheduling.volcano.sh/v1beta1")],
    )
    assert bound_names(state) == {"web-0", "web-1"}
