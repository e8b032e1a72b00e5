"""A Queue's status, derived from the core's numbers and its groups' phases."""

from __future__ import annotations

import datetime

from coscheduler.api.queue import Queue
from coscheduler.controller.queues import ACTIVE, derive_queue_status
from coscheduler.core.quota import QueueUsage

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
LATER = NOW + datetime.timedelta(minutes=5)


def usage(**fields: object) -> QueueUsage:
    base: dict[str, object] = {
        "allocated": {"cpu": 6000, "memory": 2 * 2**30},
        "borrowed": {"cpu": 2000},
        "nominal": {"cpu": 4000},
        "max": {"cpu": 8000},
        "share": 1.5,
        "problem": None,
    }
    base.update(fields)
    return QueueUsage(**base)  # type: ignore[arg-type]


def queue(state: str = "Open", status: dict[str, object] | None = None) -> Queue:
    return Queue.model_validate(
        {"metadata": {"name": "team-a"}, "spec": {"state": state}, "status": status or {}}
    )


def test_an_open_queue_shows_its_numbers_and_counts() -> None:
    status = derive_queue_status(queue(), usage(), {"pending": 2, "admitted": 1, "running": 3}, NOW)
    assert status.allocated == {"cpu": "6", "memory": "2Gi"}
    assert status.borrowed == {"cpu": "2"}
    assert status.nominal == {"cpu": "4"}
    assert status.max == {"cpu": "8"}
    assert status.dominant_share == "150%"
    assert (status.pending_groups, status.admitted_groups, status.running_groups) == (2, 1, 3)
    (active,) = status.conditions
    assert (active.type, active.status, active.reason) == (ACTIVE, "True", "Open")
    assert active.last_transition_time == NOW


def test_the_transition_time_moves_only_when_the_condition_changes() -> None:
    first = derive_queue_status(queue(), usage(), {}, NOW)
    stored = first.model_dump(by_alias=True, mode="json", exclude_none=True)
    again = derive_queue_status(queue(status=stored), usage(), {}, LATER)
    assert again.conditions[0].last_transition_time == NOW
    closed = derive_queue_status(queue("Closed", stored), usage(), {}, LATER)
    (active,) = closed.conditions
    assert (active.status, active.reason) == ("False", "QueueClosed")
    assert active.last_transition_time == LATER


def test_a_broken_tree_is_told_on_the_queue() -> None:
    problem = "queue team-a: its parents form a cycle (team-a -> b -> team-a)"
    status = derive_queue_status(queue(), usage(problem=problem), {}, NOW)
    (active,) = status.conditions
    assert (active.status, active.reason, active.message) == ("False", "QueueInvalid", problem)


def test_nothing_allocated_leaves_the_amounts_out() -> None:
    status = derive_queue_status(
        queue(), usage(allocated={}, borrowed={}, nominal={}, max={}, share=0.0), {}, NOW
    )
    assert (status.allocated, status.borrowed, status.nominal, status.max) == (None,) * 4
    assert status.dominant_share == "0%"


def test_the_lending_limit_and_recent_usage_are_shown_to_three_digits() -> None:
    status = derive_queue_status(
        queue(), usage(lending_limit={"cpu": 1000}, recent={"cpu": 12_345, "memory": 0}), {}, NOW
    )
    assert status.lending_limit == {"cpu": "1"}
    # Recent usage decays every second: shown rounded, so a round writes it only when it moved.
    assert status.recent_usage == {"cpu": "12300m"}
    assert derive_queue_status(queue(), usage(), {}, NOW).recent_usage is None
