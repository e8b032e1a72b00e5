"""KubeRay's ray-operator (v1.5.0) as a local process on the e2e control plane.

The operator normally runs in a pod of its Deployment; here it runs next to the API
server with the admin kubeconfig and ``--batch-scheduler=scheduler-plugins``, doing what
it does in a cluster: for a RayCluster labelled ``ray.io/gang-scheduling-enabled`` it
creates a ``scheduling.x-k8s.io/v1alpha1`` PodGroup (minMember = workers + 1 head, its
minResources summed), labels the head and worker pods ``scheduling.x-k8s.io/pod-group``
and gives them the scheduler name ``scheduler-plugins-scheduler`` (fixed in v1.5.0:
coscheduler runs under that name for it).

Its webhooks are off by default (``ENABLE_WEBHOOKS`` unset), so nothing is registered.
Its three CRDs (RayCluster, RayJob, RayService: its controllers watch all three) come
from its module (``e2e.build.ensure_kuberay``), created rather than applied (too large
for the last-applied annotation). scheduler-plugins' PodGroup CRD must be installed
before it starts.
"""

from __future__ import annotations

import subprocess
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from e2e import build
from e2e.processes import Process, free_port, wait_until

__all__ = ["GANG_LABEL", "RAYCLUSTERS", "SCHEDULER_NAME", "KubeRay", "install_crds"]

RAYCLUSTERS = "/apis/ray.io/v1/namespaces/{ns}/rayclusters"
GANG_LABEL = "ray.io/gang-scheduling-enabled"
SCHEDULER_NAME = "scheduler-plugins-scheduler"
"""What v1.5.0 writes into every pod's ``schedulerName`` for scheduler-plugins."""
STARTUP_TIMEOUT_SECONDS = 120.0


def install_crds(kubectl: Sequence[str], crds: Path) -> list[str]:
    """Create KubeRay's CRDs (once per cluster) and wait until they are Established."""
    names = [str(d["metadata"]["name"]) for d in yaml.safe_load_all(crds.read_text()) if d]
    created = subprocess.run(
        [*kubectl, "create", "-f", str(crds)], capture_output=True, text=True, check=False
    )
    if created.returncode != 0 and "AlreadyExists" not in created.stderr:
        raise RuntimeError(f"creating KubeRay's CRDs failed: {created.stderr.strip()}")
    subprocess.run(
        [*kubectl, "wait", "--for=condition=Established", "--timeout=60s",
         *(f"crd/{name}" for name in names)],
        check=True, capture_output=True,
    )  # fmt: skip
    return names


@dataclass
class KubeRay:
    """A running ray-operator."""

    process: Process

    @classmethod
    def start(cls, files: build.KubeRayFiles, *, kubeconfig: Path, log: Path) -> KubeRay:
        """Start the operator for all namespaces; return once it answers ``/readyz``."""
        probe_port = free_port()
        process = Process.start(
            "ray-operator",
            [
                str(files.binary),
                "--batch-scheduler=scheduler-plugins",
                "--enable-leader-election=false",
                "--metrics-addr=0",
                f"--health-probe-bind-address=127.0.0.1:{probe_port}",
                "--log-stdout-encoder=console",
            ],
            log=log,
            env={"KUBECONFIG": str(kubeconfig)},
            die_with_parent=True,
        )
        operator = cls(process=process)
        try:
            wait_until(
                lambda: _http_ok(f"http://127.0.0.1:{probe_port}/readyz"),
                timeout=STARTUP_TIMEOUT_SECONDS,
                what="the ray-operator's /readyz",
                watch=[process],
                interval=0.5,
            )
        except BaseException:
            operator.stop()
            raise
        return operator

    def stop(self) -> None:
        self.process.stop()

    def log(self) -> str:
        return Path(self.process.record.log).read_text(errors="replace")


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status) == 200
    except (OSError, urllib.error.URLError):
        return False
