"""controller/kueue_conditions.py: our condition applied to Kueue's Workload, seen on the wire."""

from __future__ import annotations

import datetime
from functools import partial

import pytest

from coscheduler.api.adapters import kueue
from coscheduler.api.podgroup import (
    ConditionStatus,
    ConditionType,
    PodGroupCondition,
    PodGroupStatus,
)
from coscheduler.controller.kueue_conditions import KueueConditionWriter
from coscheduler.core.scheduler import Scheduler
from coscheduler.operator import record_status
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.readmodel import Changes, ReadModel
from tests.builders import node_object
from tests.fed import Fed
from tests.runtime.apiserver import FakeApiServer, Reply, status_error
from tests.runtime.test_cluster_kueue import KEY, WORKLOAD, kueue_workload, member

STATUS = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads/{WORKLOAD}/status"
JOB_STATUS = "/apis/batch/v1/namespaces/default/jobs/train/status"
WHEN = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def waiting(message: str) -> PodGroupStatus:
    return PodGroupStatus(
        conditions=[
            PodGroupCondition(
                type=ConditionType.UNSCHEDULABLE,
                status=ConditionStatus.TRUE,
                reason="NotEnoughResources",
                message=message,
                last_transition_time=WHEN,
            )
        ]
    )


def waiting_gang(kube: KubeClient) -> KueueConditionWriter:
    """A writer with one admitted gang of one pod marked as waiting for room."""
    changes = Changes()
    state = Fed(Scheduler(lambda: 0.0))
    state.handlers.kueue_workloads.upsert(kueue_workload({"main": 1}, admitted={"main": 1}))
    state.handlers.pods.replace([member("train-0")])
    view = ReadModel(state.scheduler, state.handlers)
    record_status(state.handlers.groups, changes.kueue, KEY, waiting("no room"), None)
    return KueueConditionWriter(view=view, marked=changes.kueue, client=kube)


async def test_the_reason_a_gang_waits_is_applied_once_and_kueues_conditions_kept(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("PATCH", STATUS, lambda request: Reply(200, request.body))
    changes = Changes()
    state = Fed(Scheduler(lambda: 0.0))
    state.handlers.nodes.replace([node_object("n0", cpu="1")])
    state.handlers.kueue_workloads.upsert(kueue_workload({"main": 2}, admitted={"main": 2}))
    state.handlers.pods.replace([member("train-0"), member("train-1")])
    view = ReadModel(state.scheduler, state.handlers)
    record = partial(record_status, state.handlers.groups, changes.kueue)
    writer = KueueConditionWriter(view=view, marked=changes.kueue, client=kube)

    record(KEY, waiting("2 pods need 2 cpu; 1 free"), None)
    await writer.write_marked()
    record(KEY, waiting("2 pods need 2 cpu; 1 free"), None)
    await writer.write_marked()

    [applied] = apiserver.requests_to("PATCH", STATUS)
    assert applied.content_type == "application/apply-patch+yaml"
    assert applied.query["fieldManager"] == "coscheduler"
    # Server-side apply of our one condition: Kueue's own conditions are not in the body.
    assert applied.body["status"] == {
        "conditions": [
            {
                "type": "GangScheduled",
                "status": "False",
                "reason": "NotEnoughResources",
                "message": "2 pods need 2 cpu; 1 free",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }


@pytest.mark.parametrize("refusing", [STATUS, JOB_STATUS], ids=["workload", "job"])
async def test_a_refused_write_is_tried_again(
    apiserver: FakeApiServer, kube: KubeClient, refusing: str
) -> None:
    for path in (STATUS, JOB_STATUS):
        refusals = [status_error(503, "ServiceUnavailable")] if path == refusing else []
        apiserver.on("PATCH", path, *refusals, lambda r: Reply(200, r.body))
    writer = waiting_gang(kube)
    await writer.write_marked()
    await writer.write_marked()

    assert len(apiserver.requests_to("PATCH", refusing)) == 2
    assert writer.writes == 1


async def test_the_controlling_jobs_status_gets_the_same_condition_merged_by_type(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    """What MultiKueue copies from a worker to its manager is the Job's status."""
    apiserver.on("PATCH", STATUS, lambda request: Reply(200, request.body))
    apiserver.on("PATCH", JOB_STATUS, lambda request: Reply(200, request.body))
    writer = waiting_gang(kube)
    await writer.write_marked()

    [merged] = apiserver.requests_to("PATCH", JOB_STATUS)
    # A strategic merge patch: the Job's conditions merge by type, the Job controller's stay.
    assert merged.content_type == "application/strategic-merge-patch+json"
    [condition] = merged.body["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "GangScheduled",
        "False",
        "NotEnoughResources",
    )


def test_only_a_controlling_batch_job_is_the_workloads_job() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "controller": True}
    assert kueue.controlling_job({"ownerReferences": [job]}) == "train"
    assert kueue.controlling_job({"ownerReferences": [{**job, "controller": False}]}) is None
    jobset = {**job, "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}
    assert kueue.controlling_job({"ownerReferences": [jobset]}) is None
    assert kueue.controlling_job({}) is None
