"""runtime/handlers/podgroups.py: a new generation that changes only the status is no new spec.

Volcano's CRD has no ``/status`` subresource, so every status write (ours
included) bumps ``metadata.generation``; the group's policy must not be given
to the core again for it (each time would retry the group at once).
"""

from __future__ import annotations

import pytest

from coscheduler.api.adapters import volcano
from coscheduler.api.podgroup import PodGroupPhase, PodGroupStatus
from coscheduler.core.group import GroupPolicy
from coscheduler.core.scheduler import Scheduler
from tests.builders import podgroup_object
from tests.fed import Fed

API_VERSION = "scheduling.volcano.sh/v1beta1"


def test_a_status_only_generation_is_not_a_new_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    state = Fed(Scheduler(lambda: 0.0))
    given: list[str] = []
    real = state.scheduler.upsert_group

    def upsert_group(policy: GroupPolicy) -> None:
        given.append(policy.name)
        real(policy)

    monkeypatch.setattr(state.scheduler, "upsert_group", upsert_group)
    state.handlers.podgroups[volcano.ADAPTER.api].upsert(
        podgroup_object("train", 2, api_version=API_VERSION)
    )
    written = podgroup_object(
        "train", 2, api_version=API_VERSION, generation=2, status={"phase": "Inqueue"}
    )
    state.handlers.podgroups[volcano.ADAPTER.api].upsert(written)
    assert given == ["train"]

    changed = podgroup_object("train", 3, api_version=API_VERSION, generation=3)
    state.handlers.podgroups[volcano.ADAPTER.api].upsert(changed)
    assert given == ["train", "train"]


def test_our_own_status_coming_back_in_a_new_generation_keeps_ours_in_full() -> None:
    state = Fed(Scheduler(lambda: 0.0))
    key = state.handlers.podgroups[volcano.ADAPTER.api].upsert(
        podgroup_object("train", 2, api_version=API_VERSION)
    )
    assert key is not None
    groups = state.handlers.groups
    ours = PodGroupStatus(phase=PodGroupPhase.SCHEDULED, scheduled=2, pending=0)
    body = volcano.ADAPTER.render_status(ours, [])
    groups.set_status(key, ours, volcano.ADAPTER.stored_form(body))

    echo = podgroup_object("train", 2, api_version=API_VERSION, generation=2, status=body)
    state.handlers.podgroups[volcano.ADAPTER.api].upsert(echo)
    assert groups.podgroups[key].status == ours, "not Volcano's Running read back as ours"

    theirs = {**body, "phase": "Completed"}
    other = podgroup_object("train", 2, api_version=API_VERSION, generation=3, status=theirs)
    state.handlers.podgroups[volcano.ADAPTER.api].upsert(other)
    assert groups.podgroups[key].status.phase == PodGroupPhase.FINISHED, "someone else's, read"
