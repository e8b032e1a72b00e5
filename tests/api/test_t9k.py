"""api/adapters/t9k.py: T9k's PodGroup read as ours, our status written as T9k's.

T9k publishes no CRD: ours (crds/t9k-podgroups.yaml) is written from its API
reference, whose field lists are copied below as the reference states them;
the CRD and the models must name exactly those.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from coscheduler.api.adapters import t9k, volcano
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
from tests.builders import pod_object, podgroup_object

ADAPTER = t9k.ADAPTER
API_VERSION = "scheduler.tensorstack.dev/v1beta1"
CRD_PATH = Path(__file__).parents[2] / "crds" / "t9k-podgroups.yaml"
WHEN = datetime.datetime(2026, 11, 26, 1, 2, 3, tzinfo=datetime.UTC)

#: The fields T9k's API reference lists (src/references/api-reference/scheduler.md).
REFERENCE_SPEC = {"roles", "minMember", "queue", "priority", "topologyPolicy"}
REFERENCE_STATUS = {
    "conditions",
    "allocated",
    "pending",
    "running",
    "succeeded",
    "failed",
    "unknown",
}
REFERENCE_CONDITION = {"type", "status", "transitionID", "lastTransitionTime", "reason", "message"}
REFERENCE_ROLE = {"name", "minMember"}


def their_group(min_member: int | None = None, **fields: Any) -> dict[str, Any]:
    return podgroup_object("job", min_member, api_version=API_VERSION, **fields)


def test_read_when_served_after_volcano_s() -> None:
    apis = [adapter.api for adapter in ADAPTERS]
    assert apis.index(t9k.API) == apis.index(volcano.API) + 1
    assert t9k.API.status_path("ns", "g").endswith("/podgroups/g/status")


def test_a_pod_joins_by_t9k_s_labels() -> None:
    labels = {
        "scheduler.tensorstack.dev/group-name": "job",
        "scheduler.tensorstack.dev/role": "master",
    }
    pod = PodInfo.from_object(pod_object("m-0", labels=labels))
    assert (pod.group, pod.role) == ("job", "master")


def test_their_spec_is_read_as_ours() -> None:
    group = ADAPTER.parse(
        their_group(
            3,
            priority=50,
            queue="team-a",
            roles=[{"name": "master", "minMember": 1}, {"name": "worker", "minMember": 1}],
        )
    )
    spec = group.spec
    assert (spec.min_member, spec.priority, spec.queue) == (3, 50, "team-a")
    assert spec.role_minimums() == {"master": 1, "worker": 1}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({}, (1, None, "default"), id="defaults"),
        pytest.param(
            {"minMember": 1, "roles": [{"name": "a", "minMember": 2}]},
            (2, None, "default"),
            id="roles floor",
        ),
        pytest.param({"minMember": 2, "priority": 0}, (2, 0, "default"), id="priority 0"),
        pytest.param({"minMember": 2, "priority": 100}, (2, 100, "default"), id="priority 100"),
    ],
)
def test_what_their_spec_leaves_open(
    spec: dict[str, Any], expected: tuple[int, int | None, str]
) -> None:
    got = ADAPTER.parse(their_group(**spec)).spec
    assert (got.min_member, got.priority, got.queue) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param({"minMember": 2, "priority": 101}, "spec.priority: 101", id="priority"),
        pytest.param({"minMember": 2, "priority": -1}, "spec.priority: -1", id="negative"),
        pytest.param(
            {"minMember": 2, "topologyPolicy": "best-effort"},
            "spec.topologyPolicy",
            id="topology policy",
        ),
        pytest.param(
            {"minMember": 2, "roles": [{"name": "a", "minMember": 1}] * 2},
            "spec.roles",
            id="a role twice",
        ),
    ],
)
def test_what_cannot_be_honoured_is_refused_naming_the_field(
    spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=r"^spec\.") as error:
        ADAPTER.parse(their_group(**spec))
    assert message in str(error.value)


def condition(kind: ConditionType, status: ConditionStatus, reason: Reason) -> PodGroupCondition:
    return PodGroupCondition(
        type=kind,
        status=status,
        reason=reason,
        message="why",
        last_transition_time=WHEN,
        transition_id="t-1",
    )


def members(*phases: str) -> list[PodInfo]:
    return [
        PodInfo.from_object(
            pod_object(f"p-{i}", phase=phase, node="n" if phase != "Pending" else None)
        )
        for i, phase in enumerate(phases)
    ]


def test_a_group_waiting_for_members_says_so_in_their_two_conditions() -> None:
    status = PodGroupStatus(
        conditions=[
            condition(ConditionType.SCHEDULED, ConditionStatus.FALSE, Reason.WAITING),
            condition(ConditionType.UNSCHEDULABLE, ConditionStatus.TRUE, Reason.NOT_ENOUGH_MEMBERS),
        ]
    )
    body = ADAPTER.render_status(status, members("Pending"))
    scheduled, sufficient = body["conditions"]
    assert (scheduled["type"], scheduled["status"], scheduled["reason"]) == (
        "GroupScheduled",
        "False",
        "Waiting",
    )
    assert (sufficient["type"], sufficient["status"], sufficient["reason"]) == (
        "SufficientGroupMember",
        "False",
        "NotEnoughMembers",
    )
    assert sufficient["message"] == "why"
    assert (body["pending"], body["running"]) == (1, 0)


def test_a_placed_group_is_group_scheduled_with_its_allocation_and_counts() -> None:
    status = PodGroupStatus(
        phase=PodGroupPhase.RUNNING,
        conditions=[
            condition(ConditionType.SCHEDULED, ConditionStatus.TRUE, Reason.MIN_MEMBER_SCHEDULED),
            condition(ConditionType.UNSCHEDULABLE, ConditionStatus.FALSE, Reason.SCHEDULABLE),
        ],
        allocated={"cpu": "3"},
    )
    body = ADAPTER.render_status(status, members("Running", "Running", "Succeeded", "Failed"))
    assert set(body) == REFERENCE_STATUS
    scheduled, sufficient = body["conditions"]
    assert (scheduled["status"], scheduled["reason"]) == ("True", "PodGroupScheduled")
    assert scheduled["lastTransitionTime"] == "2026-11-26T01:02:03Z"
    assert (sufficient["status"], sufficient["reason"]) == ("True", "SufficientMemberPods")
    assert body["allocated"] == {"cpu": "3"}
    counts = {k: body[k] for k in ("pending", "running", "succeeded", "failed", "unknown")}
    assert counts == {"pending": 0, "running": 2, "succeeded": 1, "failed": 1, "unknown": 0}
    again = ADAPTER.read_status(body)
    assert (again.phase, again.running) == (PodGroupPhase.RUNNING, 2)


def test_a_status_with_an_odd_value_is_replaced() -> None:
    group = ADAPTER.parse(their_group(2, status={"running": "many"}))
    assert group.stored is None
    assert group.status == PodGroupStatus()


# -- the CRD, written from the reference ---------------------------------------


def schema() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(CRD_PATH.read_text())
    (version,) = crd["spec"]["versions"]
    assert crd["spec"]["group"] == t9k.GROUP
    assert version["name"] == "v1beta1"
    assert version["subresources"] == {"status": {}}
    properties: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]
    return properties


def wire_names(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def test_the_crd_and_the_models_name_the_reference_s_fields() -> None:
    properties = schema()
    spec, status = properties["spec"]["properties"], properties["status"]["properties"]
    assert set(spec) == REFERENCE_SPEC == wire_names(t9k.T9kSpec)
    assert set(status) == REFERENCE_STATUS == wire_names(t9k.T9kStatus)
    assert set(spec["roles"]["items"]["properties"]) == REFERENCE_ROLE
    assert set(status["conditions"]["items"]["properties"]) == REFERENCE_CONDITION
    # The ranges the reference states in prose.
    assert (spec["priority"]["minimum"], spec["priority"]["maximum"]) == (0, 100)
    assert spec["queue"]["default"] == "default"
