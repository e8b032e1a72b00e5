"""Kueue (v0.17.0) admits and kube-scheduler places one gang on this control plane.

A smoke test of the bench's ``kueue`` peer (``bench/kueue_peer.py``), nothing of
coscheduler: Kueue runs as a process with its webhooks at loopback (``e2e.kueue``),
a kube-scheduler of its own places the pods. A Job of 4 pods of 2 cpu in a
LocalQueue is suspended by Kueue's webhook at creation, admitted whole against its
ClusterQueue's quota (8 cpu: two 4-cpu nodes), and placed; a second such Job waits
whole, suspended with no pod, until the first is gone. Kueue's pods are checked by
the same gang invariant as ours (``e2e.gangs``), keyed by the Job.

Runs only when asked (``COSCHEDULER_E2E_KUEUE=1``): Kueue is built from its module on
first use (18 min of a busy 2-core machine cold, 15 s with Go's build cache warm;
cached after). The test took 88 s with the session's cluster.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from e2e import build, gangs
from e2e import kueue as k
from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.podwatch import PodWatch
from e2e.processes import Process
from e2e.tests import helpers as h
from e2e.waiting import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        os.environ.get("COSCHEDULER_E2E_KUEUE") != "1",
        reason="builds Kueue from its module (minutes cold): COSCHEDULER_E2E_KUEUE=1 runs it",
    ),
]

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
KUEUE_TIMEOUT_SECONDS = 60.0


@pytest.fixture(scope="module")
def kueue(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[k.Kueue]:
    settings = k.KueueSettings(pods_ready_timeout_seconds=120)
    with started_kueue(cluster, request, settings) as running:
        yield running


@contextlib.contextmanager
def started_kueue(
    cluster: Cluster, request: pytest.FixtureRequest, settings: k.KueueSettings
) -> Iterator[k.Kueue]:
    """Kueue running on the session's cluster (built first if need be); its log shown on failure."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        files = build.ensure_kueue()  # a cold build shows its progress
    kubectl = [str(build.binaries().kubectl), f"--kubeconfig={cluster.kubeconfig}"]
    running = k.Kueue.start(
        files, kubectl=kubectl, kubeconfig=cluster.kubeconfig,
        work_dir=cluster.state_dir / "kueue", log=cluster.logs_dir / "kueue.log",
        settings=settings,
    )  # fmt: skip
    failed_before = request.session.testsfailed
    try:
        yield running
    finally:
        running.stop()
        if request.session.testsfailed > failed_before:
            log = Path(running.process.record.log).read_text(errors="replace")
            print(f"\n--- kueue log ---\n{log[-6000:]}")


@pytest.fixture
def kube_scheduler(cluster: Cluster) -> Iterator[str]:
    """A kube-scheduler of default plugins under a name of its own; yields that name."""
    name = f"kueue-smoke-{secrets.token_hex(3)}"
    config = cluster.state_dir / f"{name}.yaml"
    config.write_text(
        yaml.safe_dump({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "clientConnection": {"kubeconfig": str(cluster.kubeconfig)},
            "profiles": [{"schedulerName": name}],
        })
    )  # fmt: skip
    process = Process.start(
        name,
        [str(build.binaries().kube_scheduler), f"--config={config}", "--secure-port=0"],
        log=cluster.logs_dir / f"{name}.log",
        die_with_parent=True,
    )
    try:
        yield name
    finally:
        process.stop()


