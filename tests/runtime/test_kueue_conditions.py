"""controller/kueue_conditions.py: our condition applied to Kueue's Workload, seen on the wire."""

from __future__ import annotations

import datetime
from functools import partial

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


async def test_a_refused_write_is_tried_again(apiserver: FakeApiServer, kube: KubeClient) -> None:
    apiserver.on(
        "PATCH", STATUS, status_error(503, "ServiceUnavailable"), lambda r: Reply(200, r.body)
    )
    changes = Changes()
    state = Fed(Scheduler(lambda: 0.0))
    state.handlers.kueue_workloads.upsert(kueue_workload({"main": 1}, admitted={"main": 1}))
    state.handlers.pods.replace([member("train-0")])
    view = ReadModel(state.scheduler, state.handlers)
    record = partial(record_status, state.handlers.groups, changes.kueue)
    writer = KueueConditionWriter(view=view, marked=changes.kueue, client=kube)

    record(KEY, waiting("no room"), None)
    await writer.write_marked()
    await writer.write_marked()

    assert len(apiserver.requests_to("PATCH", STATUS)) == 2
    assert writer.writes == 1
