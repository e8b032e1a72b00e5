"""The API server's proxy is read from the environment once, at connect time."""

from __future__ import annotations

import pytest

from coscheduler.runtime.kube import _proxy_from_environment


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
