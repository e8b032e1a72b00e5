"""Where the API server is and how to log in to it, for the common forms of credentials.

Issue #28: kubernetes_asyncio's loaders pull aiohttp, urllib3, dateutil and
its package into the start path (a quarter of a second of imports) for what
is, in the common cases, a few fields of a YAML file. This module reads
those cases itself:

* a kubeconfig: ``--kubeconfig`` (one file), else the files of ``KUBECONFIG``
  merged as kubectl merges them (the first file to name a cluster, user or
  context, or to set ``current-context``, wins; missing files are skipped),
  else in-cluster when ``KUBERNETES_SERVICE_HOST`` is set, else
  ``~/.kube/config``. The current context or a named one. Cluster:
  ``server``, ``certificate-authority(-data)``, ``insecure-skip-tls-verify``,
  ``tls-server-name``, ``proxy-url``, ``disable-compression``. User:
  ``client-certificate(-data)`` with ``client-key(-data)``, ``token``,
  ``tokenFile``, ``username``/``password``.
* in-cluster: ``KUBERNETES_SERVICE_HOST``/``_PORT``, the service account's
  CA, and its token, read again as the kubelet rotates it.

Whatever else a kubeconfig asks for (an exec credential plugin, an
auth-provider, impersonation, any field not above) is
:class:`NeedsLibrary`: :mod:`coscheduler.runtime.kube` then loads it with
kubernetes_asyncio, imported only then, as before. A missing or malformed
field is a :class:`KubeconfigError` naming the field and the file.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import orjson

from coscheduler.runtime.http1 import client_context

__all__ = [
    "Credentials",
    "HeaderSource",
    "KubeconfigError",
    "NeedsLibrary",
    "StaticHeaders",
    "TokenFile",
    "load",
]

SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
#: How long a token read from a file is used before the file is read again
#: (client-go re-reads its in-cluster token about once a minute too).
TOKEN_REREAD_SECONDS: Final = 60.0

_CLUSTER_FIELDS: Final = frozenset(
    {
        "server",
        "certificate-authority",
        "certificate-authority-data",
        "insecure-skip-tls-verify",
        "tls-server-name",
        "proxy-url",
        "disable-compression",
        "extensions",
    }
)
_USER_FIELDS: Final = frozenset(
    {
        "client-certificate",
        "client-certificate-data",
        "client-key",
        "client-key-data",
        "token",
        "tokenFile",
        "username",
        "password",
        "extensions",
    }
)


class KubeconfigError(ValueError):
    """A kubeconfig (or the in-cluster environment) that cannot be used as written."""


class StaticHeaders:
    """Header lines fixed at load time (a token, a user and password, or none)."""

    def __init__(self, lines: bytes = b"") -> None:
        self._lines = lines

    async def lines(self) -> bytes:
        return self._lines


class TokenFile:
    """A bearer token read from a file, read again every minute (it may be rotated)."""

    def __init__(self, path: Path, *, source: str) -> None:
        self._path = path
        self._source = source
        self._lines = b""
        self._read_at = -TOKEN_REREAD_SECONDS

    async def lines(self) -> bytes:
        now = time.monotonic()
        if now - self._read_at >= TOKEN_REREAD_SECONDS:
            self._lines = _bearer(_read_token(self._path, self._source))
            self._read_at = now
        return self._lines


class HeaderSource(Protocol):
    """What :class:`Credentials` asks for the authentication header lines of each request."""

    async def lines(self) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Credentials:
    """One API server and how to reach it (for :class:`~coscheduler.runtime.http1.Http1Pool`)."""

    server: str
    #: None for a plain http:// server.
    ssl_context: ssl.SSLContext | None
    tls_server_name: str | None
    #: ``Authorization`` header lines (``Name: value\\r\\n``), asked for per request.
    headers: HeaderSource
    #: A proxy named by the kubeconfig (``proxy-url``); the environment's is resolved later.
    proxy: str | None = None
    #: The cluster says ``disable-compression: true``.
    compression: bool = True
    #: Where these came from, for logs and errors.
    source: str = ""


@dataclass(frozen=True, slots=True)
class NeedsLibrary:
    """A kubeconfig with something only kubernetes_asyncio implements (an exec plugin...)."""

    #: The files, joined with ``os.pathsep`` as kubernetes_asyncio's merger reads them.
    files: str
    context: str | None
    why: str


@dataclass(slots=True)
class _Merged:
    """The files of a kubeconfig merged, each entry remembering the file it came from."""

    clusters: dict[str, tuple[Mapping[str, Any], Path]] = field(default_factory=dict)
    users: dict[str, tuple[Mapping[str, Any], Path]] = field(default_factory=dict)
    contexts: dict[str, tuple[Mapping[str, Any], Path]] = field(default_factory=dict)
    current_context: str | None = None


def load(
    kubeconfig: str | None,
    *,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    service_account_dir: Path = SERVICE_ACCOUNT_DIR,
) -> Credentials | NeedsLibrary:
    """The credentials of ``kubeconfig``, or as client-go finds them when it is None."""
    env = os.environ if environ is None else environ
    if kubeconfig is not None:
        return _from_files([Path(kubeconfig)], context, required=True)
    listed = [Path(p) for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return _from_files(listed, context, required=False)
    if env.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster(env, service_account_dir)
    default = (home or Path.home()) / ".kube" / "config"
    if default.exists():
        return _from_files([default], context, required=True)
    raise KubeconfigError(
        "no credentials: give --kubeconfig, set KUBECONFIG, or run in a pod "
        f"(KUBERNETES_SERVICE_HOST); {default} does not exist either"
    )


def in_cluster(env: Mapping[str, str], service_account_dir: Path) -> Credentials:
    """The pod's service account, as client-go's rest.InClusterConfig reads it."""
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeconfigError(
            "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set"
        )
    token_path = service_account_dir / "token"
    token_source = f"the service account token {token_path}"
    _read_token(token_path, token_source)  # fail now, not at the first request
    ca = service_account_dir / "ca.crt"
    try:
        context = client_context(cafile=str(ca))
    except (OSError, ssl.SSLError) as error:
        raise KubeconfigError(f"in-cluster: the CA {ca} cannot be read: {error}") from error
    bracketed = f"[{host}]" if ":" in host else host
    return Credentials(
        server=f"https://{bracketed}:{port}",
        ssl_context=context,
        tls_server_name=None,
        headers=TokenFile(token_path, source=token_source),
        source="in-cluster",
    )


def _from_files(
    paths: Sequence[Path], context: str | None, *, required: bool
) -> Credentials | NeedsLibrary:
    merged = _Merged()
    read = []
    for path in paths:
        if not path.exists() and not required:
            continue  # as kubectl: a file of KUBECONFIG that does not exist is skipped
        _merge(merged, _parse(path), path)
        read.append(path)
    if not read:
        names = os.pathsep.join(str(p) for p in paths)
        raise KubeconfigError(f"KUBECONFIG={names}: none of these files exists")
    files = os.pathsep.join(str(p) for p in read)
    name = context or merged.current_context
    if not name:
        raise KubeconfigError(f"{files}: no current-context, and no context was named")
    if name not in merged.contexts:
        raise KubeconfigError(f"{files}: context {name!r} is not defined")
    entry, where = merged.contexts[name]
    cluster_name = _text(entry, "cluster", where, f"context {name!r}")
    user_name = entry.get("user")
    if cluster_name not in merged.clusters:
        raise KubeconfigError(
            f"{where}: context {name!r} names cluster {cluster_name!r}, not defined"
        )
    cluster, cluster_file = merged.clusters[cluster_name]
    user: Mapping[str, Any] = {}
    user_file = where
    if user_name:
        if not isinstance(user_name, str) or user_name not in merged.users:
            raise KubeconfigError(
                f"{where}: context {name!r} names user {user_name!r}, not defined"
            )
        user, user_file = merged.users[user_name]
    unusual = sorted((set(cluster) - _CLUSTER_FIELDS) | (set(user) - _USER_FIELDS))
    if unusual:
        return NeedsLibrary(files=files, context=context, why=", ".join(unusual))
    server = _server(cluster, cluster_file, cluster_name)
    return Credentials(
        server=server,
        ssl_context=_ssl_context(cluster, cluster_file, cluster_name, user, user_file, user_name)
        if server.startswith("https://")
        else None,
        tls_server_name=_optional_text(
            cluster, "tls-server-name", cluster_file, f"cluster {cluster_name!r}"
        ),
        headers=_user_headers(user, user_file, user_name),
        proxy=_optional_text(cluster, "proxy-url", cluster_file, f"cluster {cluster_name!r}"),
        compression=not _flag(
            cluster, "disable-compression", cluster_file, f"cluster {cluster_name!r}"
        ),
        source=f"{files}, context {name!r}",
    )


def _parse(path: Path) -> Mapping[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise KubeconfigError(f"{path}: cannot be read: {error}") from error
    document: Any
    try:
        document = orjson.loads(raw)  # JSON is YAML, and much cheaper to read
    except orjson.JSONDecodeError:
        import yaml  # only for a kubeconfig that is not JSON

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            document = yaml.load(raw, Loader=loader)
        except yaml.YAMLError as error:
            raise KubeconfigError(f"{path}: not YAML: {error}") from error
    if document is None:
        return {}
    if not isinstance(document, Mapping):
        raise KubeconfigError(f"{path}: not a kubeconfig (a mapping at the top)")
    return document


def _merge(merged: _Merged, document: Mapping[str, Any], path: Path) -> None:
    for key, into in (
        ("clusters", merged.clusters),
        ("users", merged.users),
        ("contexts", merged.contexts),
    ):
        entries = document.get(key) or []
        if not isinstance(entries, list):
            raise KubeconfigError(f"{path}: {key} must be a list")
        singular = key[:-1]
        for index, entry in enumerate(entries):
            if not isinstance(entry, Mapping):
                raise KubeconfigError(f"{path}: {key}[{index}] must be a mapping")
            name = _text(entry, "name", path, f"{key}[{index}]")
            body = entry.get(singular) or {}
            if not isinstance(body, Mapping):
                raise KubeconfigError(f"{path}: {key}[{index}].{singular} must be a mapping")
            into.setdefault(name, (body, path))  # the first file to name it wins
    current = document.get("current-context")
    if merged.current_context is None and current:
        if not isinstance(current, str):
            raise KubeconfigError(f"{path}: current-context must be a string")
        merged.current_context = current


def _server(cluster: Mapping[str, Any], path: Path, name: str) -> str:
    server = _text(cluster, "server", path, f"cluster {name!r}").rstrip("/")
    if not server.startswith(("https://", "http://")):
        raise KubeconfigError(
            f"{path}: cluster {name!r}: server must be an http(s) URL: {server!r}"
        )
    return server


def _ssl_context(
    cluster: Mapping[str, Any],
    cluster_file: Path,
    cluster_name: str,
    user: Mapping[str, Any],
    user_file: Path,
    user_name: object,
) -> ssl.SSLContext:
    """The TLS settings of an https:// server's cluster and user."""
    where = f"cluster {cluster_name!r}"
    ca_data = _data(cluster, "certificate-authority", cluster_file, where)
    try:
        context = client_context(cadata=ca_data.decode() if ca_data else None)
    except (ssl.SSLError, UnicodeDecodeError) as error:
        raise KubeconfigError(f"{cluster_file}: {where}: certificate-authority: {error}") from error
    if _flag(cluster, "insecure-skip-tls-verify", cluster_file, where):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    who = f"user {user_name!r}"
    certificate = _data(user, "client-certificate", user_file, who)
    key = _data(user, "client-key", user_file, who)
    if bool(certificate) != bool(key):
        missing = "client-key" if certificate else "client-certificate"
        raise KubeconfigError(f"{user_file}: {who}: {missing}(-data) is missing")
    if certificate and key:
        _load_client_certificate(context, certificate, key, f"{user_file}: {who}")
    return context


