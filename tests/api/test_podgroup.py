"""The PodGroup models: what they accept, refuse and how they read the wire form."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from coscheduler.api.labels import pod_group_name, pod_role
from coscheduler.api.podgroup import (
    ConditionStatus,
    ConditionType,
    PodGroup,
    PodGroupPhase,
    PodGroupSpec,
    PodGroupStatus,
)
from tests.builders import podgroup_object


def test_full_object_reads_from_wire_form() -> None:
    group = PodGroup.model_validate(
        podgroup_object(
            "train",
            4,
            namespace="ml",
            uid="1234",
            minResources={"cpu": "12", "memory": "8Gi", "nvidia.com/gpu": 4},
            scheduleTimeoutSeconds=60,
            priority=10,
            queue="research",
            roles=[{"name": "master", "minMember": 1}, {"name": "worker", "minMember": 3}],
            status={
                "phase": "Scheduling",
                "scheduled": 2,
                "pending": 2,
                "conditions": [
                    {
                        "type": "Unschedulable",
                        "status": "True",
                        "reason": "NotEnoughResources",
                        "message": "0/3 nodes are available",
                        "lastTransitionTime": "2026-11-23T10:01:00Z",
                        "transitionID": "abc",
                    }
                ],
                "allocated": {"cpu": "6"},
            },
        )
    )
    assert group.key == "ml/train"
    assert group.uid == "1234"
    assert group.creation_timestamp is not None
    assert group.creation_timestamp.year == 2026
    assert group.spec.min_member == 4
    assert group.spec.min_resource_amounts() == {
        "cpu": 12000,
        "memory": 8 * 2**30,
        "nvidia.com/gpu": 4,
    }
    assert group.spec.role_minimums() == {"master": 1, "worker": 3}
    assert group.status.phase is PodGroupPhase.SCHEDULING
    condition = group.status.condition(ConditionType.UNSCHEDULABLE)
    assert condition is not None
    assert condition.status is ConditionStatus.TRUE
    assert condition.transition_id == "abc"
    dumped = group.status.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert dumped["conditions"][0]["transitionID"] == "abc"
    assert dumped["conditions"][0]["lastTransitionTime"].startswith("2026-11-23T10:01:00")


def test_defaults() -> None:
    spec = PodGroupSpec.model_validate({"minMember": 1})
    assert spec.queue == "default"
    assert spec.roles is None
    assert spec.min_resource_amounts() == {}
    assert spec.role_minimums() == {}
    assert PodGroupStatus().phase is PodGroupPhase.PENDING


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "minMember"),
        ({"minMember": 0}, "greater than or equal to 1"),
        ({"minMember": 1, "scheduleTimeoutSeconds": 0}, "greater than or equal to 1"),
        ({"minMember": 1, "minResources": {"cpu": "lots"}}, "'lots'"),
        ({"minMember": 1, "minResources": {"cpu": "-1"}}, "must not be negative"),
        (
            {
                "minMember": 4,
                "roles": [{"name": "a", "minMember": 1}, {"name": "a", "minMember": 1}],
            },
            "role names must be unique; repeated: a",
        ),
        (
            {
                "minMember": 3,
                "roles": [{"name": "a", "minMember": 2}, {"name": "b", "minMember": 2}],
            },
            "roles require 4 members in all, more than minMember 3",
        ),
        ({"minMember": 1, "roles": [{"name": "a", "minMember": 0}]}, "greater than or equal to 1"),
        ({"minMember": 1, "minmember": 2}, "Extra inputs"),
    ],
    ids=[
        "missing-minMember",
        "minMember-zero",
        "timeout-zero",
        "bad-quantity",
        "negative-quantity",
        "duplicate-roles",
        "roles-exceed-minMember",
        "role-minMember-zero",
        "misspelt-field",
    ],
)
def test_invalid_specs_are_refused_with_a_clear_message(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        PodGroupSpec.model_validate(spec)


@pytest.mark.parametrize(
    ("labels", "group", "role"),
    [
        (None, None, None),
        ({}, None, None),
        ({"scheduling.sigs.k8s.io/pod-group": "a"}, "a", None),
        ({"pod-group.scheduling.sigs.k8s.io": "b"}, "b", None),
        ({"scheduling.x-k8s.io/pod-group": "c"}, "c", None),
        (
            {"scheduling.x-k8s.io/pod-group": "old", "scheduling.sigs.k8s.io/pod-group": "new"},
            "new",
            None,
        ),
        ({"scheduling.sigs.k8s.io/pod-group": "", "scheduling.x-k8s.io/pod-group": "c"}, "c", None),
        (
            {"scheduling.sigs.k8s.io/pod-group": "a", "scheduling.sigs.k8s.io/role": "worker"},
            "a",
            "worker",
        ),
    ],
    ids=[
        "none",
        "empty",
        "canonical",
        "alias-1",
        "alias-2",
        "canonical-wins",
        "empty-skipped",
        "role",
    ],
)
def test_group_and_role_labels(
    labels: dict[str, str] | None, group: str | None, role: str | None
) -> None:
    assert pod_group_name(labels) == group
    assert pod_role(labels) == role
