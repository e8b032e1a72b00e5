"""api/adapters/workload.py and api/workload_ref.py: 1.35's Workload and a pod's reference to it.

The shapes are 1.35's (``k8s.io/api`` v0.35.4); e2e/tests/test_workload.py
holds them to the real API server's schema too.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.adapters import workload
from coscheduler.api.pod import PodInfo, PodParseError
from coscheduler.api.podgroup import PodGroupPhase, PodGroupStatus
from coscheduler.api.workload_ref import WorkloadRef
from coscheduler.core.group import KIND_POD, KIND_POD_GROUP, KIND_WORKLOAD, GroupKey
from tests.builders import pod, pod_object, workload_object, workload_ref

#: What a DNS label may be (names, podGroups and replica keys are DNS labels or subdomains).
LABELS = st.from_regex(r"[a-z0-9]([a-z0-9.-]{0,20}[a-z0-9])?", fullmatch=True)


def test_each_pod_group_reads_as_its_gang_min_count_or_none_for_basic() -> None:
    read = workload.read_workload(workload_object("train", {"workers": 4, "driver": None}))
    assert read.pod_groups == {"workers": 4, "driver": None}
    assert (read.namespace, read.name, read.uid) == ("default", "train", "uid-wl-train")


@pytest.mark.parametrize(
    ("policy", "says"),
    [
        ({"basic": {}, "gang": {"minCount": 2}}, "exactly one of basic and gang"),
        ({}, "exactly one of basic and gang"),
        ({"topology": {"key": "rack"}}, "topology is not a policy of scheduling.k8s.io/v1alpha1"),
        ({"gang": {"minCount": 0}}, "minCount"),
        ({"gang": {}}, "minCount"),
    ],
)
def test_a_policy_that_is_not_one_of_1_35_s_is_refused_not_guessed(
    policy: dict[str, Any], says: str
) -> None:
    raw = workload_object("train", {"workers": 2})
    raw["spec"]["podGroups"][0]["policy"] = policy
    with pytest.raises(ValueError, match=says):
        workload.read_workload(raw)


def test_a_workload_without_pod_groups_is_refused() -> None:
    raw = workload_object("train", {})
    with pytest.raises(ValueError, match=r"spec\.podGroups"):
        workload.read_workload(raw)
    del raw["spec"]["podGroups"]
    with pytest.raises(ValueError, match=r"spec\.podGroups"):
        workload.read_workload(raw)


def test_a_pod_group_named_twice_is_refused() -> None:
    raw = workload_object("train", {"workers": 2})
    raw["spec"]["podGroups"] *= 2
    with pytest.raises(ValueError, match="'workers' is given twice"):
        workload.read_workload(raw)


def test_fields_added_later_within_v1alpha1_are_ignored() -> None:
    raw = workload_object("train", {"workers": 2})
    raw["spec"]["controllerRef"] = {"apiGroup": "batch", "kind": "Job", "name": "train"}
    raw["spec"]["podGroups"][0]["policy"]["gang"]["somethingNew"] = True
    assert workload.read_workload(raw).pod_groups == {"workers": 2}


@pytest.mark.parametrize(
    ("served", "read", "refused"),
    [
        ({"v1alpha1"}, workload.API, []),
        (set(), None, []),
        ({"v1alpha2"}, None, ["v1alpha2"]),  # 1.36: another shape, never read as 1.35's
        ({"v1beta1", "v1alpha2"}, None, ["v1alpha2", "v1beta1"]),
        ({"v1alpha1", "v1alpha2"}, workload.API, ["v1alpha2"]),
    ],
)
def test_the_version_read_is_chosen_by_discovery(
    served: set[str], read: object, refused: list[str]
) -> None:
    assert workload.choose_version(served) == (read, refused)


def test_a_gang_pod_group_is_a_group_of_min_count_members_per_replica() -> None:
    read = workload.read_workload(workload_object("train", {"workers": 4, "driver": None}))

    group = workload.gang_object(read, WorkloadRef("train", "workers", "r1"))
    assert group is not None
    assert group.spec.min_member == 4
    assert group.within == "podGroup workers replica r1"
    # Events go on the Workload itself.
    assert (group.api.kind, group.name, group.uid) == ("Workload", "train", "uid-wl-train")

    assert workload.gang_object(read, WorkloadRef("train", "driver")) is None  # basic
    assert workload.gang_object(read, WorkloadRef("train", "nope")) is None


def test_a_workload_s_gangs_draw_from_the_queue_its_label_names() -> None:
    raw = workload_object("train", {"workers": 2})
    assert workload.read_workload(raw).queue == "default"
    raw["metadata"]["labels"] = {"scheduling.sigs.k8s.io/queue": "team-a"}
    read = workload.read_workload(raw)
    group = workload.gang_object(read, WorkloadRef("train", "workers"))
    assert group is not None
    assert group.spec.queue == "team-a"


def test_nothing_is_ever_written_to_a_workload() -> None:
    adapter = workload.ADAPTER
    running = PodGroupStatus(phase=PodGroupPhase.RUNNING, running=4)
    assert adapter.render_status(running, []) == {}
    assert adapter.stored_form({}) == adapter.stored_form({"phase": "Running"})
    assert adapter.read_status({"anything": 1}) == PodGroupStatus()


def test_a_pod_s_workload_ref_is_read() -> None:
    member = pod("w-0", spec_extra=workload_ref("train", "workers", "r1"))
    assert member.workload == WorkloadRef("train", "workers", "r1")
    assert pod("w-1", spec_extra=workload_ref("train", "workers")).workload == WorkloadRef(
        "train", "workers", ""
    )
    assert pod("plain").workload is None


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ({"name": "train"}, "needs both name and podGroup"),
        ({"podGroup": "workers"}, "needs both name and podGroup"),
        ({"name": "train", "podGroup": 3}, "podGroup must be a string"),
        ({"name": "a/b", "podGroup": "workers"}, "is not a DNS name"),
        ("train", "must be an object"),
    ],
)
def test_a_malformed_workload_ref_is_a_pod_parse_error(ref: object, says: str) -> None:
    with pytest.raises(PodParseError, match=says):
        PodInfo.from_object(pod_object("w-0", spec_extra={"workloadRef": ref}))


def test_a_workload_gang_key_cannot_meet_a_pod_group_s() -> None:
    member = pod("w-0", spec_extra=workload_ref("train", "workers"))
    key = GroupKey.of_pod(member)
    assert key == GroupKey("default", "train/workers", KIND_WORKLOAD)
    assert key != GroupKey("default", "train/workers", KIND_POD_GROUP)
    assert key.title == "Workload default/train podGroup workers"
    with_replica = GroupKey.of_pod(pod("w-1", spec_extra=workload_ref("train", "workers", "r1")))
    assert with_replica.title == "Workload default/train podGroup workers replica r1"


def test_a_group_label_wins_over_a_workload_ref() -> None:
    member = pod("w-0", group="mine", spec_extra=workload_ref("train", "workers"))
    assert GroupKey.of_pod(member) == GroupKey("default", "mine")
    assert GroupKey.of_pod(pod("alone")).kind == KIND_POD


@given(LABELS, LABELS, st.one_of(st.just(""), LABELS))
def test_a_gang_name_gives_back_the_reference_it_was_made_from(
    name: str, pod_group: str, replica_key: str
) -> None:
    ref = WorkloadRef(name, pod_group, replica_key)
    assert WorkloadRef.from_gang_name(ref.gang_name) == ref


@given(
    st.tuples(LABELS, LABELS, st.one_of(st.just(""), LABELS)),
    st.tuples(LABELS, LABELS, st.one_of(st.just(""), LABELS)),
)
def test_two_gangs_have_one_name_only_when_they_are_one_gang(
    one: tuple[str, str, str], other: tuple[str, str, str]
) -> None:
    same_name = WorkloadRef(*one).gang_name == WorkloadRef(*other).gang_name
    assert same_name == (one == other)
