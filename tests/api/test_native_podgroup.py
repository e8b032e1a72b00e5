"""Kubernetes' own PodGroup read in both served shapes (1.37's v1beta1, 1.36's v1alpha2),
and our status told back in upstream's words."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from coscheduler.api.adapters import native
from coscheduler.api.native_podgroup import PodGroupClaim, WorkloadRef, read_native_podgroup
from coscheduler.api.pod import PodInfo, PodParseError
from coscheduler.api.podgroup import (
    ConditionStatus,
    ConditionType,
    PodGroupCondition,
    PodGroupStatus,
)
from coscheduler.api.reasons import Reason
from tests.builders import native_podgroup_object, pod_object, scheduling_group

BETA, ALPHA = native.ADAPTERS
NOW = datetime.datetime(2026, 11, 23, 10, 0, tzinfo=datetime.UTC)


def test_every_field_of_v1beta1_is_read() -> None:
    raw = native_podgroup_object(
        "train",
        4,
        labels={"scheduling.sigs.k8s.io/queue": "research"},
        workloadRef={"workloadName": "job-1", "templateName": "workers"},
        schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/rack"}]},
        disruptionMode={"all": {}},
        priorityClassName="high",
        priority=1000,
        preemptionPolicy="Never",
        parentCompositePodGroupName="leader-and-workers",
    )
    group = read_native_podgroup(raw, "v1beta1")
    assert group.min_count == 4
    assert group.topology_key == "topology.kubernetes.io/rack"
    assert group.disruption_all
    assert group.priority_class_name == "high"
    assert group.priority == 1000
    assert group.never_preempts
    assert group.workload_ref == WorkloadRef("job-1", "workers")
    assert group.parent == "leader-and-workers"
    assert group.queue == "research"
    assert not group.resource_claims


def test_v1alpha2_names_its_template_and_disruption_mode_its_own_way() -> None:
    raw = native_podgroup_object(
        "train",
        2,
        version="v1alpha2",
        podGroupTemplateRef={"workload": {"workloadName": "w", "podGroupTemplateName": "t"}},
        disruptionMode="PodGroup",
    )
    group = read_native_podgroup(raw, "v1alpha2")
    assert (group.min_count, group.workload_ref, group.disruption_all) == (
        2,
        WorkloadRef("w", "t"),
        True,
    )
    assert not group.never_preempts


def test_defaults_basic_single_and_no_queue() -> None:
    group = read_native_podgroup(native_podgroup_object("solo", None), "v1beta1")
    assert group.min_count is None
    assert not group.disruption_all
    assert group.queue is None
    spec = native.spec_of(group)
    assert spec.min_member == 1  # basic: each member on its own
    assert spec.queue == "default"
    assert spec.topology is None


def test_the_spec_as_ours() -> None:
    raw = native_podgroup_object(
        "train",
        3,
        schedulingConstraints={"topology": [{"key": "rack"}]},
        priority=7,
        labels={"scheduling.sigs.k8s.io/queue": "q"},
    )
    group = BETA.parse(raw)
    assert group.spec.min_member == 3
    assert group.spec.topology is not None
    assert group.spec.topology.levels() == ("rack",)
    assert (group.spec.priority, group.spec.queue) == (7, "q")
    assert group.native is not None
    assert group.api.api_version == "scheduling.k8s.io/v1beta1"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"schedulingPolicy": {}}, "exactly one of basic and gang"),
        ({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 2}}}, "exactly one of"),
        ({"schedulingPolicy": {"gang": {"minCount": 0}}}, "minCount"),
        ({"schedulingPolicy": {"gang": {}}}, "minCount"),
        ({"schedulingPolicy": {"gang": {"minCount": "two"}}}, "minCount"),
        ({"schedulingPolicy": {"elastic": {}}}, "elastic is not known"),
        ({"disruptionMode": {"some": {}}}, "some is not known"),
        ({"disruptionMode": {"single": {}, "all": {}}}, "exactly one of single and all"),
        ({"preemptionPolicy": "Sometimes"}, "preemptionPolicy"),
        ({"schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]}}, "topology"),
        ({"schedulingConstraints": {"topology": [{"key": "not a key!"}]}}, "key"),
        ({"workloadRef": {"workloadName": "w"}}, "templateName"),
        ({"priority": "high"}, "priority"),
    ],
)
def test_bad_input_is_refused_naming_the_field(spec: dict[str, Any], field: str) -> None:
    raw = native_podgroup_object("bad", 2)
    raw["spec"] = {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec}
    with pytest.raises(ValueError, match=field):
        BETA.parse(raw)


def test_a_missing_spec_is_refused() -> None:
    raw = native_podgroup_object("bad", 2)
    del raw["spec"]
    with pytest.raises(ValueError, match="spec"):
        BETA.parse(raw)


def test_v1alpha2_refuses_an_unknown_disruption_mode() -> None:
    raw = native_podgroup_object("bad", 2, version="v1alpha2", disruptionMode="Node")
    with pytest.raises(ValueError, match="disruptionMode"):
        ALPHA.parse(raw)


def test_resource_claims_are_read_and_matched_as_upstream_binds_them() -> None:
    entries = [
        {"name": "gpus", "resourceClaimTemplateName": "four"},
        {"name": "fabric", "resourceClaimName": "imex"},
    ]
    raw = native_podgroup_object("gpus", 2, resourceClaims=entries)
    gpus, fabric = read_native_podgroup(raw, "v1beta1").resource_claims
    assert gpus == PodGroupClaim("gpus", None, "four")
    assert gpus.matches("gpus", None, "four")
    assert not gpus.matches("gpus", None, "other")
    assert not gpus.matches("other", None, "four")
    assert fabric.matches("fabric", "imex", None)
    assert not fabric.matches("fabric", "imex", "four")


@pytest.mark.parametrize(
    ("entries", "field"),
    [
        ([{"name": "gpu"}], "exactly one of resourceClaimName"),
        ([{"name": "g", "resourceClaimName": "a", "resourceClaimTemplateName": "t"}], "exactly"),
        ([{"resourceClaimName": "a"}], "name"),
        (
            [{"name": "g", "resourceClaimName": "a"}, {"name": "g", "resourceClaimName": "b"}],
            "once",
        ),
    ],
)
def test_bad_resource_claims_are_refused_naming_the_field(
    entries: list[dict[str, Any]], field: str
) -> None:
    raw = native_podgroup_object("gpus", 2, resourceClaims=entries)
    with pytest.raises(ValueError, match=field) as caught:
        read_native_podgroup(raw, "v1beta1")
    assert "resourceClaims" in str(caught.value)


def test_a_pod_names_its_native_group_by_scheduling_group() -> None:
    pod = PodInfo.from_object(pod_object("w-0", spec_extra=scheduling_group("train")))
    assert pod.scheduling_group == "train"
    assert not pod.asks.unsupported
    with pytest.raises(PodParseError, match=r"spec\.schedulingGroup\.podGroupName"):
        PodInfo.from_object(pod_object("w-1", spec_extra={"schedulingGroup": {}}))
    with pytest.raises(PodParseError, match=r"spec\.schedulingGroup"):
        PodInfo.from_object(pod_object("w-2", spec_extra={"schedulingGroup": "train"}))


# -- status in upstream's words ------------------------------------------------


def _ours(*conditions: PodGroupCondition) -> PodGroupStatus:
    return PodGroupStatus(conditions=list(conditions))


def _condition(kind: str, status: ConditionStatus, reason: str, message: str) -> PodGroupCondition:
    return PodGroupCondition(
        type=kind, status=status, reason=reason, message=message, last_transition_time=NOW
    )


def test_a_failing_group_is_initially_scheduled_false_with_our_reason() -> None:
    status = BETA.conclude(
        _ours(
            _condition("Scheduled", ConditionStatus.FALSE, "NotEnoughResources", "0 of 4"),
            _condition("Unschedulable", ConditionStatus.TRUE, "NotEnoughResources", "0/3 nodes"),
        )
    )
    [condition] = BETA.render_status(status, [])["conditions"]
    assert condition["type"] == "PodGroupInitiallyScheduled"
    assert condition["status"] == "False"
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == "NotEnoughResources: 0/3 nodes"
    assert condition["lastTransitionTime"] == "2026-11-23T10:00:00Z"


def test_our_own_failure_is_a_scheduler_error() -> None:
    status = BETA.conclude(
        _ours(_condition("Unschedulable", ConditionStatus.TRUE, "InternalError", "boom"))
    )
    [condition] = BETA.render_status(status, [])["conditions"]
    assert condition["reason"] == "SchedulerError"


def test_placed_is_true_and_stays_true() -> None:
    placed = BETA.conclude(
        _ours(_condition("Scheduled", ConditionStatus.TRUE, "MinMemberScheduled", "4 of 4"))
    )
    [condition] = BETA.render_status(placed, [])["conditions"]
    assert (condition["status"], condition["reason"]) == ("True", "Scheduled")
    # Members lost later: ours says failing again, upstream's stays True (terminal).
    kept = [c for c in placed.conditions if c.type == "PodGroupInitiallyScheduled"]
    later = BETA.conclude(
        _ours(
            _condition("Scheduled", ConditionStatus.FALSE, "NotEnoughResources", "2 of 4"),
            _condition("Unschedulable", ConditionStatus.TRUE, "NotEnoughResources", "no room"),
            *kept,
        )
    )
    [condition] = BETA.render_status(later, [])["conditions"]
    assert condition["status"] == "True"


def test_v1alpha2_calls_the_condition_pod_group_scheduled() -> None:
    status = ALPHA.conclude(
        _ours(_condition("Unschedulable", ConditionStatus.TRUE, "NotEnoughMembers", "1/2"))
    )
    [condition] = ALPHA.render_status(status, [])["conditions"]
    assert condition["type"] == "PodGroupScheduled"


def test_disruption_target_and_others_conditions_are_written_ours_are_not() -> None:
    status = BETA.conclude(
        _ours(
            _condition(ConditionType.SCHEDULED, ConditionStatus.TRUE, "MinMemberScheduled", "ok"),
            native.disruption_condition("4 pods (the whole gang) for default/high", NOW),
            _condition("SomeoneElses", ConditionStatus.TRUE, "Why", "kept"),
        )
    )
    written = {c["type"]: c for c in BETA.render_status(status, [])["conditions"]}
    assert set(written) == {"PodGroupInitiallyScheduled", "DisruptionTarget", "SomeoneElses"}
    assert written["DisruptionTarget"]["reason"] == Reason.PREEMPTION_BY_SCHEDULER.value


def test_a_stored_status_reads_back_to_the_same_form() -> None:
    status = BETA.conclude(
        _ours(_condition("Unschedulable", ConditionStatus.TRUE, "NotEnoughResources", "full"))
    )
    body = BETA.render_status(status, [])
    assert BETA.stored_form(body) == BETA.stored_form(
        {
            "conditions": [
                dict(c, lastTransitionTime="2030-01-01T00:00:00Z") for c in body["conditions"]
            ]
        }
    )
    assert BETA.read_status(body).condition("PodGroupInitiallyScheduled") is not None
    with pytest.raises(ValueError, match="not a list"):
        BETA.read_status({"conditions": "nope"})
