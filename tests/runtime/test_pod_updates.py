"""runtime/handlers/pods.py: an update that changes nothing read is not fed again."""

from __future__ import annotations

import copy
from typing import Any

from coscheduler.api.pod import PodInfo
from coscheduler.core.scheduler import Scheduler
from tests.builders import pod_object
from tests.fed import Fed

Raw = dict[str, Any]


class _CountingScheduler(Scheduler):
    """Counts what the pod handler feeds."""

    fed = 0

    def upsert_pod(self, pod: PodInfo) -> None:
        self.fed += 1
        super().upsert_pod(pod)


def _running_pod() -> tuple[Fed, Raw]:
    state = Fed(_CountingScheduler(clock=lambda: 0.0))
    raw = pod_object("p", group="g", node="n1", phase="Running")
    raw["status"]["startTime"] = "2026-01-01T00:00:00Z"
    state.handlers.pods.upsert(raw)
    return state, raw


def _times_fed(state: Fed) -> int:
    scheduler = state.scheduler
    assert isinstance(scheduler, _CountingScheduler)
    return scheduler.fed


def test_an_update_of_what_is_not_read_leaves_the_fed_pod_as_it_was() -> None:
    state, raw = _running_pod()
    uid = raw["metadata"]["uid"]
    fed = state.scheduler.pod(uid)
    later = copy.deepcopy(raw)
    later["metadata"]["resourceVersion"] = "7"
    later["status"]["podIP"] = "10.0.0.9"
    later["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    state.handlers.pods.upsert(later)
    assert state.scheduler.pod(uid) is fed
    assert _times_fed(state) == 1


def test_progress_and_other_changes_are_still_fed() -> None:
    state, raw = _running_pod()
    uid = raw["metadata"]["uid"]
    done = copy.deepcopy(raw)
    done["status"]["phase"] = "Succeeded"
    state.handlers.pods.upsert(done)
    assert _times_fed(state) == 2
    pod = state.scheduler.pod(uid)
    assert pod is not None
    assert pod.phase == "Succeeded"
    relabelled = copy.deepcopy(done)
    relabelled["metadata"]["labels"]["team"] = "a"
    state.handlers.pods.upsert(relabelled)
    pod = state.scheduler.pod(uid)
    assert pod is not None
    assert pod.labels.get("team") == "a"


def test_a_pod_read_again_after_being_forgotten_is_fed_again() -> None:
    state, raw = _running_pod()
    uid = raw["metadata"]["uid"]
    state.handlers.pods.remove(raw)
    assert state.scheduler.pod(uid) is None
    state.handlers.pods.upsert(copy.deepcopy(raw))
    assert state.scheduler.pod(uid) is not None


def test_a_pod_with_claims_is_fed_again_all_the_same() -> None:
    # What the core counts of it (volume attachments, devices) follows its claims as they are.
    state = Fed(_CountingScheduler(clock=lambda: 0.0))
    raw = pod_object("p", group="g", node="n1", phase="Running")
    raw["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]
    state.handlers.pods.upsert(raw)
    later = copy.deepcopy(raw)
    later["status"]["podIP"] = "10.0.0.9"
    state.handlers.pods.upsert(later)
    assert _times_fed(state) == 2
