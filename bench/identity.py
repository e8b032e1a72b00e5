"""The peers' own identity, so the API server can tell their requests from everyone else's.

``apiserver_request_total`` counts every client together: KWOK turning pods Running, the
node heartbeats of 1,000 fake nodes, the controller manager, the runner. To count what the
peer alone asked, each trial's API server writes an audit log of the requests of one
user, ``bench-peer`` (group ``system:masters``, like the admin, so it is authorised and
flow-controlled exactly as the admin is), at level Metadata; every peer process runs with
a kubeconfig of that user.
"""

from __future__ import annotations

import base64
import datetime
import json
from collections import Counter
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from e2e import pki as e2e_pki

PEER_USER = "bench-peer"

AUDIT_POLICY = f"""\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["{PEER_USER}"]
- level: None
"""


def peer_kubeconfig(pki_dir: Path, port: int, path: Path) -> Path:
    """Sign a client certificate for PEER_USER with the cluster's CA; write its kubeconfig."""
    pki = e2e_pki.Pki(pki_dir)
    ca_cert = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise TypeError(f"the cluster CA's key is a {type(ca_key).__name__}, not EC or RSA")
    key = e2e_pki._ec_key()
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    name = e2e_pki._name(PEER_USER, organization="system:masters")
    cert = e2e_pki._leaf(name, key, ca_cert, ca_key, now, ExtendedKeyUsageOID.CLIENT_AUTH).sign(
        ca_key, hashes.SHA256()
    )

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "bench", "cluster": {
            "server": f"https://127.0.0.1:{port}",
            "certificate-authority-data": b64(pki.ca_cert.read_bytes()),
        }}],
        "users": [{"name": PEER_USER, "user": {
            "client-certificate-data": b64(cert.public_bytes(serialization.Encoding.PEM)),
            "client-key-data": b64(e2e_pki._private_pem(key)),
        }}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": PEER_USER}}],
        "current-context": "bench",
    }  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=1))
    path.chmod(0o600)
    return path


def count_requests(audit_log: Path, since_offset: int = 0) -> tuple[dict[str, int], int]:
    """The peer's requests by ``VERB resource[/subresource][.group]`` from the audit log,
    reading from byte ``since_offset``; returns the counts and the new offset."""
    counts: Counter[str] = Counter()
    if not audit_log.exists():
        return {}, since_offset
    with audit_log.open("rb") as handle:
        handle.seek(since_offset)
        data = handle.read()
    end = since_offset + data.rfind(b"\n") + 1
    for line in data[: end - since_offset].splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if (event.get("user") or {}).get("username") != PEER_USER:
            continue
        # A watch is logged when its response starts and again when it ends: count it once.
        stage, verb = event.get("stage"), event.get("verb")
        if not (stage == "ResponseStarted" or (stage == "ResponseComplete" and verb != "watch")):
            continue
        ref = event.get("objectRef") or {}
        resource = ref.get("resource") or event.get("requestURI", "?").split("?")[0]
        if ref.get("subresource"):
            resource += "/" + ref["subresource"]
        if ref.get("apiGroup") and ref.get("resource") in ("podgroups", "workloads"):
            resource += "." + ref["apiGroup"]
        counts[f"{event.get('verb', '?')} {resource}"] += 1
    return dict(counts), end


def binding_commits(audit_log: Path | None) -> dict[str, float]:
    """When the API server answered each of the peer's Bindings 201 (epoch seconds), by pod.

    The server's own clock: the time a pod watch sees a binding adds the watch's lag,
    which on a loaded machine varies by most of a second from one event to the next
    (issue #31's "partially bound" gang of 8 was its 0.4 s of Bindings seen as 1.1 s).
    Pods are keyed by name, as the recorder keys them (the runner names them apart).
    """
    commits: dict[str, float] = {}
    if audit_log is None or not audit_log.exists():
        return commits
    with audit_log.open("rb") as handle:
        for line in handle:
            if b'"binding"' not in line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            ref = event.get("objectRef") or {}
            if (
                ref.get("subresource") != "binding"
                or event.get("stage") != "ResponseComplete"
                or (event.get("responseStatus") or {}).get("code") != 201
                or (event.get("user") or {}).get("username") != PEER_USER
            ):
                continue
            stamp = str(event.get("stageTimestamp", "")).replace("Z", "+00:00")
            try:
                commits[str(ref.get("name"))] = datetime.datetime.fromisoformat(stamp).timestamp()
            except ValueError:
                continue
    return commits
