"""Kopf's credentials: the same API server and user as the scheduler's transport.

:func:`connection_info` reads them from a kubernetes_asyncio ``Configuration``
(the shape the transport loads a kubeconfig into; typed here by the fields
read, so that this module imports no Kubernetes client): the transport's own
(``KubeClient.configuration``), so Kopf logs in as the scheduler does, with
the token its refresh hook keeps current.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import Protocol

import kopf

__all__ = ["LibraryConfiguration", "connection_info"]


class LibraryConfiguration(Protocol):
    """The fields of kubernetes_asyncio's ``client.Configuration`` a login reads."""

    host: str | None
    ssl_ca_cert: str | None
    verify_ssl: bool
    cert_file: str | None
    key_file: str | None
    username: str | None
    password: str | None
    proxy: str | None
    tls_server_name: str | None

    def get_api_key_with_prefix(
        self, identifier: str, alias: str | None = None
    ) -> str | Awaitable[str | None] | None: ...


async def connection_info(configuration: LibraryConfiguration) -> kopf.ConnectionInfo:
    """Kopf's connection from the client library's configuration (its token asked for
    now: an exec plugin's or a rotated file's is current)."""
    if not configuration.host:
        raise kopf.LoginError("the client configuration names no API server")
    header = configuration.get_api_key_with_prefix("BearerToken")
    if inspect.isawaitable(header):
        header = await header
    scheme, token = _authorization(header)
    return kopf.ConnectionInfo(
        server=configuration.host.rstrip("/"),
        ca_path=configuration.ssl_ca_cert or None,
        insecure=not configuration.verify_ssl,
        username=configuration.username or None,
        password=configuration.password or None,
        scheme=scheme,
        token=token,
        certificate_path=configuration.cert_file or None,
        private_key_path=configuration.key_file or None,
        proxy_url=configuration.proxy or None,
    )


def _authorization(header: str | None) -> tuple[str | None, str | None]:
    """``Bearer abc`` as (``Bearer``, ``abc``); a bare token has no scheme."""
    if not header:
        return None, None
    scheme, _, token = header.partition(" ")
    return (scheme, token) if token else (None, scheme)
