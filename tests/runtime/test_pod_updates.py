"""runtime/handlers/pods.py: an update that changes nothing read is not fed again."""

from __future__ import annotations

import copy
from typing import Any

from coscheduler.api.pod import PodInfo
from coscheduler.core.scheduler import Scheduler
from tests.builders import pod_object
from tests.informed import Informed

Raw = dict[str, Any]


class _CountingScheduler(Scheduler):
    """Counts what the pod handler feeds."""

    fed = 0

    def upsert_pod(self, pod: PodInfo) -> None:
        self.fed += 1
        super().upsert_pod(pod)


def _informed() -> tuple[Informed, Raw]:
    informed = Informed(_CountingScheduler(clock=lambda: 0.0))
    raw = pod_object("p", group="g", node="n1", phase="Running")
    raw["status"]["startTime"] = "2026-01-01T00:00:00Z"
    informed.handlers.pods.upsert(raw)
    return informed, raw


def _fed(informed: Informed) -> int:
    scheduler = informed.scheduler
    assert isinstance(scheduler, _CountingScheduler)
    return scheduler.fed


def test_an_update_of_what_is_not_read_leaves_the_fed_pod_as_it_was() -> None:
    informed, raw = _informed()
    uid = raw["metadata"]["uid"]
    fed = informed.scheduler.pod(uid)
    later = copy.deepcopy(raw)
    later["metadata"]["resourceVersion"] = "7"
    later["status"]["podIP"] = "10.0.0.9"
    later["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    informed.handlers.pods.upsert(later)
    assert informed.scheduler.pod(uid) is fed
    assert _fed(informed) == 1


def test_progress_and_other_changes_are_still_fed() -> None:
    informed, raw = _informed()
    uid = raw["metadata"]["uid"]
    done = copy.deepcopy(raw)
    done["status"]["phase"] = "Succeeded"
    informed.handlers.pods.upsert(done)
    assert _fed(informed) == 2
    pod = informed.scheduler.pod(uid)
    assert pod is not None
    assert pod.phase == "Succeeded"
    relabelled = copy.deepcopy(done)
    relabelled["metadata"]["labels"]["team"] = "a"
    informed.handlers.pods.upsert(relabelled)
    pod = informed.scheduler.pod(uid)
    assert pod is not None
    assert pod.labels.get("team") == "a"


def test_a_pod_read_again_after_being_forgotten_is_fed_again() -> None:
    informed, raw = _informed()
    uid = raw["metadata"]["uid"]
    informed.handlers.pods.remove(raw)
    assert informed.scheduler.pod(uid) is None
    informed.handlers.pods.upsert(copy.deepcopy(raw))
    assert informed.scheduler.pod(uid) is not None


def test_a_pod_with_claims_is_fed_again_all_the_same() -> None:
    # What the core counts of it (volume attachments, devices) follows its claims as they are.
    informed = Informed(_CountingScheduler(clock=lambda: 0.0))
    raw = pod_object("p", group="g", node="n1", phase="Running")
    raw["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]
    informed.handlers.pods.upsert(raw)
    later = copy.deepcopy(raw)
    later["status"]["podIP"] = "10.0.0.9"
    informed.handlers.pods.upsert(later)
    assert _fed(informed) == 2
