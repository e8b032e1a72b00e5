"""Kubeflow's training operator (v1.8.1) as a local process on the e2e control plane.

The operator normally runs in a pod of its Deployment; here there is no
kubelet (KWOK nodes only), so it runs as a process next to the API server,
with the admin kubeconfig, doing exactly what it does in a cluster: with
``--gang-scheduler-name=coscheduler`` it creates a PodGroup of
``scheduling.x-k8s.io/v1alpha1`` per job, labels the job's pods with
``scheduling.x-k8s.io/pod-group`` and gives them that scheduler name.

What a kubelet and the Deployment's manifests would provide, the harness does:

- The webhook Secret. The operator's certificate rotator (cert-controller)
  reads ``training-operator-webhook-cert`` in the namespace of
  ``MY_POD_NAMESPACE`` and must find it (it only updates it). We fill it with
  a CA and a serving certificate from ``e2e.pki`` that it accepts as valid,
  so it keeps them rather than issuing its own.
- The mounted certificate files. The webhook server reads them from
  ``$TMPDIR/k8s-webhook-server/serving-certs`` (each run sets its own TMPDIR,
  so parallel runs never share them); the rotator, whose directory is fixed
  in v1.8.1, only checks that ``/tmp/k8s-webhook-server/serving-certs/tls.crt``
  exists before it declares the certificates mounted, so a copy goes there.
- The webhook registration. The validating webhook is registered for
  PyTorchJobs, as upstream's manifests do, but at a loopback URL: the local
  control plane has no Service network and Endpoints may not point at
  127.0.0.1, so the manifests' Service reference cannot be routed. Registering
  it proves a job passes the operator's own admission, as in a real install.
  It is registered before the operator starts (the rotator injects its CA
  into it) and removed when it stops, so no dead webhook is left behind.

On SIGTERM v1.8.1 stops cleanly, then panics (``close of closed channel``
in its ``main``: the channel the rotator closes is closed again on the way
out); its exit status after ``stop`` means nothing.

Only the PyTorchJob controller is enabled (``--enable-scheme=pytorchjob``),
so only its CRD is installed (taken from the operator's module by
``e2e.build``). scheduler-plugins' PodGroup CRD must be installed before the
operator starts: it checks for it once and exits without it.
"""

from __future__ import annotations

import base64
import datetime
import os
import secrets
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from e2e import build, pki
from e2e.api import ApiClient, ApiError, Json
from e2e.controlplane import Cluster
from e2e.processes import Process, free_port, wait_until
from e2e.waiting import wait_for

__all__ = ["PYTORCHJOBS", "TrainingOperator", "install_pytorchjob_crd"]

PYTORCHJOBS = "/apis/kubeflow.org/v1/namespaces/{ns}/pytorchjobs"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"

SERVICE_NAME = "training-operator"
"""The operator's default ``--webhook-service-name``; its certificate is for ``<it>.<ns>.svc``."""
SECRET_NAME = "training-operator-webhook-cert"
WEBHOOK_CONFIGURATION = "validator.training-operator.kubeflow.org"
"""The name cert-controller injects the CA into (upstream's kustomize patch gives it)."""
CA_NAME = "training-operator-ca"
ROTATOR_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
"""Fixed in v1.8.1 (``pkg/cert``); the rotator only checks that ``tls.crt`` exists here."""
CERT_VALIDITY = datetime.timedelta(days=365)
"""More than the rotator's 90-day lookahead, else it replaces our certificates."""
STARTUP_TIMEOUT_SECONDS = 120.0


def install_pytorchjob_crd(api: ApiClient, crd_file: Path) -> str:
    """Create the PyTorchJob CRD (once per cluster) and wait until it is served.

    Created through the API rather than ``kubectl apply``: at 575 kB it is
    larger than the ``last-applied-configuration`` annotation may be.
    """
    crd: Json = yaml.safe_load(crd_file.read_text())
    name: str = crd["metadata"]["name"]
    try:
        api.create(CRDS, crd)
    except ApiError as error:
        if error.status != 409:  # already installed earlier in the session
            raise
    wait_for(
        lambda: api.get(f"{CRDS}/{name}"),
        lambda found: any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (found.get("status") or {}).get("conditions") or []
        ),
        describe=f"CRD {name} to be Established",
    )
    wait_for(
        lambda: api.get_or_none("/apis/kubeflow.org/v1/pytorchjobs") is not None,
        describe="PyTorchJobs to be listed",
    )
    return name


