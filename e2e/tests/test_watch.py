"""The runtime's list-then-watch against a real API server: list, resume, no replay.

(The relist after 410 Gone could not be provoked here: even after an etcd
compaction, the API server's watch cache answered an old resourceVersion with
the current objects instead of 410.)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.watch import Event, Listed, Watch, WatchItem
from e2e.controlplane import Cluster

pytestmark = pytest.mark.e2e


def _config_map(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


async def _next(items: AsyncIterator[WatchItem], within: float = 20.0) -> WatchItem:
    return await asyncio.wait_for(anext(items), within)


async def _next_event_named(items: AsyncIterator[WatchItem], name: str) -> WatchItem:
    while True:
        item = await _next(items)
        if isinstance(item, Listed) or item.object["metadata"]["name"] == name:
            return item


async def test_watch_lists_then_resumes_across_server_timeouts_without_replay(
    cluster: Cluster, namespace: str, client: KubeClient
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    cluster.api.create(path, _config_map("before"))
    watch = Watch(client, path, timeout_seconds=2)  # the server ends each watch after 2 s
    items = aiter(watch)
    async with contextlib.aclosing(items):  # type: ignore[type-var]
        first = await _next(items)
        assert isinstance(first, Listed)
        assert "before" in {o["metadata"]["name"] for o in first.objects}

        await asyncio.sleep(5)  # at least two server-side timeouts and resumes
        cluster.api.create(path, _config_map("after"))
        seen = await _next_event_named(items, "after")
        assert isinstance(seen, Event)
        assert seen.type == "ADDED"

        cluster.api.delete(f"{path}/after")
        gone = await _next_event_named(items, "after")
        assert isinstance(gone, Event)
        assert gone.type == "DELETED"
