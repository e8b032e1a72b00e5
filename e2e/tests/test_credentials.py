"""Credentials that change while coscheduler runs, against the real API server.

A ServiceAccount's token (from the TokenRequest API) reaches the client
through a kubeconfig's ``tokenFile`` and through an exec credential plugin;
when the token changes under a running client, its next requests carry the
new one. kubernetes_asyncio loads both forms (runtime/credentials.py); the
client's own pools send them.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from coscheduler.runtime import credentials
from coscheduler.runtime.errors import Forbidden
from coscheduler.runtime.kube import KubeClient
from e2e.controlplane import Cluster

pytestmark = pytest.mark.e2e


@pytest.fixture
def token(cluster: Cluster, namespace: str) -> str:
    """A token of a ServiceAccount of the test's namespace (authenticated, discovery allowed)."""
    cluster.api.create(
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "rotated"}},
    )
    answer = cluster.api.create(
        f"/api/v1/namespaces/{namespace}/serviceaccounts/rotated/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    value: str = answer["status"]["token"]
    return value


@pytest.fixture(autouse=True)
def _reload_at_every_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a minute of a long run does, at once: the credentials are loaded again."""
    monkeypatch.setattr(credentials, "RELOAD_SECONDS", 0.0)
    monkeypatch.setattr(credentials, "HEADER_SECONDS", 0.0)


def kubeconfig(path: Path, cluster: Cluster, user: dict[str, Any]) -> Path:
    ca = base64.b64encode(cluster.api.pki.ca_cert.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "e2e", "cluster": {"server": cluster.server, "certificate-authority-data": ca}}
        ],
        "users": [{"name": "it", "user": user}],
        "contexts": [{"name": "it", "context": {"cluster": "e2e", "user": "it"}}],
        "current-context": "it",
    }
    path.write_text(json.dumps(config))
    return path


@pytest.fixture
async def connect() -> AsyncIterator[Callable[[Path], Any]]:
    clients: list[KubeClient] = []

    async def connected(path: Path) -> KubeClient:
        client = await KubeClient.connect(
            kubeconfig=str(path), qps=100, burst=100, timeout_seconds=10
        )
        clients.append(client)
        return client

    yield connected
    for client in clients:
        await client.close()


async def follows(client: KubeClient, write: Callable[[str], object], token: str) -> None:
    """The client's requests carry what was last ``write``-n: the token, a bad one, the token."""
    assert (await client.call("GET", "/api"))["kind"] == "APIVersions"
    write("not-a-token")
    with pytest.raises(Forbidden) as refused:
        await client.call("GET", "/api")
    assert refused.value.status == 401
    write(token)
    assert (await client.call("GET", "/api"))["kind"] == "APIVersions"


async def test_a_rotated_token_file_is_read_again(
    cluster: Cluster, token: str, connect: Callable[[Path], Any], tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(token)
    client = await connect(kubeconfig(tmp_path / "config", cluster, {"tokenFile": "token"}))
    await follows(client, token_file.write_text, token)


async def test_an_exec_plugins_new_token_is_used(
    cluster: Cluster, token: str, connect: Callable[[Path], Any], tmp_path: Path
) -> None:
    source = tmp_path / "plugin-token"
    source.write_text(token)
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json, pathlib\n"
        'print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", '
        '"kind": "ExecCredential", '
        f'"status": {{"token": pathlib.Path({str(source)!r}).read_text()}}}}))\n'
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(plugin)],
            "interactiveMode": "Never",
        }
    }
    client = await connect(kubeconfig(tmp_path / "config", cluster, user))
    await follows(client, source.write_text, token)
