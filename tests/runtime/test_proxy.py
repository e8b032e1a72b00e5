"""The API server's proxy is read from the environment once, at connect time."""

from __future__ import annotations

import base64
import contextlib
from pathlib import Path

import pytest

from coscheduler.runtime.kube import ProxyNotSupportedError, _proxy_from_environment
from coscheduler.runtime.proxied import ProxiedPool
from e2e.connectproxy import ConnectProxy
from e2e.pki import generate
from tests.runtime.apiserver import FakeApiServer, WatchStream, added, object_list

PODS = "/api/v1/pods"


@pytest.fixture(autouse=True)
def _clean_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_no_proxy_variables_means_a_direct_connection() -> None:
    assert _proxy_from_environment("https://api.example.com:6443") is None


def test_the_proxy_for_the_servers_scheme_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://other.example:3128")
    assert _proxy_from_environment("https://api.example.com:6443") == "http://proxy.example:3128"


def test_no_proxy_exempts_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,.internal")
    assert _proxy_from_environment("https://127.0.0.1:6443") is None
    assert _proxy_from_environment("https://api.cluster.internal") is None


def test_a_missing_host_has_no_proxy() -> None:
    assert _proxy_from_environment(None) is None


async def test_reads_watches_and_writes_tunnel_through_the_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pki = generate(tmp_path / "pki", service_ip="10.96.0.1")
    async with FakeApiServer(pki) as apiserver, ConnectProxy() as proxy:
        apiserver.on("GET", PODS, object_list([], resource_version="1"))
        apiserver.on("WATCH", PODS, WatchStream([added({"metadata": {"name": "a"}})]))
        apiserver.on("POST", "/x", object_list([], resource_version="1"))
        monkeypatch.setenv("HTTPS_PROXY", proxy.url.replace("http://", "http://ann:s%40cret@"))
        kube = await apiserver.connect(tmp_path)
        try:
            assert kube.pools == {}  # aiohttp's connections, not ours
            assert isinstance(kube._writes, ProxiedPool)
            assert (await kube.call("GET", PODS))["items"] == []
            lines = kube.stream_lines(PODS, query=[("watch", "true")], read_timeout_seconds=2)
            async with contextlib.aclosing(lines):
                assert [line async for line in lines]
            assert (await kube.send("POST", "/x", body={})).status == 200
        finally:
            await kube.close()
        server = apiserver.url.removeprefix("https://")
    pair = base64.b64encode(b"ann:s@cret").decode()
    assert proxy.tunnels
    assert set(proxy.tunnels) == {(server, f"Basic {pair}")}
    assert len(apiserver.requests) == 3


async def test_a_proxy_aiohttp_cannot_tunnel_through_is_refused_clearly(
    apiserver: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(ProxyNotSupportedError, match=r"socks5://127\.0\.0\.1:1080.*NO_PROXY"):
        await apiserver.connect(tmp_path)


async def test_no_proxy_exempts_the_server_from_the_proxy(
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
