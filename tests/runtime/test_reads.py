"""Reads and watches on the read pool: gzip, chunks, a connection per stream, closing early."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import pytest

from coscheduler.runtime.errors import Gone, NotFound, Unreachable
from coscheduler.runtime.kube import KubeClient
from tests.runtime.apiserver import (
    FakeApiServer,
    WatchStream,
    added,
    object_list,
    status_error,
)

PODS = "/api/v1/pods"
# Large enough that gzip is worth it; a line of 1.5 MiB is the largest etcd stores.
BIG = {"metadata": {"name": "big", "resourceVersion": "7"}, "data": "x" * (1536 * 1024)}


async def connect(server: FakeApiServer, tmp_path: Path, **options: object) -> KubeClient:
    return await KubeClient.connect(
        kubeconfig=str(server.write_kubeconfig(tmp_path)),
        qps=1000,
        burst=1000,
        timeout_seconds=5.0,
        **options,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("compress", [True, False], ids=["gzip", "identity"])
async def test_lists_and_watches_arrive_whole_compressed_or_not(
    apiserver: FakeApiServer, tmp_path: Path, compress: bool
) -> None:
    apiserver.compress = compress
    items = [{"metadata": {"name": f"p{i}"}} for i in range(500)]
    apiserver.on("GET", PODS, object_list(items, resource_version="5"))
    apiserver.on("WATCH", PODS, WatchStream([added({"metadata": {"name": "a"}}), added(BIG)]))
    kube = await connect(apiserver, tmp_path, compressed_reads=compress)
    try:
        listed = await kube.call("GET", PODS)
        assert listed["items"] == items
        lines = [
            line
            async for line in kube.stream_lines(
                PODS, query=[("watch", "true")], read_timeout_seconds=2
            )
        ]
    finally:
        await kube.close()
    assert len(lines) == 2
    assert len(lines[1]) > len(BIG["data"])
    asked = {request.accept_encoding for request in apiserver.requests}
    assert asked == ({"gzip"} if compress else {"identity"})


async def test_a_refused_read_carries_the_servers_status_even_compressed(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.compress = True
    apiserver.on("GET", PODS, status_error(404, "NotFound", "x" * 4096))
    with pytest.raises(NotFound) as caught:
        await kube.send("GET", PODS)
    assert caught.value.message == "x" * 4096
    apiserver.on("WATCH", PODS, status_error(410, "Expired"))
    with pytest.raises(Gone):
        async for _ in kube.stream_lines(PODS, query=[("watch", "true")], read_timeout_seconds=1):
            pass


async def test_a_watch_closed_early_gives_its_connection_back(
    apiserver: FakeApiServer, tmp_path: Path
) -> None:
    # One connection in the read pool: a stream that kept it would starve the list after it.
    apiserver.on("WATCH", PODS, WatchStream([added({"metadata": {"name": "a"}})], then="hang"))
    apiserver.on("GET", PODS, object_list([], resource_version="1"))
    kube = await connect(apiserver, tmp_path, max_connections=1)
    try:
        for _ in range(3):
            stream = kube.stream_lines(PODS, query=[("watch", "true")], read_timeout_seconds=2)
            async with contextlib.aclosing(stream):
                async for _ in stream:
                    break
            assert (await kube.call("GET", PODS))["items"] == []
    finally:
        await kube.close()


async def test_a_silent_watch_is_unreachable_after_its_read_timeout(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("WATCH", PODS, WatchStream([], then="hang"))
    with pytest.raises(Unreachable) as caught:
        async for _ in kube.stream_lines(PODS, query=[("watch", "true")], read_timeout_seconds=0.2):
            pass
    assert isinstance(caught.value.__cause__, TimeoutError)


async def test_writes_do_not_wait_for_the_reads_connections(
    apiserver: FakeApiServer, tmp_path: Path
) -> None:
    # One connection a pool: the watch holds the read pool's; a write has a pool of its own.
    apiserver.on("WATCH", PODS, WatchStream([added({"metadata": {"name": "a"}})], then="hang"))
    apiserver.on("POST", "/x", object_list([], resource_version="1"))
    kube = await connect(apiserver, tmp_path, max_connections=1)
    try:
        stream = kube.stream_lines(PODS, query=[("watch", "true")], read_timeout_seconds=5)
        async with contextlib.aclosing(stream):
            assert await anext(stream)
            assert (await kube.send("POST", "/x", body={})).status == 200
    finally:
        await kube.close()


async def test_an_exec_plugin_still_works_through_kubernetes_asyncio(
    apiserver: FakeApiServer, tmp_path: Path
) -> None:
    plugin = tmp_path / "credential-plugin"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": "from-the-plugin"},
    }
    plugin.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(credential))})\n")
    plugin.chmod(0o700)
    path = apiserver.write_kubeconfig(tmp_path)
    document = json.loads(path.read_text())
    document["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(plugin),
            "interactiveMode": "Never",
        }
    }
    path.write_text(json.dumps(document))
    apiserver.on("GET", PODS, object_list([], resource_version="1"))
    apiserver.on("POST", "/x", object_list([], resource_version="1"))
    kube = await KubeClient.connect(kubeconfig=str(path), qps=100, burst=100, timeout_seconds=5)
    try:
        await kube.call("GET", PODS)
        await kube.send("POST", "/x", body={})
    finally:
        await kube.close()
    assert {r.authorization for r in apiserver.requests} == {"Bearer from-the-plugin"}
