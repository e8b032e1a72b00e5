"""api/adapters/volcano.py: Volcano's PodGroup read as ours, our status written as Volcano's.

Also the shipped CRD: its structure is upstream's (held to the copy of
upstream's file in tests/upstream/), and its fields are the models'.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from coscheduler.api.adapters import volcano
from coscheduler.api.adapters.table import ADAPTERS
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import (
    ConditionStatus,
    ConditionType,
    PodGroupCondition,
    PodGroupPhase,
    PodGroupStatus,
)
from coscheduler.api.reasons import Reason
from coscheduler.core.group import GroupPolicy
from tests.builders import pod_object, podgroup_object
from tests.upstream_crds import UPSTREAM, assert_same_structure, kept_row, load

ADAPTER = volcano.ADAPTER
API_VERSION = "scheduling.volcano.sh/v1beta1"
CRD_PATH = Path(__file__).parents[2] / "crds" / "volcano-podgroups.yaml"
UPSTREAM_CRD = UPSTREAM / "volcano-podgroups-crd.yaml"
WHEN = datetime.datetime(2026, 11, 26, 1, 2, 3, tzinfo=datetime.UTC)


def their_group(min_member: int | None = None, **fields: Any) -> dict[str, Any]:
    return podgroup_object("train", min_member, api_version=API_VERSION, **fields)


def test_read_when_served_after_ours_and_scheduler_plugins() -> None:
    apis = [adapter.api for adapter in ADAPTERS]
    assert apis.index(volcano.API) > apis.index(ADAPTERS[0].api)
    assert volcano.API.status_path("ns", "g") == (
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/g"
    ), "no /status subresource: the status is written on the object"


# -- membership: the pods' annotations ----------------------------------------


def test_a_pod_joins_by_volcano_s_annotation_and_its_task_is_its_role() -> None:
    raw = pod_object("w-0")
    raw["metadata"]["annotations"] = {
        "scheduling.k8s.io/group-name": "train",
        "volcano.sh/task-spec": "worker",
        "unrelated": "x",
    }
    pod = PodInfo.from_object(raw)
    assert (pod.group, pod.role) == ("train", "worker")


def test_a_lone_pod_s_queue_is_the_one_volcano_s_annotation_names() -> None:
    raw = pod_object("solo")
    raw["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "research"}
    pod = PodInfo.from_object(raw)
    assert pod.group is None
    assert GroupPolicy.lone(pod).queue == "research"


def test_the_older_annotation_and_a_task_label_are_read_too() -> None:
    raw = pod_object("w-0", labels={"volcano.sh/task-spec": "ps"})
    raw["metadata"]["annotations"] = {"scheduling.volcano.sh/group-name": "train"}
    pod = PodInfo.from_object(raw)
    assert (pod.group, pod.role) == ("train", "ps")


def test_our_label_wins_over_volcano_s_annotation() -> None:
    raw = pod_object("w-0", group="ours", role="a")
    raw["metadata"]["annotations"] = {
        "scheduling.k8s.io/group-name": "theirs",
        "volcano.sh/task-spec": "b",
    }
    pod = PodInfo.from_object(raw)
    assert (pod.group, pod.role) == ("ours", "a")


# -- reading the spec ---------------------------------------------------------


def test_their_spec_is_read_as_ours() -> None:
    group = ADAPTER.parse(
        their_group(
            4,
            minResources={"cpu": "8"},
            priorityClassName="high",
            queue="team-a",
            minTaskMember={"ps": 1, "worker": 2, "idle": 0},
        )
    )
    spec = group.spec
    assert (spec.min_member, spec.queue, spec.priority_class_name) == (4, "team-a", "high")
    assert spec.min_resource_amounts() == {"cpu": 8000}
    assert spec.role_minimums() == {"ps": 1, "worker": 2}, "a task of minimum 0 asks nothing"


@pytest.mark.parametrize(
    ("spec", "min_member"),
    [
        pytest.param({}, 1, id="no minMember: members go alone"),
        pytest.param({"minMember": 0}, 1, id="minMember 0 likewise"),
        pytest.param({"minMember": 1, "minTaskMember": {"a": 2, "b": 1}}, 3, id="tasks floor"),
        pytest.param({"minMember": 2, "networkTopology": {"mode": "soft"}}, 2, id="soft"),
    ],
)
def test_what_their_spec_leaves_open(spec: dict[str, Any], min_member: int) -> None:
    group = ADAPTER.parse(their_group(**spec))
    assert group.spec.min_member == min_member
    assert group.spec.queue == "default"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"minMember": 2, "networkTopology": {"mode": "hard", "highestTierAllowed": 1}},
            "spec.networkTopology: mode hard",
            id="hard network topology",
        ),
        pytest.param(
            {"minMember": 2, "networkTopology": {}},
            "spec.networkTopology: mode hard",
            id="hard by default",
        ),
        pytest.param(
            {"minMember": 2, "subGroupPolicy": [{"name": "s", "subGroupSize": 2}]},
            "spec.subGroupPolicy is not supported",
            id="sub-groups",
        ),
        pytest.param(
            {"minMember": 2, "minTaskMember": {"w": -1}},
            "spec.minTaskMember: w must not be negative",
            id="negative task minimum",
        ),
        pytest.param(
            {"minMember": 2, "minTaskMember": {"x" * 64: 1}},
            "spec.minTaskMember",
            id="task name past our role names",
        ),
        pytest.param(
            {"minMember": 2, "minResources": {"cpu": "lots"}},
            "lots",
            id="bad quantity",
        ),
    ],
)
def test_what_cannot_be_honoured_is_refused_naming_the_field(
    spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=r"spec\.|lots") as error:
        ADAPTER.parse(their_group(**spec))
    assert message in str(error.value)


# -- writing the status -------------------------------------------------------


def unschedulable(reason: Reason) -> PodGroupCondition:
    return PodGroupCondition(
        type=ConditionType.UNSCHEDULABLE,
        status=ConditionStatus.TRUE,
        reason=reason,
        message="why",
        last_transition_time=WHEN,
        transition_id="t-1",
    )


@pytest.mark.parametrize(
    ("status", "phase"),
    [
        pytest.param(PodGroupStatus(), "Inqueue", id="nothing refuses it: pods may be made"),
        pytest.param(
            PodGroupStatus(conditions=[unschedulable(Reason.NOT_ENOUGH_MEMBERS)]),
            "Inqueue",
            id="waiting for its pods",
        ),
        pytest.param(
            PodGroupStatus(conditions=[unschedulable(Reason.NOT_ENOUGH_RESOURCES)]),
            "Inqueue",
            id="admitted, waiting for room",
        ),
        pytest.param(
            PodGroupStatus(conditions=[unschedulable(Reason.QUEUE_MAX_REACHED)]),
            "Pending",
            id="its queue keeps it out",
        ),
        pytest.param(
            PodGroupStatus(conditions=[unschedulable(Reason.MIN_RESOURCES_UNAVAILABLE)]),
            "Pending",
            id="minResources keeps it out",
        ),
        pytest.param(
            PodGroupStatus(
                phase=PodGroupPhase.SCHEDULING,
                conditions=[unschedulable(Reason.NOT_ENOUGH_RESOURCES)],
            ),
            "Unknown",
            id="part bound, the rest cannot be",
        ),
        pytest.param(PodGroupStatus(phase=PodGroupPhase.SCHEDULING), "Inqueue", id="binding"),
        pytest.param(PodGroupStatus(phase=PodGroupPhase.SCHEDULED), "Running", id="bound"),
        pytest.param(PodGroupStatus(phase=PodGroupPhase.RUNNING), "Running", id="running"),
        pytest.param(PodGroupStatus(phase=PodGroupPhase.FINISHED), "Completed", id="done"),
        pytest.param(PodGroupStatus(phase=PodGroupPhase.FAILED), "Completed", id="all ended"),
        pytest.param(
            PodGroupStatus(phase=PodGroupPhase.FAILED, running=1), "Unknown", id="failed, some run"
        ),
        pytest.param(PodGroupStatus(phase=PodGroupPhase.UNKNOWN), "Unknown", id="node lost"),
    ],
)
def test_the_phase_is_volcano_s(status: PodGroupStatus, phase: str) -> None:
    assert volcano.written_phase(status).value == phase


def test_the_status_is_in_their_schema_with_their_words() -> None:
    status = PodGroupStatus(
        phase=PodGroupPhase.PENDING,
        conditions=[unschedulable(Reason.NOT_ENOUGH_MEMBERS)],
        running=0,
        succeeded=1,
        failed=2,
        pending=3,
    )
    body = ADAPTER.render_status(status, [])
    assert body == {
        "phase": "Inqueue",
        "conditions": [
            {
                "type": "Unschedulable",
                "status": "True",
                "transitionID": "t-1",
                "lastTransitionTime": "2026-11-26T01:02:03Z",
                "reason": "NotEnoughTasks",
                "message": "why",
            }
        ],
        "running": 0,
        "succeeded": 1,
        "failed": 2,
    }
    assert set(body) <= status_fields(), "only fields their CRD keeps"
    # Read back, it says the same thing in our words.
    again = ADAPTER.read_status(body)
    assert again.conditions[0].reason == Reason.NOT_ENOUGH_MEMBERS
    assert ADAPTER.stored_form(body) == ADAPTER.stored_form(dict(body))


def test_a_stored_status_is_understood_and_an_odd_one_replaced() -> None:
    group = ADAPTER.parse(their_group(2, status={"phase": "Running", "running": 2}))
    assert (group.status.phase, group.status.running) == (PodGroupPhase.RUNNING, 2)
    odd = ADAPTER.parse(their_group(2, status={"running": "many"}))
    assert odd.status == PodGroupStatus()
    assert odd.stored is None


# -- the CRD ------------------------------------------------------------------


def test_the_crd_has_upstream_s_structure() -> None:
    assert_same_structure(CRD_PATH, UPSTREAM_CRD)


def test_the_kept_upstream_crd_is_untouched() -> None:
    """tests/upstream/README.md names the file's commit, path and digest."""
    assert "ed72c7c815a9fd547a787134676f73d42e9d049c" in kept_row(UPSTREAM_CRD)[2]
    assert "ed72c7c815a9fd547a787134676f73d42e9d049c" in CRD_PATH.read_text(), "source named"


def schema() -> dict[str, Any]:
    (version,) = load(CRD_PATH)["spec"]["versions"]
    properties: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]
    return properties


def status_fields() -> set[str]:
    return set(schema()["status"]["properties"])


def wire_names(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def test_the_models_read_only_fields_the_crd_has() -> None:
    assert wire_names(volcano.VolcanoSpec) == set(schema()["spec"]["properties"])
    assert wire_names(volcano.VolcanoStatus) == status_fields()
    condition = schema()["status"]["properties"]["conditions"]["items"]["properties"]
    assert wire_names(volcano.VolcanoCondition) == set(condition)
    phases = set(schema()["status"]["properties"]["phase"]["enum"])
    assert phases == {phase.value for phase in volcano.VolcanoPhase}
