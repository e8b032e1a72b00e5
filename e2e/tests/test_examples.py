"""Every file of manifests/examples/ does what its comment promises.

Each example is applied as a user would (``kubectl apply -f``), with one
change: its pods are pinned to this test's own pool of nodes, so that the
examples run side by side on the shared test cluster.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.waiting import wait_for

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "examples"
AddNodes = Callable[..., list[str]]


def _pod_templates(doc: Json) -> list[Json]:
    kind = doc.get("kind")
    if kind == "Pod":
        return [doc]
    if kind in ("ReplicaSet", "Job", "Deployment"):
        return [doc["spec"]["template"]]
    return []


def apply_example(
    cluster: Cluster, namespace: str, name: str, pool: str, *, run_seconds: str | None = None
) -> list[Json]:
    docs: list[Json] = [d for d in yaml.safe_load_all((EXAMPLES / name).read_text()) if d]
    for doc in docs:
        if doc.get("kind") == "Queue":
            doc["spec"]["namespaces"] = [namespace]  # examples name namespace demo
        for template in _pod_templates(doc):
            template["spec"].setdefault("nodeSelector", {})[w.POOL_LABEL] = pool
            annotations = template.setdefault("metadata", {}).get("annotations") or {}
            if run_seconds and w.COMPLETE_AFTER in annotations:
                annotations[w.COMPLETE_AFTER] = run_seconds
    cluster.apply(yaml.safe_dump_all(docs), namespace=namespace)
    return docs


def phase_of(cluster: Cluster, namespace: str, group: str) -> str:
    obj = cluster.api.get(f"{w.PODGROUPS.format(ns=namespace)}/{group}")
    return str((obj.get("status") or {}).get("phase", ""))


def group_is(cluster: Cluster, namespace: str, group: str, phase: str, **counts: int) -> Json:
    def check(obj: Json) -> bool:
        status: dict[str, Any] = obj.get("status") or {}
        return status.get("phase") == phase and all(status.get(k) == v for k, v in counts.items())

    return wait_for(
        lambda: cluster.api.get(f"{w.PODGROUPS.format(ns=namespace)}/{group}"),
        check,
        describe=f"PodGroup {group} {phase} {counts}",
        timeout=90,
    )


def test_every_example_is_tested() -> None:
    tested = {
        "seed-gang.yaml",
        "job-gang.yaml",
        "annotated-job.yaml",
        "roles-gang.yaml",
        "gpu-gang.yaml",
        "contention-pair.yaml",
        "priority.yaml",
        "teams.yaml",
        "native-gang.yaml",
    }
    assert {p.name for p in EXAMPLES.glob("*.yaml")} == tested


@dataclass(frozen=True)
class ExampleRun:
    """An example applied on some nodes, and the phase and counters its group reaches."""

    file: str
    nodes: int
    group: str
    phase: str
    counts: dict[str, int]
    run_seconds: str | None = None


PLAIN_EXAMPLES = [
    pytest.param(
        ExampleRun("seed-gang.yaml", 3, "seed", "Running", {"running": 6, "scheduled": 6}),
        id="seed-gang",
    ),
    pytest.param(
        ExampleRun("job-gang.yaml", 1, "train-job", "Finished", {"succeeded": 4}, run_seconds="3s"),
        id="job-gang-finishes",
    ),
    pytest.param(
        ExampleRun(
            "annotated-job.yaml",
            1,
            "train-annotated",
            "Finished",
            {"succeeded": 4, "scheduled": 4},
            run_seconds="3s",
        ),
        id="annotated-job",
    ),
    pytest.param(
        ExampleRun("roles-gang.yaml", 1, "mpi", "Running", {"running": 4}), id="roles-gang"
    ),
]


@pytest.mark.parametrize("example", PLAIN_EXAMPLES)
def test_example_reaches_its_phase(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: AddNodes,
    start_scheduler: StartScheduler,
    example: ExampleRun,
) -> None:
    add_nodes(example.nodes, cpu="8")
    start_scheduler()
    apply_example(cluster, namespace, example.file, pool, run_seconds=example.run_seconds)
    group_is(cluster, namespace, example.group, example.phase, **example.counts)


def test_gpu_gang_lands_on_gpu_nodes(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: AddNodes,
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="8")
    gpu_nodes = set(
        add_nodes(2, cpu="16", memory="64Gi", gpus=4, taints=("nvidia.com/gpu=present:NoSchedule",))
    )
    start_scheduler()
    apply_example(cluster, namespace, "gpu-gang.yaml", pool)
    group_is(cluster, namespace, "llm", "Running", running=2)
    placed = {p["spec"]["nodeName"] for p in w.list_pods(cluster.api, namespace, "app=llm")}
    assert placed == gpu_nodes


def test_gpu_gang_says_why_without_gpus(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: AddNodes,
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="16")
    start_scheduler()
    apply_example(cluster, namespace, "gpu-gang.yaml", pool)
    # While the Job creates its pods the group may first wait for members; once all
    # exist, the condition must name the missing resource.
    group = wait_for(
        lambda: cluster.api.get(f"{w.PODGROUPS.format(ns=namespace)}/llm"),
        lambda g: any(
            c["type"] == "Unschedulable"
            and c["status"] == "True"
            and "members exist" not in c.get("message", "")
            for c in (g.get("status") or {}).get("conditions") or []
        ),
        describe="llm Unschedulable with all members",
    )
    (unschedulable,) = [c for c in group["status"]["conditions"] if c["type"] == "Unschedulable"]
    assert "nvidia.com/gpu" in unschedulable["message"]


def test_contention_pair_runs_one_whole_then_the_other(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: AddNodes,
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="8")  # room for 2 pods of 6 cpu: one gang
    start_scheduler()
    apply_example(cluster, namespace, "contention-pair.yaml", pool, run_seconds="5s")

    def one_running_one_pending() -> list[str]:
        return sorted(phase_of(cluster, namespace, g) for g in ("contender-a", "contender-b"))

    seen = wait_for(
        one_running_one_pending,
        lambda phases: phases in (["Pending", "Running"], ["Finished", "Running"]),
        describe="one contender Running, the other not started",
    )
    assert seen == ["Pending", "Running"] or seen == ["Finished", "Running"]
    group_is(cluster, namespace, "contender-a", "Finished", succeeded=2)
    group_is(cluster, namespace, "contender-b", "Finished", succeeded=2)


def test_priority_urgent_first(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: AddNodes,
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="8")  # room for one gang of 2 x 4 cpu
    apply_example(cluster, namespace, "priority.yaml", pool)
    wait_for(
        lambda: w.list_pods(cluster.api, namespace),
        lambda pods: len(pods) == 4,
        describe="4 pods created",
    )
    start_scheduler()
    group_is(cluster, namespace, "urgent", "Running", running=2)
    assert phase_of(cluster, namespace, "batch") == "Pending"


def test_teams_share_through_queues_and_the_capped_one_waits_whole(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: AddNodes,
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(3, cpu="8")
    path = "/apis/scheduling.sigs.k8s.io/v1alpha1/queues"
    try:
        start_scheduler()
        apply_example(cluster, namespace, "teams.yaml", pool, run_seconds="8s")
        group_is(cluster, namespace, "train-a", "Running", running=2)
        # team-b's max holds one of its two gangs at a time (train-b first by priority,
        # unless its pods come after etl-b's are tried): never both, both in the end.
        team_b = ("train-b", "etl-b")
        wait_for(
            lambda: [phase_of(cluster, namespace, g) for g in team_b],
            lambda phases: sorted(phases) == ["Pending", "Running"],
            describe="one of team-b's gangs Running, the other Pending",
        )
        for group in team_b:
            group_is(cluster, namespace, group, "Finished", succeeded=2)
    finally:
        for queue in ("team-a", "team-b"):
            cluster.api.delete(f"{path}/{queue}")


@pytest.mark.version_sensitive
@pytest.mark.kubernetes("1.37", reason="Kubernetes' own PodGroup v1beta1 is served from 1.37")
@pytest.mark.skipif(
    os.environ.get("COSCHEDULER_E2E_GANG_API") == "0",
    reason="the session's cluster was started without the gang API",
)
def test_native_gang_is_placed_whole_and_its_podgroup_says_so(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: AddNodes,
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="8")
    start_scheduler()
    apply_example(cluster, namespace, "native-gang.yaml", pool)
    path = f"{w.NATIVE_PODGROUPS.format(ns=namespace)}/native-train"

    def placed(group: Json) -> bool:
        conditions = (group.get("status") or {}).get("conditions") or []
        return any(
            c["type"] == "PodGroupInitiallyScheduled" and c["status"] == "True" for c in conditions
        )

    wait_for(lambda: cluster.api.get(path), placed, describe="native-train placed")
    pods = w.list_pods(cluster.api, namespace, "job-name=native-train")
    assert len(pods) == 3
    assert all(p["spec"].get("nodeName") for p in pods)