def kueue_job(name: str, queue: str, *, scheduler: str, pool: str, pods: int, cpu: str) -> Json:
    """A Job as its user writes it for Kueue: the queue label, nothing else of Kueue's."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {k.KUEUE_QUEUE_LABEL: queue}},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "template": {
                # Its pods run until deleted (KWOK would end a Job's pods at once).
                "metadata": {"annotations": {w.COMPLETE_AFTER: "1h"}},
                "spec": {
                    "schedulerName": scheduler,
                    "restartPolicy": "Never",
                    "nodeSelector": {w.POOL_LABEL: pool},
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{
                        "name": "main", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
                    }],
                }
            },
        },
    }  # fmt: skip


def jobs_path(namespace: str) -> str:
    return f"/apis/batch/v1/namespaces/{namespace}/jobs"


def workload_of(cluster: Cluster, namespace: str, job: str) -> Json | None:
    listed = cluster.api.get(f"/apis/{k.API}/namespaces/{namespace}/workloads")
    for item in listed.get("items", []):
        owners = item["metadata"].get("ownerReferences") or []
        if any(o["kind"] == "Job" and o["name"] == job for o in owners):
            found: Json = item
            return found
    return None


def conditions(item: Json | None) -> dict[str, str]:
    found = ((item or {}).get("status") or {}).get("conditions") or []
    return {c["type"]: c["status"] for c in found}


def bound(cluster: Cluster, namespace: str, job: str) -> int:
    pods = w.list_pods(cluster.api, namespace, f"{JOB_NAME_LABEL}={job}")
    return sum(1 for pod in pods if pod["spec"].get("nodeName"))


def test_kueue_admits_a_gang_whole_and_kube_scheduler_places_it(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    kube_scheduler: str,
    kueue: k.Kueue,
) -> None:
    add_nodes(2, cpu="4", memory="16Gi")
    flavor, queue = f"f-{pool}", f"cq-{pool}"
    objects = [
        k.resource_flavor(flavor),
        k.cluster_queue(queue, cpu=8, memory=32 * 2**30, flavor=flavor),
        k.local_queue("team", namespace, queue),
    ]
    watch = PodWatch(cluster.api).start()
    for body in objects:
        create(cluster, body)
    try:
        first = cluster.api.create(
            jobs_path(namespace),
            kueue_job("first", "team", scheduler=kube_scheduler, pool=pool, pods=4, cpu="2"),
        )
        # Kueue's webhook (at loopback) suspended it on the way in.
        assert first["spec"]["suspend"] is True
        wait_for(
            lambda: bound(cluster, namespace, "first"),
            lambda count: count == 4,
            describe="Kueue to admit the Job and kube-scheduler to bind its 4 pods",
            timeout=KUEUE_TIMEOUT_SECONDS,
        )
        wait_for(
            lambda: conditions(workload_of(cluster, namespace, "first")),
            lambda found: found.get("Admitted") == "True" and found.get("PodsReady") == "True",
            describe="the Workload Admitted and PodsReady",
            timeout=KUEUE_TIMEOUT_SECONDS,
        )

        # The quota is used up: a second gang waits whole, suspended, with no pod.
        cluster.api.create(
            jobs_path(namespace),
            kueue_job("second", "team", scheduler=kube_scheduler, pool=pool, pods=4, cpu="2"),
        )
        wait_for(
            lambda: conditions(workload_of(cluster, namespace, "second")),
            lambda found: found.get("QuotaReserved") == "False",
            describe="the second Workload pending for quota",
            timeout=KUEUE_TIMEOUT_SECONDS,
        )
        second = cluster.api.get(f"{jobs_path(namespace)}/second")
        assert second["spec"]["suspend"] is True
        assert bound(cluster, namespace, "second") == 0
        h.show(cluster, namespace, "get", "jobs,workloads.kueue.x-k8s.io,pods", "-o", "wide")

        # The first gang goes; the second is admitted and placed whole.
        cluster.api.delete(f"{jobs_path(namespace)}/first?propagationPolicy=Background")
        wait_for(
            lambda: bound(cluster, namespace, "second"),
            lambda count: count == 4,
            describe="the second Job's 4 pods bound once the first is gone",
            timeout=KUEUE_TIMEOUT_SECONDS,
        )
        watch.drain()
        partial = gangs.partial_gangs(
            watch.timeline(),
            {(namespace, "first"): 4, (namespace, "second"): 4},
            scheduler_names=(kube_scheduler,),
            start=watch.started_at,
            group_labels=(JOB_NAME_LABEL,),
        )
        assert partial == [], "a Kueue gang partially bound beyond the burst"
    finally:
        watch.stop()
        for path in (
            f"{jobs_path(namespace)}/second?propagationPolicy=Background",
            f"/apis/{k.API}/namespaces/{namespace}/localqueues/team",
            f"/apis/{k.API}/clusterqueues/{queue}",
            f"/apis/{k.API}/resourceflavors/{flavor}",
        ):
            cluster.api.delete(path)


def create(cluster: Cluster, body: Json) -> None:
    kind = body["kind"].lower() + "s"
    namespace = body["metadata"].get("namespace")
    where = f"namespaces/{namespace}/" if namespace else ""
    cluster.api.create(f"/apis/{k.API}/{where}{kind}", body)
