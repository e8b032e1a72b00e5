"""Our own kubeconfig and in-cluster loader: each form it reads, kubectl's merge, clear refusals."""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from coscheduler.runtime import kubeconfig
from coscheduler.runtime.kubeconfig import (
    Credentials,
    KubeconfigError,
    NeedsLibrary,
    StaticHeaders,
    TokenFile,
)
from e2e.pki import Pki, generate


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return generate(tmp_path_factory.mktemp("pki"), service_ip="10.0.0.1")


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


def load(path: Path, **options: Any) -> Credentials:
    loaded = kubeconfig.load(str(path), **options)
    assert isinstance(loaded, Credentials)
    return loaded


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


async def test_a_token_is_a_bearer_header(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config(user={"token": "abc"}))
    credentials = load(path)
    assert credentials.server == "https://one.example:6443"
    assert await credentials.headers.lines() == b"Authorization: Bearer abc\r\n"
    assert isinstance(credentials.ssl_context, ssl.SSLContext)
    assert credentials.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert credentials.compression


async def test_yaml_is_read_as_well_as_json(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config(user={"token": "abc"}), as_yaml=True)
    assert await load(path).headers.lines() == b"Authorization: Bearer abc\r\n"


async def test_username_and_password_are_basic_auth(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config(user={"username": "ann", "password": "pw"}))
    expected = base64.b64encode(b"ann:pw").decode()
    assert await load(path).headers.lines() == f"Authorization: Basic {expected}\r\n".encode()


async def test_a_token_file_is_relative_to_the_kubeconfig_and_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text("first\n")
    path = write(tmp_path / "config", config(user={"tokenFile": "token"}))
    source = load(path).headers
    assert isinstance(source, TokenFile)
    assert await source.lines() == b"Authorization: Bearer first\r\n"
    (tmp_path / "token").write_text("second\n")
    assert await source.lines() == b"Authorization: Bearer first\r\n"  # within the minute
    later = time.monotonic() + kubeconfig.TOKEN_REREAD_SECONDS
    monkeypatch.setattr(time, "monotonic", lambda: later)
    assert await source.lines() == b"Authorization: Bearer second\r\n"


def test_certificates_inline_or_in_files_make_a_client_context(pki: Pki, tmp_path: Path) -> None:
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
        context = load(path).ssl_context
        assert context is not None
        assert [ca["subject"] for ca in context.get_ca_certs()] == [
            ((("commonName", "coscheduler-e2e-ca"),),)
        ]


def test_inline_key_material_leaves_no_file_behind(pki: Pki, tmp_path: Path) -> None:
    private = tmp_path / "tmp"
    private.mkdir()
    path = write(
        tmp_path / "config",
        config(
            user={
                "client-certificate-data": b64(pki.admin_cert),
                "client-key-data": b64(pki.admin_key),
            }
        ),
    )
    before = tempfile.tempdir
    tempfile.tempdir = str(private)
    try:
        load(path)
    finally:
        tempfile.tempdir = before
    assert list(private.iterdir()) == []


def test_insecure_skip_tls_verify_and_tls_server_name(tmp_path: Path) -> None:
    path = write(
        tmp_path / "config",
        config(
            cluster={
                "server": "https://10.0.0.1:6443",
                "insecure-skip-tls-verify": True,
                "tls-server-name": "kubernetes",
                "disable-compression": True,
            }
        ),
    )
    credentials = load(path)
    assert credentials.ssl_context is not None
    assert credentials.ssl_context.verify_mode == ssl.CERT_NONE
    assert credentials.tls_server_name == "kubernetes"
    assert not credentials.compression


def test_plain_http_has_no_tls(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config(cluster={"server": "http://127.0.0.1:8080/"}))
    credentials = load(path)
    assert (credentials.server, credentials.ssl_context) == ("http://127.0.0.1:8080", None)


async def test_a_named_context_over_the_current_one(tmp_path: Path) -> None:
    document = config(user={"token": "one"})
    document["clusters"].append({"name": "two", "cluster": {"server": "https://two:1"}})
    document["users"].append({"name": "two", "user": {"token": "two"}})
    document["contexts"].append({"name": "two", "context": {"cluster": "two", "user": "two"}})
    path = write(tmp_path / "config", document)
    assert load(path).server == "https://one.example:6443"
    credentials = load(path, context="two")
    assert credentials.server == "https://two:1"
    assert await credentials.headers.lines() == b"Authorization: Bearer two\r\n"


