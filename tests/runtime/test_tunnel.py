"""Through an HTTP proxy with CONNECT, as the environment's HTTP(S)_PROXY asks (issue #28)."""

from __future__ import annotations

import base64
import contextlib
from pathlib import Path

import pytest

from coscheduler.runtime.kube import ProxyNotSupportedError
from e2e.connectproxy import ConnectProxy
from tests.runtime.apiserver import FakeApiServer, WatchStream, added, object_list

PODS = "/api/v1/pods"


@pytest.fixture(autouse=True)
def _clean_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


async def test_reads_watches_and_writes_tunnel_through_the_proxy(
    apiserver: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    apiserver.on("GET", PODS, object_list([], resource_version="1"))
    apiserver.on("WATCH", PODS, WatchStream([added({"metadata": {"name": "a"}})]))
    apiserver.on("POST", "/x", object_list([], resource_version="1"))
    async with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("http://", "http://ann:s%40cret@"))
        kube = await apiserver.connect(tmp_path)
        try:
            assert (await kube.call("GET", PODS))["items"] == []
            lines = kube.stream_lines(PODS, query=[("watch", "true")], read_timeout_seconds=2)
            async with contextlib.aclosing(lines):
                assert [line async for line in lines]
            assert (await kube.send("POST", "/x", body={})).status == 200
        finally:
            await kube.close()
    server = apiserver.url.removeprefix("http://")
    pair = base64.b64encode(b"ann:s@cret").decode()
    assert proxy.tunnels
    assert set(proxy.tunnels) == {(server, f"Basic {pair}")}
    assert len(apiserver.requests) == 3


async def test_a_proxy_we_cannot_tunnel_through_is_refused_clearly(
    apiserver: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(ProxyNotSupportedError, match=r"socks5://127\.0\.0\.1:1080.*NO_PROXY"):
        await apiserver.connect(tmp_path)


async def test_no_proxy_exempts_the_server(
    apiserver: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    apiserver.on("GET", PODS, object_list([], resource_version="1"))
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    kube = await apiserver.connect(tmp_path)
    try:
        assert (await kube.call("GET", PODS))["items"] == []
    finally:
        await kube.close()