def _load_client_certificate(
    context: ssl.SSLContext, certificate: bytes, key: bytes, where: str
) -> None:
    """Give ``ssl`` a certificate and key it can only read from files, for the moment it reads.

    The files live in a directory only this user can enter (``mkdtemp``: 0700),
    are created 0600, and are removed as soon as OpenSSL has read them.
    """
    with tempfile.TemporaryDirectory(prefix="coscheduler-tls-") as directory:
        certificate_path = os.path.join(directory, "client.crt")
        key_path = os.path.join(directory, "client.key")
        for path, content in ((certificate_path, certificate), (key_path, key)):
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as file:
                file.write(content)
        try:
            context.load_cert_chain(certificate_path, key_path)
        except ssl.SSLError as error:
            raise KubeconfigError(
                f"{where}: client certificate or key unusable: {error}"
            ) from error


def _user_headers(user: Mapping[str, Any], path: Path, name: object) -> StaticHeaders | TokenFile:
    who = f"user {name!r}"
    token = _optional_text(user, "token", path, who)
    if token:
        return StaticHeaders(_bearer(token))
    token_file = _optional_text(user, "tokenFile", path, who)
    if token_file:
        resolved = _relative_to(path, token_file)
        source = f"{path}: {who}: tokenFile {resolved}"
        _read_token(resolved, source)  # fail now, not at the first request
        return TokenFile(resolved, source=source)
    username = _optional_text(user, "username", path, who)
    password = _optional_text(user, "password", path, who)
    if username or password:
        if not (username and password):
            missing = "password" if username else "username"
            raise KubeconfigError(f"{path}: {who}: {missing} is missing")
        pair = base64.b64encode(f"{username}:{password}".encode()).decode()
        return StaticHeaders(f"Authorization: Basic {pair}\r\n".encode())
    return StaticHeaders()


