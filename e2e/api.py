"""A minimal synchronous client of the local API server, for the harness itself.

Why not kubernetes_asyncio or kubectl here: the harness must create nodes,
namespaces and poll conditions from plain (non-async) fixtures and from the
CLI, quickly and without a subprocess per call. The standard library's HTTPS
client with the admin certificate is enough for that. The code under test uses
its own real clients; this one only prepares and observes the cluster.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e.pki import Pki

Json = dict[str, Any]


class ApiError(RuntimeError):
    """The API server answered with an unexpected status; keeps the code and its message."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        self.status = status
        self.body = body
        try:
            message = json.loads(body).get("message", body)
        except ValueError:
            message = body
        super().__init__(f"{method} {path} -> {status}: {message}")


@dataclass(frozen=True)
class ApiClient:
    """Talks HTTPS to ``127.0.0.1:port`` as the cluster's admin (``system:masters``)."""

    port: int
    pki: Pki
    timeout: float = 30.0

    def _context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        context.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        return context

    def request(
        self,
        method: str,
        path: str,
        body: Json | None = None,
        *,
        content_type: str = "application/json",
        ok: tuple[int, ...] = (200, 201, 202),
    ) -> Json:
        """Send one request and return the decoded JSON answer; raise ApiError otherwise."""
        status, text = self.raw(method, path, body, content_type=content_type)
        if status not in ok:
            raise ApiError(method, path, status, text)
        return json.loads(text) if text else {}

    def raw(
        self,
        method: str,
        path: str,
        body: Json | None = None,
        *,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> tuple[int, str]:
        """Send one request and return its status and body text, whatever the status
        (``accept``: a Table's media type, for what ``kubectl get`` shows)."""
        connection = http.client.HTTPSConnection(
            "127.0.0.1", self.port, context=self._context(), timeout=self.timeout
        )
        try:
            payload = json.dumps(body).encode() if body is not None else None
            headers = {"Accept": accept}
            if payload is not None:
                headers["Content-Type"] = content_type
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            return response.status, response.read().decode(errors="replace")
        finally:
            connection.close()

    def open_stream(
        self, path: str
    ) -> tuple[http.client.HTTPSConnection, http.client.HTTPResponse]:
        """GET a path that streams (a watch): the answer's status is checked, its body left
        to the caller, who closes the connection (from another thread too, to stop a read)."""
        connection = http.client.HTTPSConnection(
            "127.0.0.1", self.port, context=self._context(), timeout=self.timeout
        )
        try:
            connection.request("GET", path, headers={"Accept": "application/json"})
            response = connection.getresponse()
            if response.status != 200:
                raise ApiError(
                    "GET", path, response.status, response.read().decode(errors="replace")
                )
            # Established: from now on a read waits as long as the stream is quiet.
            if connection.sock is not None:
                connection.sock.settimeout(None)
        except BaseException:
            connection.close()
            raise
        return connection, response

    def get(self, path: str) -> Json:
        return self.request("GET", path)

    def get_or_none(self, path: str) -> Json | None:
        """GET that returns None on 404, so that polls can test for existence."""
        status, text = self.raw("GET", path)
        if status == 404:
            return None
        if status != 200:
            raise ApiError("GET", path, status, text)
        return dict(json.loads(text))

    def create(self, path: str, body: Json) -> Json:
        return self.request("POST", path, body)

    def delete(self, path: str) -> None:
        """DELETE, treating an absent object as already deleted."""
        self.request("DELETE", path, ok=(200, 202, 404))

    def healthy(self, endpoint: str = "/readyz") -> bool:
        """True when the endpoint answers 200; connection errors count as not yet."""
        try:
            status, _ = self.raw("GET", endpoint)
        except (OSError, http.client.HTTPException):
            return False
        return status == 200


def write_kubeconfig(path: Path, *, port: int, pki: Pki, name: str = "coscheduler-e2e") -> Path:
    """Write a kubeconfig (certificates inline) for kubectl and kubernetes_asyncio.

    Inline (``*-data``) rather than file paths so that the file stays valid if
    copied elsewhere for as long as the cluster runs.
    """

    def b64(file: Path) -> str:
        return base64.b64encode(file.read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {
                    "server": f"https://127.0.0.1:{port}",
                    "certificate-authority-data": b64(pki.ca_cert),
                },
            }
        ],
        "users": [
            {
                "name": f"{name}-admin",
                "user": {
                    "client-certificate-data": b64(pki.admin_cert),
                    "client-key-data": b64(pki.admin_key),
                },
            }
        ],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": f"{name}-admin"}},
        ],
        "current-context": name,
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n")
    path.chmod(0o600)
    return path


def write_token_kubeconfig(path: Path, *, server: str, ca_cert: Path, token: str) -> Path:
    """A kubeconfig that authenticates with a bearer token only (a ServiceAccount's)."""
    ca = base64.b64encode(ca_cert.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "e2e", "cluster": {"server": server, "certificate-authority-data": ca}}
        ],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "e2e", "user": "sa"}}],
        "current-context": "sa",
    }
    path.write_text(json.dumps(config, indent=2) + "\n")
    path.chmod(0o600)
    return path
