"""PodGroup status from members: counters, phases, conditions and transitions."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from coscheduler.api.podgroup import (
    ConditionStatus,
    ConditionType,
    PodGroupPhase,
    PodGroupSpec,
    PodGroupStatus,
)
from coscheduler.api.quantity import format_resource_list
from coscheduler.api.reasons import Reason
from coscheduler.controller.status import Transition, derive
from coscheduler.core.status import Code, Status


def first_status(verdict: Status) -> tuple[PodGroupStatus, list[Transition]]:
    """The first status of a group of six pending members after a failed attempt."""
    return derive(
        spec=SPEC, previous=PodGroupStatus(), members=members(pending=6), verdict=verdict, now=NOW
    )


def failed_attempt(reason: Reason, message: str) -> Status:
    """A failed attempt's status, as the loop records it for the controller."""
    return Status(Code.UNSCHEDULABLE, reason, message)


NOW = datetime.datetime(2026, 11, 23, 10, 0, tzinfo=datetime.UTC)
LATER = NOW + datetime.timedelta(minutes=1)


@dataclass(frozen=True)
class FakeMember:
    phase: str = "Pending"
    node_name: str | None = None
    requests: Mapping[str, int] = field(default_factory=lambda: {"cpu": 1000, "pods": 1})
    owner_uid: str | None = "rs-1"


def members(**counts: int) -> list[FakeMember]:
    """members(pending=2, bound=1, running=3, succeeded=1, failed=1, unknown=1)."""
    result: list[FakeMember] = []
    result += [FakeMember() for _ in range(counts.get("pending", 0))]
    result += [FakeMember(node_name="n1") for _ in range(counts.get("bound", 0))]
    for phase in ("running", "succeeded", "failed", "unknown"):
        result += [
            FakeMember(phase=phase.capitalize(), node_name="n1")
            for _ in range(counts.get(phase, 0))
        ]
    return result


SPEC = PodGroupSpec(min_member=4)


@pytest.mark.parametrize(
    ("counts", "phase"),
    [
        ({}, PodGroupPhase.PENDING),
        ({"pending": 6}, PodGroupPhase.PENDING),
        ({"pending": 3, "bound": 1}, PodGroupPhase.SCHEDULING),
        ({"pending": 2, "bound": 4}, PodGroupPhase.SCHEDULED),
        ({"pending": 2, "bound": 1, "running": 3}, PodGroupPhase.SCHEDULED),
        ({"pending": 2, "running": 4}, PodGroupPhase.RUNNING),
        ({"running": 2, "succeeded": 2}, PodGroupPhase.RUNNING),
        ({"succeeded": 4}, PodGroupPhase.FINISHED),
        ({"succeeded": 5, "failed": 1}, PodGroupPhase.FINISHED),
        ({"running": 3, "failed": 1}, PodGroupPhase.FAILED),
        ({"running": 4, "failed": 1}, PodGroupPhase.RUNNING),
        ({"succeeded": 2, "failed": 2}, PodGroupPhase.FAILED),
        ({"running": 2, "unknown": 2}, PodGroupPhase.UNKNOWN),
    ],
    ids=lambda v: str(v) if isinstance(v, dict) else v.value,
)
def test_phase(counts: dict[str, int], phase: PodGroupPhase) -> None:
    status, _ = derive(
        spec=SPEC, previous=PodGroupStatus(), members=members(**counts), verdict=None, now=NOW
    )
    assert status.phase is phase


def test_counters_allocated_and_owner() -> None:
    status, _ = derive(
        spec=SPEC,
        previous=PodGroupStatus(),
        members=members(pending=2, bound=1, running=2, succeeded=1, failed=1),
        verdict=None,
        now=NOW,
    )
    assert (status.pending, status.scheduled, status.running) == (2, 5, 2)
    assert (status.succeeded, status.failed, status.unknown) == (1, 1, 0)
    # Only members holding a node count as allocated: 1 bound + 2 running.
    assert status.allocated == {"cpu": "3", "pods": "3"}
    assert status.occupied_by == "rs-1"