async def test_kubeconfig_files_merge_as_kubectl_merges_them(tmp_path: Path) -> None:
    # The first file to name an entry or set current-context wins; a missing file is skipped.
    first = config(user={"token": "first"}, current=None)
    first["clusters"].append({"name": "two", "cluster": {"server": "https://two-from-first:1"}})
    second = config(cluster={"server": "https://one-from-second:1"}, user={"token": "second"})
    second["clusters"].append({"name": "two", "cluster": {"server": "https://two-from-second:1"}})
    second["contexts"].append({"name": "two", "context": {"cluster": "two", "user": "one"}})
    second["current-context"] = "two"
    a = write(tmp_path / "a", first)
    b = write(tmp_path / "b", second)
    environ = {"KUBECONFIG": os.pathsep.join([str(tmp_path / "missing"), str(a), str(b)])}
    credentials = kubeconfig.load(None, environ=environ, home=tmp_path)
    assert isinstance(credentials, Credentials)
    assert credentials.server == "https://two-from-first:1"  # current-context "two", from b
    assert await credentials.headers.lines() == b"Authorization: Bearer first\r\n"
    one = kubeconfig.load(None, context="one", environ=environ, home=tmp_path)
    assert isinstance(one, Credentials)
    assert one.server == "https://one.example:6443"


def test_without_a_kubeconfig_in_cluster_then_the_home_directory(pki: Pki, tmp_path: Path) -> None:
    accounts = tmp_path / "serviceaccount"
    accounts.mkdir()
    (accounts / "token").write_text("sa-token")
    (accounts / "ca.crt").write_bytes(pki.ca_cert.read_bytes())
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    inside = kubeconfig.load(None, environ=environ, home=tmp_path, service_account_dir=accounts)
    assert isinstance(inside, Credentials)
    assert inside.server == "https://10.0.0.1:443"
    assert isinstance(inside.headers, TokenFile)
    (tmp_path / ".kube").mkdir()
    write(tmp_path / ".kube" / "config", config())
    home = kubeconfig.load(None, environ={}, home=tmp_path)
    assert isinstance(home, Credentials)
    assert home.server == "https://one.example:6443"
    assert isinstance(home.headers, StaticHeaders)


def test_ipv6_service_host_is_bracketed(pki: Pki, tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t")
    (tmp_path / "ca.crt").write_bytes(pki.ca_cert.read_bytes())
    environ = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    inside = kubeconfig.in_cluster(environ, tmp_path)
    assert inside.server == "https://[fd00::1]:443"


EXEC = {"apiVersion": "client.authentication.k8s.io/v1", "command": "x"}


@pytest.mark.parametrize(
    ("user", "field"),
    [
        pytest.param({"exec": EXEC}, "exec", id="exec"),
        pytest.param({"auth-provider": {"name": "oidc"}}, "auth-provider", id="auth-provider"),
        pytest.param({"token": "t", "as": "someone"}, "as", id="impersonation"),
    ],
)
def test_what_we_do_not_read_goes_to_the_library(
    tmp_path: Path, user: dict[str, Any], field: str
) -> None:
    path = write(tmp_path / "config", config(user=user))
    loaded = kubeconfig.load(str(path), context="one")
    assert isinstance(loaded, NeedsLibrary)
    assert (loaded.files, loaded.context) == (str(path), "one")
    assert loaded.why == field


@pytest.mark.parametrize(
    ("document", "message"),
    [
        pytest.param(config(cluster={}), "cluster 'one': server is missing", id="no-server"),
        pytest.param(
            config(cluster={"server": "one.example:6443"}),
            "cluster 'one': server must be an http(s) URL",
            id="server-not-url",
        ),
        pytest.param(
            config(cluster={"server": "https://a", "certificate-authority-data": "%%%"}),
            "cluster 'one': certificate-authority-data is not base64",
            id="ca-not-base64",
        ),
        pytest.param(
            config(cluster={"server": "https://a", "insecure-skip-tls-verify": "yes"}),
            "cluster 'one': insecure-skip-tls-verify must be true or false",
            id="flag-not-bool",
        ),
        pytest.param(
            config(user={"client-certificate-data": "AAAA"}),
            "user 'one': client-key(-data) is missing",
            id="certificate-without-key",
        ),
        pytest.param(
            config(user={"username": "ann"}), "user 'one': password is missing", id="no-password"
        ),
        pytest.param(
            config(user={"token": 42}), "user 'one': token must be a string", id="token-type"
        ),
        pytest.param(config(user={"tokenFile": "nowhere"}), "tokenFile", id="token-file-missing"),
        pytest.param(config(current=None), "no current-context", id="no-context"),
        pytest.param(
            config(current="other"), "context 'other' is not defined", id="unknown-context"
        ),
    ],
)
def test_a_bad_field_is_named_with_its_file(
    tmp_path: Path, document: dict[str, Any], message: str
) -> None:
    path = write(tmp_path / "config", document)
    with pytest.raises(KubeconfigError) as caught:
        kubeconfig.load(str(path))
    assert str(caught.value).startswith(str(path)) or str(path) in str(caught.value)
    assert message in str(caught.value)


def test_nothing_to_go_by_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="no credentials"):
        kubeconfig.load(None, environ={}, home=tmp_path)


def test_a_kubeconfig_that_is_not_yaml(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("clusters: [unclosed\n")
    with pytest.raises(KubeconfigError, match="not YAML"):
        kubeconfig.load(str(path))
