"""The runtime's client through an HTTP proxy (CONNECT), TLS to the real API server inside it."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.watch import Listed, Watch
from e2e.connectproxy import ConnectProxy

pytestmark = pytest.mark.e2e


async def test_lists_watches_and_writes_through_a_connect_proxy(
    kubeconfig: Path, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    async with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        client = await KubeClient.connect(
            kubeconfig=str(kubeconfig), qps=100, burst=100, timeout_seconds=10
        )
        try:
            path = f"/api/v1/namespaces/{namespace}/configmaps"
            config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "via"}}
            await client.call("POST", path, body=config_map)
            items = aiter(Watch(client, path))
            async with contextlib.aclosing(items):  # type: ignore[type-var]
                listed = await asyncio.wait_for(anext(items), 20)
            assert isinstance(listed, Listed)
            assert "via" in {o["metadata"]["name"] for o in listed.objects}
        finally:
            await client.close()
    assert proxy.tunnels
    assert all(target.startswith("127.0.0.1:") for target, _ in proxy.tunnels)