def _data(entry: Mapping[str, Any], name: str, path: Path, where: str) -> bytes | None:
    """``name-data`` (base64) if given, else the file ``name`` (relative to the kubeconfig)."""
    inline = _optional_text(entry, f"{name}-data", path, where)
    if inline:
        try:
            return base64.b64decode(inline, validate=True)
        except binascii.Error as error:
            raise KubeconfigError(f"{path}: {where}: {name}-data is not base64: {error}") from error
    file = _optional_text(entry, name, path, where)
    if not file:
        return None
    resolved = _relative_to(path, file)
    try:
        return resolved.read_bytes()
    except OSError as error:
        raise KubeconfigError(
            f"{path}: {where}: {name} {resolved} cannot be read: {error}"
        ) from error


def _relative_to(kubeconfig: Path, file: str) -> Path:
    """A path in a kubeconfig is relative to the kubeconfig's directory, as kubectl reads it."""
    given = Path(file).expanduser()
    return given if given.is_absolute() else kubeconfig.parent / given


def _read_token(path: Path, source: str) -> str:
    try:
        token = path.read_text().strip()
    except OSError as error:
        raise KubeconfigError(f"{source} cannot be read: {error}") from error
    if not token:
        raise KubeconfigError(f"{source} is empty")
    return token


def _bearer(token: str) -> bytes:
    return f"Authorization: Bearer {token}\r\n".encode()


def _text(entry: Mapping[str, Any], name: str, path: Path, where: str) -> str:
    value = _optional_text(entry, name, path, where)
    if not value:
        raise KubeconfigError(f"{path}: {where}: {name} is missing")
    return value


def _optional_text(entry: Mapping[str, Any], name: str, path: Path, where: str) -> str | None:
    value = entry.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise KubeconfigError(f"{path}: {where}: {name} must be a string")
    if "\r" in value or "\n" in value:
        raise KubeconfigError(f"{path}: {where}: {name} must be one line")
    return value


def _flag(entry: Mapping[str, Any], name: str, path: Path, where: str) -> bool:
    value = entry.get(name, False)
    if not isinstance(value, bool):
        raise KubeconfigError(f"{path}: {where}: {name} must be true or false")
    return value