@dataclass
class TrainingOperator:
    """A running ``training-operator`` process and what was made for it in the cluster."""

    process: Process
    api: ApiClient
    namespace: str
    """Where its webhook Secret lives (its ``MY_POD_NAMESPACE``)."""

    @classmethod
    def start(
        cls, cluster: Cluster, files: build.TrainingOperatorFiles, *, scheduler_name: str
    ) -> TrainingOperator:
        """Start the operator for all namespaces and return once it and its webhook are ready."""
        api = cluster.api
        namespace = f"kubeflow-{secrets.token_hex(3)}"
        api.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        )
        certificates = pki.webhook_certificates(
            ca_name=CA_NAME, dns_name=f"{SERVICE_NAME}.{namespace}.svc", validity=CERT_VALIDITY
        )
        api.create(f"/api/v1/namespaces/{namespace}/secrets", _secret(certificates))
        work = Path(tempfile.mkdtemp(prefix="training-operator-", dir=cluster.state_dir))
        _mount(certificates, work / "k8s-webhook-server" / "serving-certs")
        _mount(certificates, ROTATOR_CERT_DIR, only_if_absent=True)

        webhook_port, probe_port = free_port(), free_port()
        # Registered first, as a real install's manifests do, so the rotator finds it to
        # inject the CA into; no job is written before the operator is ready.
        api.create(WEBHOOKS, _webhook_configuration(certificates.ca_cert, webhook_port))
        try:
            process = Process.start(
                "training-operator",
                [
                    str(files.binary),
                    f"--gang-scheduler-name={scheduler_name}",
                    "--enable-scheme=pytorchjob",
                    "--metrics-bind-address=0",
                    f"--health-probe-bind-address=127.0.0.1:{probe_port}",
                    f"--webhook-server-port={webhook_port}",
                    f"--webhook-service-name={SERVICE_NAME}",
                ],
                log=cluster.logs_dir / "training-operator.log",
                env={
                    "KUBECONFIG": str(cluster.kubeconfig),
                    "MY_POD_NAMESPACE": namespace,
                    "TMPDIR": str(work),
                },
                die_with_parent=True,
            )
        except BaseException:
            _remove(api, namespace)
            raise
        operator = cls(process=process, api=api, namespace=namespace)
        try:
            # Ready once the certificates are in place and the webhook server listens.
            wait_until(
                lambda: _http_ok(f"http://127.0.0.1:{probe_port}/readyz"),
                timeout=STARTUP_TIMEOUT_SECONDS,
                what="the training operator's /readyz",
                watch=[process],
                interval=0.5,
            )
        except BaseException:
            operator.stop()
            raise
        return operator

    def stop(self) -> None:
        """Stop the process, then remove its webhook (which fails closed) and its namespace."""
        self.process.stop()
        _remove(self.api, self.namespace)

    def log(self) -> str:
        return Path(self.process.record.log).read_text(errors="replace")


def _remove(api: ApiClient, namespace: str) -> None:
    api.delete(f"{WEBHOOKS}/{WEBHOOK_CONFIGURATION}")
    api.delete(f"/api/v1/namespaces/{namespace}")


def _secret(certificates: pki.WebhookCertificates) -> Json:
    data = {k: base64.b64encode(v).decode() for k, v in certificates.secret_data().items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET_NAME},
        "type": "Opaque",
        "data": data,
    }


def _mount(
    certificates: pki.WebhookCertificates, directory: Path, *, only_if_absent: bool = False
) -> None:
    """Write the Secret's files as a kubelet would mount them; each file replaced atomically."""
    if only_if_absent and (directory / "tls.crt").is_file():
        return
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in certificates.secret_data().items():
        staging = directory / f".{name}.{secrets.token_hex(4)}"
        staging.write_bytes(content)
        staging.chmod(0o600)
        os.replace(staging, directory / name)


def _webhook_configuration(ca_cert: bytes, port: int) -> Json:
    """Upstream's PyTorchJob webhook, called at a loopback URL instead of through its Service."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_CONFIGURATION},
        "webhooks": [
            {
                "name": "validator.pytorchjob.training-operator.kubeflow.org",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {
                    "url": f"https://127.0.0.1:{port}/validate-kubeflow-org-v1-pytorchjob",
                    "caBundle": base64.b64encode(ca_cert).decode(),
                },
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "rules": [
                    {
                        "apiGroups": ["kubeflow.org"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["pytorchjobs"],
                    }
                ],
            }
        ],
    }


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status) == 200
    except (OSError, urllib.error.URLError):
        return False
