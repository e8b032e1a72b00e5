"""controller/login.py: Kopf's connection from kubernetes_asyncio's configuration."""

from __future__ import annotations

from kubernetes_asyncio.client import Configuration

from coscheduler.controller.login import connection_info


async def test_a_token_and_a_ca_come_over_as_they_are() -> None:
    configuration = Configuration(host="https://10.0.0.1:6443/")
    configuration.ssl_ca_cert = "/var/run/ca.crt"
    configuration.api_key = {"BearerToken": "abc"}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}

    info = await connection_info(configuration)

    assert (info.server, info.ca_path, info.insecure) == (
        "https://10.0.0.1:6443",
        "/var/run/ca.crt",
        False,
    )
    assert (info.scheme, info.token) == ("Bearer", "abc")
    assert info.certificate_path is None


async def test_a_client_certificate_and_no_verification() -> None:
    configuration = Configuration(host="https://127.0.0.1:6443")
    configuration.cert_file, configuration.key_file = "/tmp/c.crt", "/tmp/c.key"
    configuration.verify_ssl = False

    info = await connection_info(configuration)

    assert (info.certificate_path, info.private_key_path) == ("/tmp/c.crt", "/tmp/c.key")
    assert info.insecure is True
    assert (info.scheme, info.token) == (None, None)
