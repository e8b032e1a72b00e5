"""A native PodGroup's Workload (1.36 and later): its queue label and the Job that makes
the members, fed by hand."""

from __future__ import annotations

from typing import Any

import pytest

from coscheduler.api.adapters import native
from coscheduler.api.native_workload import ControllerRef, read_native_workload
from coscheduler.api.reasons import Reason
from coscheduler.core.group import KIND_NATIVE_POD_GROUP, GroupKey
from coscheduler.core.planner import Decision
from coscheduler.core.scheduler import Scheduler
from tests.builders import (
    TOLD_AT_ONCE,
    job_object,
    native_podgroup_object,
    node_object,
    pod_object,
    scheduling_group,
)
from tests.fed import Fed

BETA = native.ADAPTERS[0]
QUEUE = "scheduling.sigs.k8s.io/queue"
KEY = GroupKey("default", "train", KIND_NATIVE_POD_GROUP)


def workload(
    name: str = "train-wl", *, queue: str | None = None, job: str | None = None
) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "apiVersion": f"scheduling.k8s.io/{BETA.version}",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-wl-{name}",
            "labels": {QUEUE: queue} if queue else {},
        },
        "spec": {
            "podGroupTemplates": [{"name": "t", "schedulingPolicy": {"gang": {"minCount": 2}}}]
        },
    }
    if job is not None:
        raw["spec"]["controllerRef"] = {"apiGroup": "batch", "kind": "Job", "name": job}
    return raw


def podgroup(
    min_count: int = 2, *, labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    return native_podgroup_object(
        "train",
        min_count,
        labels=labels,
        workloadRef={"workloadName": "train-wl", "templateName": "t"},
        **spec,
    )


def queue_of(state: Fed) -> str:
    policy = state.scheduler.policy(KEY)
    assert policy is not None
    assert state.handlers.groups.podgroups[KEY].spec.queue == policy.queue
    return policy.queue


def decisions(state: Fed) -> list[Decision]:
    made = []
    while (decision := state.scheduler.next_decision()) is not None:
        made.append(decision)
    return made


# -- the queue ---------------------------------------------------------------------------


def test_a_podgroup_without_a_queue_label_takes_its_workload_s() -> None:
    state = Fed(Scheduler(lambda: 0.0))
    state.handlers.podgroups[BETA.api].upsert(podgroup())
    assert queue_of(state) == "default"

    state.handlers.native_workloads.upsert(workload(queue="research"))
    assert queue_of(state) == "research"

    state.handlers.native_workloads.remove(workload(queue="research"))
    assert queue_of(state) == "default"


def test_the_workload_read_first_still_gives_its_queue() -> None:
    state = Fed(Scheduler(lambda: 0.0))
    state.handlers.native_workloads.upsert(workload(queue="research"))
    state.handlers.podgroups[BETA.api].upsert(podgroup())
    assert queue_of(state) == "research"


def test_the_podgroup_s_own_label_wins_over_its_workload_s() -> None:
    state = Fed(Scheduler(lambda: 0.0))
    state.handlers.native_workloads.upsert(workload(queue="research"))
    state.handlers.podgroups[BETA.api].upsert(podgroup(labels={QUEUE: "prod"}))
    assert queue_of(state) == "prod"


def test_a_workload_of_another_name_gives_nothing() -> None:
    state = Fed(Scheduler(lambda: 0.0))
    state.handlers.native_workloads.upsert(workload("other", queue="research"))
    state.handlers.podgroups[BETA.api].upsert(podgroup())
    assert queue_of(state) == "default"


def test_the_workload_is_read_for_its_label_and_controller() -> None:
    read = read_native_workload(workload(queue="research", job="train"))
    assert (read.namespace, read.name, read.queue) == ("default", "train-wl", "research")
    assert read.controller == ControllerRef("batch", "Job", "train")
    assert read.controller.is_job


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("controllerRef", "train"),
        ("controllerRef", {"apiGroup": "batch", "kind": "Job"}),
        ("controllerRef", {"apiGroup": 1, "kind": "Job", "name": "x"}),
    ],
)
def test_an_unreadable_workload_names_its_field(field: str, value: object) -> None:
    raw = workload()
    raw["spec"][field] = value
    with pytest.raises(ValueError, match=r"spec\.controllerRef"):
        read_native_workload(raw)


