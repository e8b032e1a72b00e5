"""The PodGroup status writer's rules, seen as the PATCHes it sends.

A gang's many pod events make one write (debounce); a status that did not
change is not written again; a group deleted meanwhile (404) is let go; an
answer worth retrying (503, no answer) marks the group again; a refusal
(422) is logged and not retried.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from coscheduler.api import labels
from coscheduler.controller.writer import ChangedGroups, StatusWriter
from coscheduler.core.group import GroupKey
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.cluster import ClusterState
from coscheduler.runtime.events import EventRecorder
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.metrics import Metrics
from tests.builders import pod_object
from tests.runtime.apiserver import Disconnect, FakeApiServer, Reply, status_error

TRAIN = GroupKey("ml", "train")
STATUS_PATH = f"/apis/{labels.GROUP}/{labels.VERSION}/namespaces/ml/{labels.PLURAL}/train/status"
DEBOUNCE = 0.05


def podgroup_object() -> dict[str, object]:
    return {
        "apiVersion": f"{labels.GROUP}/{labels.VERSION}",
        "kind": labels.KIND,
        "metadata": {
            "name": "train",
            "namespace": "ml",
            "uid": "pg-1",
            "generation": 1,
            "creationTimestamp": "2026-11-24T00:00:00Z",
        },
        "spec": {"minMember": 2},
    }


@dataclass
class Writing:
    state: ClusterState
    changed: ChangedGroups
    writer: StatusWriter

    async def settle(self) -> None:
        """Longer than the debounce and a round trip to the test server."""
        await asyncio.sleep(DEBOUNCE * 6)


@asynccontextmanager
async def writing(kube: KubeClient) -> AsyncIterator[Writing]:
    """A state with group ml/train and two pending members, and its writer running."""
    changed = ChangedGroups()
    state = ClusterState(Scheduler(lambda: 0.0), on_group_changed=changed.mark)
    state.upsert_podgroup(podgroup_object())
    for index in range(2):
        state.upsert_pod(pod_object(f"train-{index}", namespace="ml", group="train"))
    writer = StatusWriter(
        state=state,
        changed=changed,
        client=kube,
        events=EventRecorder(kube),
        metrics=Metrics(),
        debounce_seconds=DEBOUNCE,
    )
    task = asyncio.create_task(writer.run())
    try:
        yield Writing(state, changed, writer)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_many_changes_in_a_short_time_make_one_write(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("PATCH", STATUS_PATH, Reply(200, {}))
    async with writing(kube) as run:
        # Members keep arriving, each changing the status, faster than the debounce.
        for index in range(2, 6):
            run.state.upsert_pod(pod_object(f"train-{index}", namespace="ml", group="train"))
            await asyncio.sleep(DEBOUNCE / 5)
        await run.settle()
        [patch] = apiserver.requests_to("PATCH", STATUS_PATH)
        status = patch.body["status"]
        assert (status["phase"], status["pending"], status["scheduled"]) == ("Pending", 6, 0)
        assert run.writer.writes == 1


async def test_a_status_already_written_is_not_written_again(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("PATCH", STATUS_PATH, Reply(200, {}))
    async with writing(kube) as run:
        run.writer.mark(TRAIN)
        await run.settle()
        run.writer.mark(TRAIN)
        await run.settle()
        assert len(apiserver.requests_to("PATCH", STATUS_PATH)) == 1


async def test_a_group_deleted_meanwhile_is_let_go(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("PATCH", STATUS_PATH, status_error(404, "NotFound"))
    async with writing(kube) as run:
        run.writer.mark(TRAIN)
        await run.settle()
        await run.settle()
        assert len(apiserver.requests_to("PATCH", STATUS_PATH)) == 1
        assert run.writer.writes == 0


async def test_an_answer_worth_retrying_marks_the_group_again(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on(
        "PATCH",
        STATUS_PATH,
        status_error(503, "ServiceUnavailable"),
        Disconnect(),
        Reply(200, {}),
    )
    async with writing(kube) as run:
        run.writer.mark(TRAIN)
        for _ in range(3):
            await run.settle()
        assert len(apiserver.requests_to("PATCH", STATUS_PATH)) == 3
        assert run.writer.writes == 1


async def test_a_refusal_is_not_retried(apiserver: FakeApiServer, kube: KubeClient) -> None:
    apiserver.on("PATCH", STATUS_PATH, status_error(422, "Invalid"))
    async with writing(kube) as run:
        run.writer.mark(TRAIN)
        await run.settle()
        await run.settle()
        assert len(apiserver.requests_to("PATCH", STATUS_PATH)) == 1
        assert run.writer.writes == 0
