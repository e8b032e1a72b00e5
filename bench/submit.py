"""Putting a workload on the cluster: manifests, namespace, group objects, pods and Jobs.

Creations run with at most ``CREATE_CONCURRENCY`` requests in flight, so the runner's own
load on the API server stays the same for every peer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from bench.analysis import GangInfo, NodeCapacity
from bench.kube import ApiError, Kube, gather_limited
from bench.observe import Recorder
from bench.peers import GANG_LABEL, Gang, Peer, Share
from bench.progress import Progress
from coscheduler.api.quantity import float_quantity
from e2e.api import write_kubeconfig
from e2e.kwok_stages import COMPLETE_AFTER_ANNOTATION
from e2e.pki import Pki

Json = dict[str, Any]
CREATE_CONCURRENCY = 32
#: Creations in flight of the Go creator (:func:`create_pods_in_bulk`).
BULK_CREATE_WORKERS = 128


def pod_template(peer: Peer, gang: Gang) -> Json:
    annotations = {}
    if gang.run_seconds is not None:
        annotations[COMPLETE_AFTER_ANNOTATION] = f"{gang.run_seconds:g}s"
    pod: Json = {
        "metadata": {"labels": {GANG_LABEL: gang.name}, "annotations": annotations},
        "spec": {
            "schedulerName": peer.scheduler_name,
            "restartPolicy": "Never" if gang.job else "Always",
            "terminationGracePeriodSeconds": gang.grace_seconds,
            "automountServiceAccountToken": False,
            "containers": [{
                "name": "main", "image": "registry.invalid/bench:1",
                "resources": {"requests": {"cpu": gang.cpu, "memory": gang.memory}},
            }],
        },
    }  # fmt: skip
    if gang.priority_class is not None:
        pod["spec"]["priorityClassName"] = gang.priority_class
    if gang.gpus:
        # Every peer reads the same claim: each member's own, made from the template.
        claim = {"name": "gpus", "resourceClaimTemplateName": gpu_template_name(gang.gpus)}
        pod["spec"]["resourceClaims"] = [claim]
        pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
    peer.decorate_pod(pod, gang)
    return pod


def gpu_template_name(gpus: int) -> str:
    """The ResourceClaimTemplate of ``gpus`` GPUs the ``dra`` suite publishes."""
    return f"gpus-{gpus}"


def pod_manifest(peer: Peer, gang: Gang, index: int) -> Json:
    pod = pod_template(peer, gang)
    pod["apiVersion"] = "v1"
    pod["kind"] = "Pod"
    pod["metadata"]["name"] = f"{gang.name}-{index}"
    return pod


def job_manifest(peer: Peer, gang: Gang) -> Json:
    job: Json = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": gang.name, "labels": {GANG_LABEL: gang.name}},
        "spec": {
            "parallelism": gang.size,
            "completions": gang.size,
            "backoffLimit": 0,
            "template": pod_template(peer, gang),
        },
    }
    if gang.ignore_disruptions:
        rule = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
        job["spec"]["podFailurePolicy"] = {"rules": [rule]}
    peer.decorate_job(job, gang)
    return job


async def create_priority_classes(kube: Kube, classes: dict[str, int]) -> None:
    """Cluster-wide PriorityClasses (name: value), the same for every peer."""
    for name, value in classes.items():
        body = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "globalDefault": False,
            "description": "bench: preemption workload",
        }
        await kube.create("/apis/scheduling.k8s.io/v1/priorityclasses", body)


async def create_namespace(kube: Kube, name: str) -> None:
    await kube.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            await kube.get(f"/api/v1/namespaces/{name}/serviceaccounts/default")
            return
        except ApiError as error:
            if error.status != 404:
                raise
        await asyncio.sleep(0.2)
    raise RuntimeError(f"namespace {name}: no default ServiceAccount after 60s")


async def create_shares(kube: Kube, peer: Peer, shares: list[Share]) -> None:
    """The tenants' namespaces (but the trial's own) and the peer's objects for their shares."""
    for namespace in sorted({s.namespace for s in shares} - {"bench"}):
        await create_namespace(kube, namespace)
    for path, body in peer.share_objects(shares):
        await kube.create(path, body)


async def node_capacities(kube: Kube) -> dict[str, NodeCapacity]:
    listed = await kube.get("/api/v1/nodes")
    result = {}
    for node in listed["items"]:
        alloc = node["status"].get("allocatable", {})
        result[node["metadata"]["name"]] = NodeCapacity(
            cpu=float_quantity(alloc.get("cpu", "0")),
            memory=float_quantity(alloc.get("memory", "0")),
            pods=int(alloc.get("pods", "0")),
        )
    return result


async def create_group_objects(kube: Kube, peer: Peer, ns: str, gangs: list[Gang]) -> None:
    calls: list[Awaitable[Any]] = []
    for gang in gangs:
        group = peer.group_object(gang)
        if group is not None:
            path, body = group
            calls.append(kube.create(path.format(ns=gang.namespace or ns), body))
    await gather_limited(calls, CREATE_CONCURRENCY)


