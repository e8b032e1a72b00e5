"""Kueue (v0.17.0) as a local process on a control plane of this project.

Kueue normally runs in a pod of its Deployment, its webhooks reached through a
Service, its certificates made by its own rotator into a Secret. Here there is
no kubelet and no Service network, so it runs as a process next to the API
server and the harness provides what the cluster would:

- Its CRDs, created from the module it was built from (``e2e.build.ensure_kueue``),
  without the conversion-webhook patches: only ``v1beta2`` (the storage version)
  is written, so no conversion is ever asked for.
- Its webhooks (every one its manifests list for the frameworks enabled here, and
  for its own kinds), registered at ``https://127.0.0.1:<port>/<path>`` with the CA
  of a serving certificate made by ``e2e.pki``, written to the webhook server's
  ``certDir``. Its internal certificate management is off: the certificates are
  there, as a mounted Secret would put them. The pod webhooks leave out
  ``kube-system``, as upstream's kustomization does. They are registered once
  Kueue serves and removed before it stops: they fail closed.
- The metrics server's certificate, which v0.17.0 reads from a fixed path
  (``/etc/kueue/metrics/certs``) when internal certificates are off: written there
  once if absent. Metrics are not served (bind address ``0``), but the file is read.

The visibility server (``VisibilityOnDemand``) is off: it would bind a fixed port
and needs an APIService the local control plane has no route to.
"""

from __future__ import annotations

import datetime
import secrets
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e import build, pki
from e2e.processes import Process, free_port, wait_until

__all__ = ["KUEUE_QUEUE_LABEL", "NAMESPACE", "Kueue", "KueueSettings", "install_crds"]

Json = dict[str, Any]

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""A Job's (or a pod's) LocalQueue; Kueue manages nothing without it here."""
API = "kueue.x-k8s.io/v1beta2"
NAMESPACE = "kueue-system"
SERVICE_DNS = f"kueue-webhook-service.{NAMESPACE}.svc"
CA_NAME = "kueue-ca"
MUTATING = "kueue-mutating-webhook-configuration"
VALIDATING = "kueue-validating-webhook-configuration"
METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
"""Fixed in v0.17.0 (``cmd/kueue/main.go``) when internal certificate management is off."""
CERT_VALIDITY = datetime.timedelta(days=365)
STARTUP_TIMEOUT_SECONDS = 120.0

FRAMEWORK_GROUPS = {"batch/job": {"batch"}, "pod": {""}}
"""The API groups of the webhooks each enabled integration needs (beside Kueue's own)."""
OWN_GROUP = "kueue.x-k8s.io"


@dataclass(frozen=True)
class KueueSettings:
    """What a platform team would put in Kueue's Configuration, for these runs."""

    qps: float = 50.0
    burst: int = 100
    frameworks: tuple[str, ...] = ("batch/job", "pod")
    wait_for_pods_ready: bool = True
    """``waitForPodsReady`` on: Kueue's own approximation of all-or-nothing (off with
    coscheduler placing, which binds a gang whole or not at all)."""
    pods_ready_timeout_seconds: int = 300
    """``waitForPodsReady.timeout``: an admitted gang not all Ready by then is evicted."""
    block_admission: bool = True
    """``waitForPodsReady.blockAdmission``: one gang at a time until its pods are Ready
    (Kueue's documented all-or-nothing)."""
    fair_sharing: bool = True
    """``fairSharing`` on (cohorts share by the ClusterQueues' weights)."""
    log_level: str = "info"
    """``--zap-log-level``: ``info``, ``error``, or an integer above 0 (more verbose)."""
    extra: Json = field(default_factory=dict)

    def configuration(self, *, webhook_port: int, probe_port: int, cert_dir: Path) -> Json:
        config: Json = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": NAMESPACE,
            "health": {"healthProbeBindAddress": f"127.0.0.1:{probe_port}"},
            "metrics": {"bindAddress": "0"},
            "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "clientConnection": {"qps": self.qps, "burst": self.burst},
            "manageJobsWithoutQueueName": False,
            "integrations": {"frameworks": list(self.frameworks)},
        }
        if self.wait_for_pods_ready:
            config["waitForPodsReady"] = {
                "timeout": f"{self.pods_ready_timeout_seconds}s",
                "blockAdmission": self.block_admission,
                "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 10},
            }
        if self.fair_sharing:
            config["fairSharing"] = {
                "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
            }
        config.update(self.extra)
        return config


