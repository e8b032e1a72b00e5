"""runtime/ingest.py: every kind read at once, applied stage by stage."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterable, Mapping
from typing import Any, cast

import pytest

from coscheduler.runtime import ingest
from coscheduler.runtime.handlers.base import Handler
from coscheduler.runtime.handlers.kinds import Kind
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.settings import Settings
from tests.runtime.apiserver import (
    Answer,
    FakeApiServer,
    RecordedRequest,
    WatchStream,
    object_list,
)


class _Recorder:
    """A handler that notes which kind's list was applied, in order."""

    def __init__(self, name: str, applied: list[str]) -> None:
        self.name = name
        self.applied = applied

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None:
        self.applied.append(self.name)

    def upsert(self, raw: Mapping[str, Any]) -> object:
        return None

    def remove(self, raw: Mapping[str, Any]) -> None:
        pass


def _recorder(name: str, applied: list[str]) -> Handler:
    return cast(Handler, _Recorder(name, applied))


async def test_a_later_stage_lists_at_once_and_is_applied_after_the_earlier_one(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    applied: list[str] = []
    jobs_answered = asyncio.Event()
    pods_asked_while_jobs_pending: list[bool] = []

    async def jobs(_: RecordedRequest) -> Answer:
        await asyncio.sleep(0.3)
        jobs_answered.set()
        return object_list([], resource_version="1")

    def pods(_: RecordedRequest) -> Answer:
        pods_asked_while_jobs_pending.append(not jobs_answered.is_set())
        return object_list([], resource_version="1")

    apiserver.on("GET", "/apis/batch/v1/jobs", jobs)
    apiserver.on("GET", "/api/v1/pods", pods)
    apiserver.on("WATCH", "/api*", WatchStream([], then="hang"))

    async def not_served(_: KubeClient) -> str | None:
        return None

    kinds = [
        Kind("pods", _recorder("pods", applied), path="/api/v1/pods"),
        Kind("jobs", _recorder("jobs", applied), path="/apis/batch/v1/jobs", stage=0),
        Kind("absent", _recorder("absent", applied), served=not_served),
    ]
    listed: list[str] = []
    async with asyncio.TaskGroup() as tasks:
        watches = await ingest.start(
            kube,
            kinds,
            Settings(),
            tasks=tasks,
            wake=lambda: None,
            on_listed=listed.append,
        )
        for watch in watches:
            watch.cancel()
    # The pods were asked for while the Jobs list was still on its way, and applied after
    # it; the kind not served is not read at all.
    assert pods_asked_while_jobs_pending == [True]
    assert applied == ["jobs", "pods"]
    assert listed == ["jobs", "pods"]
    assert {task.get_name() for task in watches} == {"watch-pods", "watch-jobs"}


async def test_what_the_lists_built_is_frozen_out_of_the_collector_once_all_are_applied(
    apiserver: FakeApiServer, kube: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    applied: list[str] = []
    frozen_after: list[list[str]] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen_after.append(list(applied)))
    apiserver.on("GET", "/api/v1/pods", object_list([], resource_version="1"))
    apiserver.on("GET", "/apis/batch/v1/jobs", object_list([], resource_version="1"))
    apiserver.on("WATCH", "/api*", WatchStream([], then="hang"))
    kinds = [
        Kind("pods", _recorder("pods", applied), path="/api/v1/pods"),
        Kind("jobs", _recorder("jobs", applied), path="/apis/batch/v1/jobs", stage=0),
    ]
    async with asyncio.TaskGroup() as tasks:
        watches = await ingest.start(kube, kinds, Settings(), tasks=tasks, wake=lambda: None)
        for watch in watches:
            watch.cancel()
    assert frozen_after == [["jobs", "pods"]]