def test_an_unreadable_workload_is_reported_and_gives_no_queue() -> None:
    invalid: list[Any] = []
    state = Fed(Scheduler(lambda: 0.0), on_invalid=invalid.append)
    state.handlers.native_workloads.upsert(workload(queue="research"))
    state.handlers.podgroups[BETA.api].upsert(podgroup())
    bad = workload(queue="research")
    bad["metadata"]["labels"][QUEUE] = 7
    state.handlers.native_workloads.upsert(bad)
    assert [i.kind for i in invalid] == ["Workload"]
    assert queue_of(state) == "default"


# -- a gang larger than its Job runs at once ------------------------------------------------


def members(state: Fed, count: int, owner: str | None = "train") -> None:
    for index in range(count):
        state.handlers.pods.upsert(
            pod_object(f"train-{index}", spec_extra=scheduling_group("train"), owner=owner)
        )


def test_a_gang_larger_than_its_job_s_parallelism_says_the_job_can_make_only_so_many() -> None:
    state = Fed(Scheduler(lambda: 0.0, TOLD_AT_ONCE))
    state.handlers.nodes.replace([node_object("n0", cpu="8")])
    state.handlers.jobs.replace([job_object("train", parallelism=2)])
    state.handlers.podgroups[BETA.api].upsert(podgroup(min_count=4))
    members(state, 2)

    [waiting] = decisions(state)
    assert waiting.status.reason is Reason.NOT_ENOUGH_MEMBERS
    assert waiting.status.message.startswith(
        "2/4 members exist, and Job default/train runs at most 2 pods at once"
    )
    assert "lower minCount to 2 or raise the Job's parallelism" in waiting.status.message

    state.handlers.jobs.upsert(job_object("train", parallelism=4))  # scaled up: no longer said
    members(state, 3)
    [short] = decisions(state)
    assert short.status.message == "3/4 members exist"


def test_the_job_named_by_the_workload_counts_before_any_pod_exists() -> None:
    state = Fed(Scheduler(lambda: 0.0, TOLD_AT_ONCE))
    state.handlers.nodes.replace([node_object("n0", cpu="8")])
    state.handlers.jobs.replace([job_object("train", parallelism=8, completions=10, succeeded=7)])
    state.handlers.native_workloads.upsert(workload(job="train"))
    state.handlers.podgroups[BETA.api].upsert(podgroup(min_count=4))
    members(state, 1, owner=None)

    [waiting] = decisions(state)
    # 3 completions left: never more than 3 pods at once.
    assert "Job default/train runs at most 3 pods at once" in waiting.status.message


def test_a_job_that_can_make_the_gang_changes_nothing() -> None:
    state = Fed(Scheduler(lambda: 0.0))
    state.handlers.nodes.replace([node_object("n0", cpu="8")])
    state.handlers.jobs.replace([job_object("train", parallelism=4)])
    state.handlers.podgroups[BETA.api].upsert(podgroup(min_count=4))
    members(state, 4)
    [placed] = decisions(state)
    assert len(placed.bindings) == 4


def test_without_a_known_job_the_count_is_all_that_is_said() -> None:
    state = Fed(Scheduler(lambda: 0.0, TOLD_AT_ONCE))
    state.handlers.nodes.replace([node_object("n0", cpu="8")])
    state.handlers.podgroups[BETA.api].upsert(podgroup(min_count=4))
    members(state, 2, owner=None)
    [waiting] = decisions(state)
    assert waiting.status.message == "2/4 members exist"
