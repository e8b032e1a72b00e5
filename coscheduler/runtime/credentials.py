"""Where the API server is and how to log in to it: kubernetes_asyncio's loaders.

:func:`load_configuration` finds the credentials as client-go does:
``--kubeconfig`` (one file), else the files of ``KUBECONFIG`` merged, else
in-cluster when ``KUBERNETES_SERVICE_HOST`` is set, else ``~/.kube/config``.
kubernetes_asyncio reads every form (certificates, tokens, token files,
exec credential plugins, auth providers). Its :class:`Configuration` is the
one source: :mod:`coscheduler.runtime.kube` takes the TLS material and the
authorization header from it (:class:`AuthorizationHeader`), and Kopf's
login can be made from the same object.

A long-running process must follow credentials that change: a service
account token is rotated by the kubelet, a token file by whoever wrote it,
an exec plugin's token expires. The configuration's refresh hook loads the
user's credentials again once a minute (client-go re-reads its token files as
often), and at once when an exec plugin's token is past its expiry.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from pathlib import Path
from typing import Any, Final

import yaml
from kubernetes_asyncio.client.configuration import Configuration
from kubernetes_asyncio.config import ConfigException, incluster_config, kube_config

__all__ = [
    "AuthorizationHeader",
    "Configuration",
    "CredentialsError",
    "load_configuration",
    "ssl_context",
]

SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
#: How long loaded credentials are used before they are loaded again.
RELOAD_SECONDS: Final = 60.0
#: How long a request's Authorization header is reused before the configuration is asked.
HEADER_SECONDS: Final = 1.0


class CredentialsError(ValueError):
    """A kubeconfig (or the in-cluster environment) that cannot be used as written."""


async def load_configuration(
    kubeconfig: str | None = None,
    *,
    context: str | None = None,
    service_account_dir: Path = SERVICE_ACCOUNT_DIR,
) -> Configuration:
    """kubernetes_asyncio's configuration of the cluster, its token kept fresh.

    ``configuration.host`` is the server; ``await configuration.auth_settings()``
    (or :class:`AuthorizationHeader`) gives the current token, loaded again
    when it may have changed. Raises :class:`CredentialsError` for credentials
    that cannot be used.
    """
    configuration = Configuration()
    try:
        files = _kubeconfig_files(kubeconfig)
        if files is None:
            incluster_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration,
                token_filename=str(service_account_dir / "token"),
                cert_filename=str(service_account_dir / "ca.crt"),
            )
            return configuration
        loader = await kube_config.load_kube_config(
            config_file=files,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except CredentialsError:
        raise
    except (ConfigException, yaml.YAMLError, KeyError, TypeError, ValueError, OSError) as error:
        raise CredentialsError(f"credentials cannot be loaded: {error}") from error
    if not configuration.host:
        raise CredentialsError(f"{files}: the context names no server")
    configuration.refresh_api_key_hook = _Reloader(loader)
    return configuration


def _kubeconfig_files(kubeconfig: str | None) -> str | None:
    """The kubeconfig files to read (joined by ``os.pathsep``), or None for in-cluster."""
    files = kubeconfig or os.environ.get("KUBECONFIG")
    if not files and os.environ.get(incluster_config.SERVICE_HOST_ENV_NAME):
        return None
    files = files or str(Path.home() / ".kube" / "config")
    if not any(os.path.exists(os.path.expanduser(f)) for f in files.split(os.pathsep) if f):
        raise CredentialsError(
            f"no credentials: {files} does not exist; give --kubeconfig, set KUBECONFIG, "
            "or run in a pod (KUBERNETES_SERVICE_HOST)"
        )
    return files


class _Reloader:
    """The configuration's refresh hook: the kubeconfig's user loaded again when it may be stale.

    kubernetes_asyncio reads a kubeconfig's token file once and runs an exec
    plugin only when asked; this hook asks it once a minute, and whenever the
    plugin's token is past its expiry.
    """

    def __init__(self, loader: kube_config.KubeConfigLoader) -> None:
        self._loader = loader
        self._loaded_at = time.monotonic()
        self._lock = asyncio.Lock()

    def _stale(self) -> bool:
        expiry = getattr(self._loader, "exec_plugin_expiry", None)
        if expiry is not None and kube_config._is_expired(expiry):
            return True
        return time.monotonic() - self._loaded_at >= RELOAD_SECONDS

    async def __call__(self, configuration: Configuration) -> None:
        if not self._stale():
            return
        async with self._lock:  # one reload for the requests that found it stale together
            if self._stale():
                await self._loader.load_and_set(configuration)
                self._loaded_at = time.monotonic()


class AuthorizationHeader:
    """The configuration's ``Authorization`` header line, cheap to ask for on every request.

    The configuration is asked again (its hook reloads what may have changed)
    at most every ``HEADER_SECONDS``; in between the same bytes are handed out.
    """

    def __init__(self, configuration: Configuration) -> None:
        #: Where the header comes from (its refresh hook keeps the token current).
        self.configuration = configuration
        self._lines = b""
        self._asked_at = -1.0

    async def lines(self) -> bytes:
        """``Authorization: ...\\r\\n``, or nothing for a server that needs none."""
        now = time.monotonic()
        if now - self._asked_at >= HEADER_SECONDS:
            settings: dict[str, Any] = await self.configuration.auth_settings()
            # "Bearer <token>", or "Basic <pair>" for a kubeconfig's username and password.
            value = settings.get("BearerToken", {}).get("value")
            self._lines = f"Authorization: {value}\r\n".encode() if value else b""
            self._asked_at = now
        return self._lines


def ssl_context(configuration: Configuration) -> ssl.SSLContext | None:
    """The TLS settings kubernetes_asyncio gives its own connections, from the same fields.

    None for a plain http:// server.
    """
    if not (configuration.host or "").startswith("https://"):
        return None
    try:
        context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
        if configuration.cert_file:
            context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    except (OSError, ssl.SSLError) as error:
        raise CredentialsError(f"the cluster's TLS material cannot be used: {error}") from error
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if configuration.disable_strict_ssl_verification:
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context