async def create_pods(
    kube: Kube, recorder: Recorder, peer: Peer, ns: str, gangs: list[Gang]
) -> None:
    async def one(gang: Gang, index: int) -> None:
        body = pod_manifest(peer, gang, index)
        await kube.create(f"/api/v1/namespaces/{gang.namespace or ns}/pods", body)
        recorder.mark_created(
            body["metadata"]["name"],
            gang.name,
            float_quantity(gang.cpu),
            float_quantity(gang.memory),
        )

    await gather_limited([one(g, i) for g in gangs for i in range(g.size)], CREATE_CONCURRENCY)


def write_backlog(peer: Peer, ns: str, gangs: list[Gang], kube: Kube, work_dir: Path) -> Path:
    """The pods of :func:`create_pods` as JSON lines (namespace set) and an admin
    kubeconfig beside them, for the Go creator; the manifests' path."""
    work_dir.mkdir(parents=True, exist_ok=True)
    manifests = work_dir / "pods.jsonl"
    with manifests.open("wb") as out:
        for gang in gangs:
            for index in range(gang.size):
                body = pod_manifest(peer, gang, index)
                body["metadata"]["namespace"] = gang.namespace or ns
                out.write(orjson.dumps(body) + b"\n")
    write_kubeconfig(work_dir / "admin.kubeconfig", port=kube.port, pki=Pki(kube.pki_dir))
    return manifests


async def create_pods_in_bulk(
    kube: Kube, recorder: Recorder, peer: Peer, ns: str, gangs: list[Gang], creator: Path,
    work_dir: Path,
) -> float:  # fmt: skip
    """The pods of :func:`create_pods`, created by the ceiling binary's ``--create`` mode
    (Go, protobuf, ``BULK_CREATE_WORKERS`` in flight) as the cluster's admin; the seconds
    it took. Each pod is marked created when the last is: the peer starts after them."""
    manifests = write_backlog(peer, ns, gangs, kube, work_dir)
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        str(creator), f"--kubeconfig={work_dir / 'admin.kubeconfig'}", f"--create={manifests}",
        f"--workers={BULK_CREATE_WORKERS}", "--qps=100000", "--burst=100000",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"creating {manifests}: {output.decode(errors='replace')[-2000:]}")
    seconds = time.monotonic() - started
    for gang in gangs:
        cpu, memory = float_quantity(gang.cpu), float_quantity(gang.memory)
        for index in range(gang.size):
            recorder.mark_created(f"{gang.name}-{index}", gang.name, cpu, memory)
    return seconds


async def wait_peer_ready(
    kube: Kube, recorder: Recorder, peer: Peer, ns: str, within: float
) -> float:
    """Create one plain probe pod and wait until the peer binds it: the peer is serving."""
    probe = Gang("probe", 1, 1, cpu="10m", memory="16Mi")
    started = time.monotonic()
    await create_pods(kube, recorder, peer, ns, [probe])
    ok = await recorder.wait(lambda r: r.pods.get("probe-0") is not None
                             and r.pods["probe-0"].bound is not None, within=within,
                             poll=0.1)  # fmt: skip
    for process in peer.processes:
        process.ensure_running()
    if not ok:
        raise RuntimeError(f"{peer.name} did not bind a probe pod within {within:.0f}s")
    return time.monotonic() - started


def gang_infos(gangs: list[Gang]) -> dict[str, GangInfo]:
    return {g.name: GangInfo(g.name, g.size, g.min_member) for g in gangs}


async def wait_progress(
    recorder: Recorder,
    progress: Progress,
    peer: Peer,
    total: int,
    limit: float,
    done: Callable[[Recorder], bool],
    count: Callable[[Recorder], int],
    what: str = "bound",
) -> None:
    deadline = time.monotonic() + limit
    while not done(recorder):
        for process in peer.processes:
            process.ensure_running()
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {count(recorder)}/{total} pods {what} after {limit:.0f}s")
        progress.update(count(recorder), total, what)
        await recorder.wait(done, within=1.0, poll=0.5)
    progress.update(count(recorder), total, what)


async def submit_jobs(
    kube: Kube, recorder: Recorder, peer: Peer, ns: str, gangs: list[Gang], progress: Progress
) -> dict[str, float]:
    progress.status(f"submitting {len(gangs)} Jobs")
    await create_group_objects(kube, peer, ns, gangs)
    submitted: dict[str, float] = {}

    async def one(gang: Gang) -> None:
        path = f"/apis/batch/v1/namespaces/{gang.namespace or ns}/jobs"
        await kube.create(path, job_manifest(peer, gang))
        submitted[gang.name] = recorder.now()

    await gather_limited([one(g) for g in gangs], CREATE_CONCURRENCY)
    return submitted
