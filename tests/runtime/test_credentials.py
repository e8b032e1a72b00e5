"""Credentials by kubernetes_asyncio's loaders: each form we rely on, kept fresh, clear refusals."""

from __future__ import annotations

import base64
import os
import ssl
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from coscheduler.runtime import credentials
from coscheduler.runtime.credentials import (
    AuthorizationHeader,
    CredentialsError,
    load_configuration,
    ssl_context,
)
from coscheduler.runtime.kube import KubeClient
from e2e.pki import Pki, generate
from tests.runtime.apiserver import FakeApiServer, object_list


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return generate(tmp_path_factory.mktemp("pki"), service_ip="10.0.0.1")


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def config(
    *,
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    name: str = "one",
    current: str | None = "one",
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": _or(cluster, {"server": "https://one.example:6443"})}
        ],
        "users": [{"name": name, "user": _or(user, {})}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    }
    if current:
        document["current-context"] = current
    return document


def _or(given: dict[str, Any] | None, default: dict[str, Any]) -> dict[str, Any]:
    return default if given is None else given


def write(path: Path, document: dict[str, Any], *, as_yaml: bool = False) -> Path:
    path.write_text(yaml.safe_dump(document) if as_yaml else orjson.dumps(document).decode())
    return path


async def header(path: Path | None, **options: Any) -> bytes:
    configuration = await load_configuration(None if path is None else str(path), **options)
    return await AuthorizationHeader(configuration).lines()


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


async def test_a_token_is_a_bearer_header_over_verified_tls(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config(user={"token": "abc"}))
    configuration = await load_configuration(str(path))
    assert configuration.host == "https://one.example:6443"
    assert await AuthorizationHeader(configuration).lines() == b"Authorization: Bearer abc\r\n"
    context = ssl_context(configuration)
    assert context is not None
    assert context.verify_mode == ssl.CERT_REQUIRED


async def test_yaml_is_read_as_well_as_json(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config(user={"token": "abc"}), as_yaml=True)
    assert await header(path) == b"Authorization: Bearer abc\r\n"


async def test_username_and_password_are_basic_auth(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config(user={"username": "ann", "password": "pw"}))
    expected = base64.b64encode(b"ann:pw").decode()
    assert await header(path) == f"Authorization: Basic {expected}\r\n".encode()


async def test_a_token_file_is_relative_to_the_kubeconfig_and_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text("first")
    path = write(tmp_path / "config", config(user={"tokenFile": "token"}))
    configuration = await load_configuration(str(path))
    source = AuthorizationHeader(configuration)
    assert await source.lines() == b"Authorization: Bearer first\r\n"
    (tmp_path / "token").write_text("second")
    assert await source.lines() == b"Authorization: Bearer first\r\n"  # within the minute
    later = time.monotonic() + credentials.RELOAD_SECONDS
    monkeypatch.setattr(time, "monotonic", lambda: later)
    assert await source.lines() == b"Authorization: Bearer second\r\n"


def plugin(tmp_path: Path, *, expiring: bool) -> dict[str, Any]:
    """An exec credential plugin answering a new token each run (its count of runs)."""
    script = tmp_path / "plugin.py"
    runs = tmp_path / "runs"
    expiry = '"expirationTimestamp": "2000-01-01T00:00:00Z",' if expiring else ""
    script.write_text(
        "import json, pathlib\n"
        f"runs = pathlib.Path({str(runs)!r})\n"
        "count = len(runs.read_text()) + 1 if runs.exists() else 1\n"
        "runs.write_text('x' * count)\n"
        'print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", '
        f'"kind": "ExecCredential", "status": {{{expiry} "token": f"run-{{count}}"}}}}))\n'
    )
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
            "interactiveMode": "Never",
        }
    }


async def test_an_exec_plugins_token_is_fetched_again_once_expired(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config(user=plugin(tmp_path, expiring=True)))
    configuration = await load_configuration(str(path))
    assert configuration.api_key["BearerToken"] == "Bearer run-1"
    # Each token it answers is past its expiry: each request asks it again.
    assert (await configuration.auth_settings())["BearerToken"]["value"] == "Bearer run-2"
    assert (await configuration.auth_settings())["BearerToken"]["value"] == "Bearer run-3"


async def test_an_exec_plugins_token_without_expiry_is_kept_for_the_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "config", config(user=plugin(tmp_path, expiring=False)))
    configuration = await load_configuration(str(path))
    assert (await configuration.auth_settings())["BearerToken"]["value"] == "Bearer run-1"
    assert (await configuration.auth_settings())["BearerToken"]["value"] == "Bearer run-1"
    later = time.monotonic() + credentials.RELOAD_SECONDS
    monkeypatch.setattr(time, "monotonic", lambda: later)
    assert (await configuration.auth_settings())["BearerToken"]["value"] == "Bearer run-2"


