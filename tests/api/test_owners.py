"""A Job's gang annotation read into the PodGroup it asks for, or what to fix."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.owners import (
    PRIORITY_CLASS_ANNOTATION,
    QUEUE_ANNOTATION,
    GangOwner,
    owns,
)
from tests.builders import job_object


def read(**fields: Any) -> GangOwner:
    owner = GangOwner.from_job(job_object("train", **fields))
    assert owner is not None
    return owner


def min_member(owner: GangOwner) -> int:
    assert owner.problem is None, owner.problem
    assert owner.spec is not None
    return owner.spec.min_member


def test_without_the_annotation_or_with_false_a_job_asks_for_no_gang() -> None:
    for owner in (read(), read(gang="false"), read(gang="False"), read(gang="")):
        assert not owner.wants_gang
        assert owner.spec is None
        assert owner.problem is None


def test_true_makes_the_gang_the_jobs_parallelism() -> None:
    owner = read(gang="true", parallelism=4)
    assert owner.wants_gang
    assert owner.group_name == "train"
    assert min_member(owner) == 4
    assert min_member(read(gang="true", parallelism=None)) == 1  # parallelism defaults to 1


def test_a_gang_never_needs_more_pods_than_the_job_still_has_to_complete() -> None:
    assert min_member(read(gang="true", parallelism=4, completions=2)) == 2
    # The last wave of an Indexed (or any) Job with 6 completions run 4 at a time.
    assert min_member(read(gang="true", parallelism=4, completions=6, succeeded=3)) == 3
    assert min_member(read(gang="true", parallelism=4, completions=8, succeeded=3)) == 4
    assert min_member(read(gang="true", parallelism=4, completions=4, succeeded=4)) == 1


def test_a_count_replaces_parallelism_and_may_not_exceed_it() -> None:
    assert min_member(read(gang="3", parallelism=4)) == 3
    assert min_member(read(gang=" 4 ", parallelism=4)) == 4
    owner = read(gang="8", parallelism=4)
    assert owner.wants_gang
    assert owner.spec is None
    assert owner.problem is not None
    assert "spec.parallelism is 4" in owner.problem
    assert "at most 4" in owner.problem


def test_an_unreadable_value_says_what_to_write_and_still_holds_the_pods() -> None:
    for value in ("yes please", "0", "-2", "2.5", "1e3"):
        owner = read(gang=value)
        assert owner.wants_gang, value  # its pods wait rather than run one by one
        assert owner.spec is None
        assert owner.problem is not None
        assert repr(value) in owner.problem
        assert '"true"' in owner.problem
        assert "member count" in owner.problem


def test_queue_and_priority_class_come_from_annotations_or_the_pod_template() -> None:
    owner = read(
        gang="true",
        annotations={QUEUE_ANNOTATION: "research", PRIORITY_CLASS_ANNOTATION: "high"},
        template_spec={"priorityClassName": "low"},
    )
    assert owner.spec is not None
    assert (owner.spec.queue, owner.spec.priority_class_name) == ("research", "high")
    owner = read(gang="true", template_spec={"priorityClassName": "low"})
    assert owner.spec is not None
    assert (owner.spec.queue, owner.spec.priority_class_name) == ("default", "low")
    assert owner.spec_fields() == {
        "minMember": 4,
        "queue": "default",
        "priorityClassName": "low",
    }


def test_an_invalid_queue_is_a_problem_not_a_crash() -> None:
    owner = read(gang="true", annotations={QUEUE_ANNOTATION: ""})
    assert owner.spec is None
    assert owner.problem is not None
    assert QUEUE_ANNOTATION in owner.problem


def test_a_malformed_job_is_a_problem_or_nothing_never_an_exception() -> None:
    job = job_object("train", gang="true")
    job["spec"]["parallelism"] = "four"
    owner = GangOwner.from_job(job)
    assert owner is not None
    assert owner.problem is not None
    assert "spec.parallelism must be an integer" in owner.problem
    assert GangOwner.from_job({"metadata": {"name": "x"}}) is None
    assert GangOwner.from_job({"metadata": "junk", "spec": []}) is None


def test_the_podgroup_is_named_after_the_job_and_controlled_by_it() -> None:
    owner = read(gang="2")
    body = owner.podgroup("scheduling.sigs.k8s.io/v1alpha1")
    meta = body["metadata"]
    assert (meta["name"], meta["namespace"]) == ("train", "default")
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "train",
            "uid": "uid-job-train",
            "controller": True,
        }
    ]
    assert body["spec"]["minMember"] == 2
    assert owns("uid-job-train", meta)
    assert not owns("uid-job-other", meta)
    assert not owns("uid-job-train", {"ownerReferences": [{"uid": "uid-job-train"}]})


def test_the_scheduler_name_and_deletion_are_read() -> None:
    assert read(gang="true").scheduler_name == "coscheduler"
    assert read(gang="true", scheduler=None).scheduler_name == ""
    job = job_object("train", gang="true")
    job["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    owner = GangOwner.from_job(job)
    assert owner is not None
    assert owner.deleting


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


@given(
    value=st.text(max_size=12),
    parallelism=_JSONISH,
    completions=_JSONISH,
    succeeded=_JSONISH,
)
def test_any_annotation_and_any_sizes_give_a_spec_or_a_problem(
    value: str, parallelism: object, completions: object, succeeded: object
) -> None:
    job = job_object("train", gang=value)
    job["spec"]["parallelism"] = parallelism
    job["spec"]["completions"] = completions
    job["status"] = {"succeeded": succeeded}
    owner = GangOwner.from_job(job)
    assert owner is not None
    if owner.wants_gang:
        assert (owner.spec is None) != (owner.problem is None)
        if owner.spec is not None:
            assert owner.spec.min_member >= 1
    else:
        assert value.strip().lower() in {"false", "no", "off", ""}