def install_crds(kubectl: Sequence[str], crds: Path) -> list[str]:
    """Create Kueue's CRDs (once per cluster) and wait until they are Established."""
    names = [
        str(doc["metadata"]["name"])
        for doc in yaml.safe_load_all(crds.read_text())
        if doc is not None
    ]
    created = subprocess.run(
        [*kubectl, "create", "-f", str(crds)], capture_output=True, text=True, check=False
    )
    if created.returncode != 0 and "AlreadyExists" not in created.stderr:
        raise RuntimeError(f"creating Kueue's CRDs failed: {created.stderr.strip()}")
    subprocess.run(
        [*kubectl, "wait", "--for=condition=Established", "--timeout=60s",
         *(f"crd/{name}" for name in names)],
        check=True, capture_output=True,
    )  # fmt: skip
    return names


@dataclass
class Kueue:
    """A running Kueue manager and the webhook configurations registered for it."""

    process: Process
    kubectl: list[str]

    @classmethod
    def start(
        cls,
        files: build.KueueFiles,
        *,
        kubectl: Sequence[str],
        kubeconfig: Path,
        work_dir: Path,
        log: Path,
        settings: KueueSettings | None = None,
    ) -> Kueue:
        """Start Kueue, wait until it is ready, then register its webhooks at loopback."""
        settings = settings or KueueSettings()
        install_crds(kubectl, files.crds)
        work_dir.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="kueue-", dir=work_dir))
        certificates = pki.webhook_certificates(
            ca_name=CA_NAME, dns_name=SERVICE_DNS, validity=CERT_VALIDITY
        )
        cert_dir = work / "serving-certs"
        _write_pair(certificates, cert_dir)
        if not (METRICS_CERT_DIR / "tls.crt").is_file():
            _write_pair(certificates, METRICS_CERT_DIR)
        webhook_port, probe_port = free_port(), free_port()
        config = work / "kueue-config.yaml"
        body = settings.configuration(
            webhook_port=webhook_port, probe_port=probe_port, cert_dir=cert_dir
        )
        config.write_text(yaml.safe_dump(body, sort_keys=False))
        process = Process.start(
            "kueue",
            [
                str(files.binary),
                f"--config={config}",
                "--feature-gates=VisibilityOnDemand=false",
                f"--zap-log-level={settings.log_level}",
            ],
            log=log,
            env={"KUBECONFIG": str(kubeconfig)},
            die_with_parent=True,
        )
        kueue = cls(process=process, kubectl=list(kubectl))
        try:
            wait_until(
                lambda: _http_ok(f"http://127.0.0.1:{probe_port}/readyz"),
                timeout=STARTUP_TIMEOUT_SECONDS,
                what="Kueue's /readyz",
                watch=[process],
                interval=0.5,
            )
            manifests = webhook_configurations(
                files.webhooks, certificates.ca_cert, webhook_port, settings.frameworks
            )
            path = work / "webhooks.yaml"
            path.write_text(yaml.safe_dump_all(manifests, sort_keys=False))
            subprocess.run([*kubectl, "create", "-f", str(path)], check=True, capture_output=True)
        except BaseException:
            kueue.stop()
            raise
        return kueue

    def stop(self) -> None:
        """Remove the webhooks (they fail closed), then stop the process."""
        subprocess.run(
            [*self.kubectl, "delete", "--ignore-not-found", "--wait=false",
             f"mutatingwebhookconfiguration/{MUTATING}",
             f"validatingwebhookconfiguration/{VALIDATING}"],
            capture_output=True, check=False, timeout=60,
        )  # fmt: skip
        self.process.stop()


def webhook_configurations(
    manifests: Path, ca_cert: bytes, port: int, frameworks: Sequence[str]
) -> list[Json]:
    """Upstream's webhook configurations for ``frameworks`` and Kueue's own kinds, each
    webhook called at a loopback URL instead of through the Service."""
    import base64

    groups = {OWN_GROUP}.union(*(FRAMEWORK_GROUPS.get(f, set()) for f in frameworks))
    ca = base64.b64encode(ca_cert).decode()
    names = {"MutatingWebhookConfiguration": MUTATING, "ValidatingWebhookConfiguration": VALIDATING}
    result = []
    for doc in yaml.safe_load_all(manifests.read_text()):
        if not doc or doc.get("kind") not in names:
            continue
        webhooks = []
        for webhook in doc.get("webhooks") or []:
            wanted = {g for rule in webhook.get("rules") or [] for g in rule.get("apiGroups") or []}
            if not wanted or not wanted <= groups:
                continue
            service = webhook["clientConfig"]["service"]
            webhook["clientConfig"] = {
                "url": f"https://127.0.0.1:{port}{service['path']}",
                "caBundle": ca,
            }
            if wanted == {""}:
                # Upstream's kustomization keeps the pod webhooks out of the system namespaces.
                webhook["namespaceSelector"] = {
                    "matchExpressions": [{
                        "key": "kubernetes.io/metadata.name", "operator": "NotIn",
                        "values": ["kube-system", NAMESPACE],
                    }]
                }  # fmt: skip
            webhooks.append(webhook)
        result.append({
            "apiVersion": doc["apiVersion"], "kind": doc["kind"],
            "metadata": {"name": names[doc["kind"]]}, "webhooks": webhooks,
        })  # fmt: skip
    return result


