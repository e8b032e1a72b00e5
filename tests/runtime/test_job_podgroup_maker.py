"""controller/jobgroups.py: a Job's PodGroup made, followed or left alone, seen on the wire."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from coscheduler.api.adapters.apis import SIGS
from coscheduler.api.adapters.volcano_owners import volcano_owner
from coscheduler.controller.jobgroups import JobGroupMaker
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.readmodel import Changes, ReadModel
from tests.builders import job_object, podgroup_object
from tests.fed import Fed
from tests.runtime.apiserver import FakeApiServer, RecordedRequest, Reply, status_error
from tests.runtime.reporting import quick_reporter

PODGROUPS = "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/podgroups"
EVENTS = "/api/v1/namespaces/default/events"


@dataclass
class Setup:
    state: Fed
    maker: JobGroupMaker
    apiserver: FakeApiServer

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [
            r.body
            for r in self.apiserver.requests_to("POST", EVENTS)
            if r.body["reason"] == reason and r.body["involvedObject"]["kind"] == "Job"
        ]

    async def settle(self) -> None:
        for _ in range(20):
            await asyncio.sleep(0.01)


@pytest.fixture
async def setup(apiserver: FakeApiServer, kube: KubeClient) -> AsyncIterator[Setup]:
    apiserver.on("POST", EVENTS, lambda request: Reply(201, request.body))
    changes = Changes()
    state = Fed(Scheduler(lambda: 0.0), on_owner_changed=changes.owner)
    state.handlers.owners.watched = True
    reporter = quick_reporter(kube, state.scheduler)
    maker = JobGroupMaker(
        view=ReadModel(state.scheduler, state.handlers),
        marked=changes.owners,
        reporter=reporter,
        retry_initial_seconds=0.01,
    )
    tasks = [asyncio.create_task(maker.run()), asyncio.create_task(reporter.run_events())]
    yield Setup(state, maker, apiserver)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def created(request: RecordedRequest) -> Reply:
    return Reply(201, request.body)


async def test_an_annotated_job_gets_a_podgroup_it_controls(setup: Setup) -> None:
    setup.apiserver.on("POST", PODGROUPS, created)
    setup.state.handlers.jobs.upsert(job_object("train", gang="true", parallelism=3))

    [request] = await setup.apiserver.wait_for("POST", PODGROUPS)
    body = request.body
    assert body["metadata"]["name"] == "train"
    assert body["metadata"]["ownerReferences"][0]["uid"] == "uid-job-train"
    assert body["spec"]["minMember"] == 3
    await setup.apiserver.wait_until(lambda: bool(setup.events("PodGroupCreated")))


async def test_a_failed_create_is_retried(setup: Setup) -> None:
    setup.apiserver.on("POST", PODGROUPS, status_error(500, "InternalError"), created)
    setup.state.handlers.jobs.upsert(job_object("train", gang="true"))
    await setup.apiserver.wait_until(
        lambda: len(setup.apiserver.requests_to("POST", PODGROUPS)) == 2
    )
    await setup.apiserver.wait_until(lambda: bool(setup.events("PodGroupCreated")))


async def test_a_podgroup_of_that_name_it_does_not_own_is_left_alone_and_the_job_told(
    setup: Setup,
) -> None:
    setup.state.handlers.podgroups[SIGS].upsert(podgroup_object("train", 7))
    setup.state.handlers.jobs.upsert(job_object("train", gang="true"))
    await setup.apiserver.wait_until(lambda: bool(setup.events("PodGroupNotOwned")))
    [event] = setup.events("PodGroupNotOwned")
    assert event["type"] == "Warning"
    assert "minMember 7" in event["message"]
    assert not setup.apiserver.requests_to("POST", PODGROUPS)
    assert not setup.apiserver.requests_to("PATCH")


async def test_its_own_podgroup_follows_the_job(setup: Setup) -> None:
    path = f"{PODGROUPS}/train"
    setup.apiserver.on("PATCH", path, lambda request: Reply(200, request.body))
    owned = podgroup_object("train", 4)
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "train",
            "uid": "uid-job-train",
            "controller": True,
        }
    ]
    setup.state.handlers.podgroups[SIGS].upsert(owned)
    setup.state.handlers.jobs.upsert(job_object("train", gang="true", parallelism=4))
    await setup.settle()
    assert not setup.apiserver.requests_to("PATCH", path), "nothing to change"

    setup.state.handlers.jobs.upsert(
        job_object("train", gang="true", parallelism=4, completions=6, succeeded=3)
    )
    [request] = await setup.apiserver.wait_for("PATCH", path)
    assert request.body == {"spec": {"minMember": 3, "queue": "default", "priorityClassName": None}}


async def test_an_invalid_annotation_is_told_on_the_job_and_nothing_made(setup: Setup) -> None:
    setup.state.handlers.jobs.upsert(job_object("train", gang="everything"))
    await setup.apiserver.wait_until(lambda: bool(setup.events("InvalidGangAnnotation")))
    [event] = setup.events("InvalidGangAnnotation")
    assert "'everything'" in event["message"]
    assert not setup.apiserver.requests_to("POST", PODGROUPS)


async def test_an_annotation_on_a_job_of_the_default_scheduler_is_told_it_does_nothing(
    setup: Setup,
) -> None:
    setup.state.handlers.jobs.upsert(job_object("train", gang="true", scheduler=None))
    await setup.apiserver.wait_until(lambda: bool(setup.events("InvalidGangAnnotation")))
    [event] = setup.events("InvalidGangAnnotation")
    assert "schedulerName: coscheduler" in event["message"]
    assert not setup.apiserver.requests_to("POST", PODGROUPS)


async def test_a_replica_set_annotated_for_volcano_gets_the_podgroup_volcano_would_make(
    setup: Setup,
) -> None:
    path = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
    setup.apiserver.on("POST", path, created)
    template = {
        "metadata": {"annotations": {"scheduling.volcano.sh/queue-name": "research"}},
        "spec": {"schedulerName": "coscheduler", "priorityClassName": "batch"},
    }
    replica_set = {
        "metadata": {
            "namespace": "default",
            "name": "web-7d4",
            "uid": "uid-rs",
            "annotations": {"scheduling.volcano.sh/group-min-member": "3"},
        },
        "spec": {"template": template},
    }
    owner = volcano_owner(replica_set, "ReplicaSet")
    assert owner is not None
    await setup.maker.reconcile(owner)

    [request] = setup.apiserver.requests_to("POST", path)
    body = request.body
    assert body["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert body["metadata"]["name"] == "podgroup-uid-rs"
    [reference] = body["metadata"]["ownerReferences"]
    assert (reference["apiVersion"], reference["kind"], reference["uid"]) == (
        "apps/v1",
        "ReplicaSet",
        "uid-rs",
    )
    assert body["spec"] == {"minMember": 3, "queue": "research", "priorityClassName": "batch"}