def test_waiting_group_shows_the_planner_reason_and_an_event_once() -> None:
    verdict = failed_attempt(
        Reason.NOT_ENOUGH_RESOURCES,
        "0/2 nodes are available for 4 pods of group ml/train: 2 Insufficient cpu.",
    )
    status, transitions = first_status(verdict)
    unschedulable = status.condition(ConditionType.UNSCHEDULABLE)
    assert unschedulable is not None
    assert unschedulable.status is ConditionStatus.TRUE
    assert unschedulable.reason == "NotEnoughResources"
    assert unschedulable.message == verdict.message
    scheduled = status.condition(ConditionType.SCHEDULED)
    assert scheduled is not None
    assert scheduled.status is ConditionStatus.FALSE
    assert "0 of minMember 4 members are bound" in (scheduled.message or "")
    assert status.schedule_start_time == NOW
    assert [t.reason for t in transitions] == ["FailedScheduling"]

    again, transitions = derive(
        spec=SPEC, previous=status, members=members(pending=6), verdict=verdict, now=LATER
    )
    assert transitions == []
    again_condition = again.condition(ConditionType.UNSCHEDULABLE)
    assert again_condition is not None
    assert again_condition.last_transition_time == NOW  # unchanged status keeps its time
    assert again.schedule_start_time == NOW


def test_placed_group_clears_unschedulable_and_records_the_phase_change() -> None:
    waiting, _ = first_status(failed_attempt(Reason.NOT_ENOUGH_RESOURCES, "no room"))
    placed, transitions = derive(
        spec=SPEC, previous=waiting, members=members(pending=2, running=4), verdict=None, now=LATER
    )
    assert placed.phase is PodGroupPhase.RUNNING
    unschedulable = placed.condition(ConditionType.UNSCHEDULABLE)
    assert unschedulable is not None
    assert unschedulable.status is ConditionStatus.FALSE
    assert unschedulable.last_transition_time == LATER
    scheduled = placed.condition(ConditionType.SCHEDULED)
    assert scheduled is not None
    assert scheduled.status is ConditionStatus.TRUE
    assert [(t.kind, t.reason) for t in transitions] == [("Normal", "Running")]
    assert "Pending -> Running" in transitions[0].message


def test_failed_member_is_a_warning_and_replacements_recover() -> None:
    running, _ = derive(
        spec=SPEC, previous=PodGroupStatus(), members=members(running=4), verdict=None, now=NOW
    )
    failed, transitions = derive(
        spec=SPEC, previous=running, members=members(running=3, failed=1), verdict=None, now=NOW
    )
    assert failed.phase is PodGroupPhase.FAILED
    assert [(t.kind, t.reason) for t in transitions] == [("Warning", "Failed")]
    recovered, _ = derive(
        spec=SPEC, previous=failed, members=members(running=4, failed=1), verdict=None, now=NOW
    )
    assert recovered.phase is PodGroupPhase.RUNNING


def test_status_round_trips_through_the_wire_form() -> None:
    status, _ = first_status(failed_attempt(Reason.TIMEOUT, "not placed within 60s"))
    wire = status.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert PodGroupStatus.model_validate(wire) == status


@pytest.mark.parametrize(
    ("amounts", "text"),
    [
        ({"cpu": 1500}, {"cpu": "1500m"}),
        ({"cpu": 3000}, {"cpu": "3"}),
        ({"memory": 2**30, "nvidia.com/gpu": 2}, {"memory": "1Gi", "nvidia.com/gpu": "2"}),
        ({"memory": 1500, "pods": 1024}, {"memory": "1500", "pods": "1024"}),
        (
            {"hugepages-2Mi": 2**21, "example.com/fpga": 2048},
            {"example.com/fpga": "2048", "hugepages-2Mi": "2Mi"},
        ),
    ],
)
def test_format_resource_list(amounts: dict[str, int], text: dict[str, str]) -> None:
    assert format_resource_list(amounts) == text