async def test_certificates_inline_or_in_files_make_a_client_context(
    pki: Pki, tmp_path: Path
) -> None:
    inline = write(
        tmp_path / "inline",
        config(
            cluster={"server": "https://a:1", "certificate-authority-data": b64(pki.ca_cert)},
            user={
                "client-certificate-data": b64(pki.admin_cert),
                "client-key-data": b64(pki.admin_key),
            },
        ),
    )
    files = write(
        tmp_path / "files",
        config(
            cluster={"server": "https://a:1", "certificate-authority": str(pki.ca_cert)},
            user={"client-certificate": str(pki.admin_cert), "client-key": str(pki.admin_key)},
        ),
    )
    for path in (inline, files):
        configuration = await load_configuration(str(path))
        context = ssl_context(configuration)
        assert context is not None
        assert [ca["subject"] for ca in context.get_ca_certs()] == [
            ((("commonName", "coscheduler-e2e-ca"),),)
        ]
        # Inline key material is written for OpenSSL to read: for this user only.
        assert configuration.key_file is not None
        assert os.stat(configuration.key_file).st_mode & 0o077 == 0


async def test_insecure_skip_tls_verify_and_tls_server_name(tmp_path: Path) -> None:
    path = write(
        tmp_path / "config",
        config(
            cluster={
                "server": "https://10.0.0.1:6443",
                "insecure-skip-tls-verify": True,
                "tls-server-name": "kubernetes",
            }
        ),
    )
    configuration = await load_configuration(str(path))
    context = ssl_context(configuration)
    assert context is not None
    assert context.verify_mode == ssl.CERT_NONE
    assert configuration.tls_server_name == "kubernetes"


async def test_plain_http_has_no_tls(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config(cluster={"server": "http://127.0.0.1:8080/"}))
    configuration = await load_configuration(str(path))
    assert (configuration.host, ssl_context(configuration)) == ("http://127.0.0.1:8080", None)


async def test_a_named_context_over_the_current_one(tmp_path: Path) -> None:
    document = config(user={"token": "one"})
    document["clusters"].append({"name": "two", "cluster": {"server": "https://two:1"}})
    document["users"].append({"name": "two", "user": {"token": "two"}})
    document["contexts"].append({"name": "two", "context": {"cluster": "two", "user": "two"}})
    path = write(tmp_path / "config", document)
    assert (await load_configuration(str(path))).host == "https://one.example:6443"
    assert (await load_configuration(str(path), context="two")).host == "https://two:1"
    assert await header(path, context="two") == b"Authorization: Bearer two\r\n"


async def test_kubeconfig_files_merge_as_kubectl_merges_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first file to name an entry wins; a missing file is skipped.
    first = config(user={"token": "first"}, current=None)
    first["clusters"].append({"name": "two", "cluster": {"server": "https://two-from-first:1"}})
    second = config(cluster={"server": "https://one-from-second:1"}, user={"token": "second"})
    second["clusters"].append({"name": "two", "cluster": {"server": "https://two-from-second:1"}})
    second["contexts"].append({"name": "two", "context": {"cluster": "two", "user": "one"}})
    second["current-context"] = "two"
    a = write(tmp_path / "a", first)
    b = write(tmp_path / "b", second)
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "missing"), str(a), str(b)]))
    configuration = await load_configuration()
    assert configuration.host == "https://two-from-first:1"  # current-context "two", from b
    assert await AuthorizationHeader(configuration).lines() == b"Authorization: Bearer first\r\n"
    assert (await load_configuration(context="one")).host == "https://one.example:6443"


async def test_without_a_kubeconfig_in_cluster_then_the_home_directory(
    pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    accounts = tmp_path / "serviceaccount"
    accounts.mkdir()
    (accounts / "token").write_text("sa-token")
    (accounts / "ca.crt").write_bytes(pki.ca_cert.read_bytes())
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    inside = await load_configuration(service_account_dir=accounts)
    assert inside.host == "https://[fd00::1]:443"
    assert await AuthorizationHeader(inside).lines() == b"Authorization: Bearer sa-token\r\n"
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    (tmp_path / "home" / ".kube").mkdir(parents=True)
    write(tmp_path / "home" / ".kube" / "config", config())
    home = await load_configuration(service_account_dir=accounts)
    assert home.host == "https://one.example:6443"
    assert await AuthorizationHeader(home).lines() == b""


@pytest.mark.parametrize(
    ("document", "message"),
    [
        pytest.param(config(user={"tokenFile": "nowhere"}), "nowhere", id="token-file-missing"),
        pytest.param(config(current=None), "current-context", id="no-context"),
        pytest.param(config(current="other"), "other", id="unknown-context"),
        pytest.param(config(cluster={"tls-server-name": "a"}), "no server", id="no-server"),
    ],
)
async def test_unusable_credentials_are_a_clear_error(
    tmp_path: Path, document: dict[str, Any], message: str
) -> None:
    path = write(tmp_path / "config", document)
    with pytest.raises(CredentialsError, match=message):
        await load_configuration(str(path))


async def test_nothing_to_go_by_says_where_it_looked() -> None:
    with pytest.raises(CredentialsError, match="no credentials"):
        await load_configuration()


async def test_a_kubeconfig_that_is_not_yaml(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("clusters: [unclosed\n")
    with pytest.raises(CredentialsError):
        await load_configuration(str(path))


async def test_the_clients_configuration_is_the_one_its_requests_are_sent_with(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    # What Kopf's login is made from: the same server and credentials.
    assert kube.configuration.host == apiserver.url
    kube.configuration.api_key["BearerToken"] = "Bearer shared"
    apiserver.on("GET", "/api", object_list([], resource_version="1"))
    await kube.call("GET", "/api")
    assert [r.authorization for r in apiserver.requests] == ["Bearer shared"]