# --- the objects a platform team writes ------------------------------------------------------


def resource_flavor(
    name: str = "default",
    *,
    node_labels: Json | None = None,
    node_taints: list[Json] | None = None,
    tolerations: list[Json] | None = None,
) -> Json:
    """A ResourceFlavor; Kueue copies its node labels and tolerations into admitted pods."""
    spec: Json = {}
    if node_labels:
        spec["nodeLabels"] = node_labels
    if node_taints:
        spec["nodeTaints"] = node_taints
    if tolerations:
        spec["tolerations"] = tolerations
    body: Json = {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}}
    if spec:
        body["spec"] = spec
    return body


def cluster_queue(
    name: str,
    *,
    cpu: float,
    memory: float,
    cohort: str | None = None,
    borrowing_cpu: float | None = None,
    weight: float | None = None,
    preemption: Json | None = None,
    held: bool = False,
    flavor: str = "default",
    admission_checks: Sequence[str] = (),
) -> Json:
    """A ClusterQueue with nominal cpu and memory of one flavor (memory in bytes), its
    workloads admitted only once ``admission_checks`` (AdmissionCheck names) are ready."""

    def resource(resource_name: str, nominal: float, borrowing: float | None) -> Json:
        quota: Json = {"name": resource_name, "nominalQuota": _quantity(resource_name, nominal)}
        if borrowing is not None:
            quota["borrowingLimit"] = _quantity(resource_name, borrowing)
        return quota

    memory_borrowing = None if borrowing_cpu is None else borrowing_cpu * memory / max(cpu, 1e-9)
    spec: Json = {
        "namespaceSelector": {},
        "resourceGroups": [{
            "coveredResources": ["cpu", "memory"],
            "flavors": [{"name": flavor, "resources": [
                resource("cpu", cpu, borrowing_cpu),
                resource("memory", memory, memory_borrowing),
            ]}],
        }],
    }  # fmt: skip
    if cohort is not None:
        spec["cohortName"] = cohort
    if weight is not None:
        spec["fairSharing"] = {"weight": f"{weight:g}"}
    if preemption is not None:
        spec["preemption"] = preemption
    if held:
        spec["stopPolicy"] = "Hold"
    if admission_checks:
        spec["admissionChecksStrategy"] = {
            "admissionChecks": [{"name": check} for check in admission_checks]
        }
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str, namespace: str, cluster_queue_name: str) -> Json:
    return {
        "apiVersion": API,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue_name},
    }


# --- MultiKueue: a manager's objects, each naming its workers ---------------------------------

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
"""The AdmissionCheck controller that dispatches a manager's workloads to its workers."""


def worker_kubeconfig_secret(name: str, kubeconfig: str) -> Json:
    """A worker's kubeconfig in a Secret of Kueue's namespace, under the key MultiKueue reads.

    MultiKueue refuses a kubeconfig naming files (certificates must be inline, as the
    harness writes them) or skipping TLS verification."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "stringData": {"kubeconfig": kubeconfig},
    }


def multikueue_cluster(name: str, secret: str) -> Json:
    """A worker cluster, reached with the kubeconfig in ``secret``."""
    return {
        "apiVersion": API,
        "kind": "MultiKueueCluster",
        "metadata": {"name": name},
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret}}},
    }


def multikueue_config(name: str, clusters: Sequence[str]) -> Json:
    return {
        "apiVersion": API,
        "kind": "MultiKueueConfig",
        "metadata": {"name": name},
        "spec": {"clusters": list(clusters)},
    }


def multikueue_check(name: str, config: str) -> Json:
    """The AdmissionCheck a manager's ClusterQueue names: ready once a worker admits."""
    return {
        "apiVersion": API,
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": {
            "controllerName": MULTIKUEUE_CONTROLLER,
            "parameters": {"apiGroup": OWN_GROUP, "kind": "MultiKueueConfig", "name": config},
        },
    }


def _quantity(resource_name: str, value: float) -> str:
    return f"{value:g}" if resource_name == "cpu" else str(int(value))


def _write_pair(certificates: pki.WebhookCertificates, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("tls.crt", "tls.key", "ca.crt"):
        staging = directory / f".{name}.{secrets.token_hex(4)}"
        staging.write_bytes(certificates.secret_data()[name])
        staging.chmod(0o600)
        staging.replace(directory / name)


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status) == 200
    except (OSError, urllib.error.URLError):
        return False
