"""The runtime's list-then-watch against a real API server: list, resume, no replay.

A list is a streaming watch-list where the API server offers one (WatchList,
on by default in every supported release), and pages on a server with the
gate off (a control plane of its own here, ``WatchList=false``).

(The relist after 410 Gone could not be provoked here: even after an etcd
compaction, the API server's watch cache answered an old resourceVersion with
the current objects instead of 410.)
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.watch import Event, Listed, Watch, WatchItem
from e2e import build
from e2e.controlplane import Cluster, ClusterOptions

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


async def _lists_then_follows(cluster: Cluster, client: KubeClient, namespace: str) -> Watch:
    """Three objects listed in one Listed, then a change and a deletion on the same watch."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("one", "two", "three"):
        cluster.api.create(path, _config_map(name))
    watch = Watch(client, path, page_size=2)  # pages of two where the server streams no lists
    items = aiter(watch)
    async with contextlib.aclosing(items):  # type: ignore[type-var]
        first = await _next(items)
        assert isinstance(first, Listed)
        listed = {o["metadata"]["name"] for o in first.objects}
        assert {"one", "two", "three"} <= listed
        assert all("managedFields" not in o["metadata"] for o in first.objects)

        cluster.api.create(path, _config_map("four"))
        seen = await _next_event_named(items, "four")
        assert isinstance(seen, Event)
        assert seen.type == "ADDED"
        cluster.api.delete(f"{path}/one")
        gone = await _next_event_named(items, "one")
        assert isinstance(gone, Event)
        assert gone.type == "DELETED"
    return watch


async def test_a_list_is_one_streaming_watch_list_where_the_server_offers_it(
    cluster: Cluster, namespace: str, client: KubeClient
) -> None:
    watch = await _lists_then_follows(cluster, client, namespace)
    assert watch.stream_lists, "the session's API server streams lists (WatchList on)"


@pytest.fixture(scope="module")
def without_watch_lists() -> Iterator[Cluster]:
    """A control plane of its own whose API server has the WatchList gate off."""
    build.ensure_built()
    state_dir = Path(tempfile.mkdtemp(prefix="coscheduler-e2e-nowatchlist-"))
    try:
        options = ClusterOptions(apiserver_feature_gates=("WatchList=false",))
        cluster = Cluster.start(state_dir, options)
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


async def test_a_server_without_watch_lists_is_listed_in_pages_then_watched(
    without_watch_lists: Cluster,
) -> None:
    cluster = without_watch_lists
    namespace = "pages"
    cluster.api.create(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
    )
    client = await KubeClient.connect(
        kubeconfig=str(cluster.kubeconfig), qps=100, burst=100, timeout_seconds=10
    )
    try:
        watch = await _lists_then_follows(cluster, client, namespace)
    finally:
        await client.close()
    assert not watch.stream_lists, "the refused watch-list gave way to pages"
