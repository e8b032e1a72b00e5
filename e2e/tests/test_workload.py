"""Kubernetes 1.35's own gangs: Workload (scheduling.k8s.io/v1alpha1) and spec.workloadRef.

The session's API server serves the API (``GenericWorkload`` gate, alpha
runtime-config); coscheduler finds it by discovery at start. Every object is
created with strict field validation, so a field name the server does not
know fails the test instead of being dropped. A Workload has no status in
1.35: the verdict is in events on the Workload and the pods' PodScheduled
condition. Tests print ``kubectl`` output (``pytest -s``); the README quotes it.
They run on 1.35 only (``@pytest.mark.kubernetes``): 1.36 replaced this API.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e import build, versions
from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.processes import Process, free_port
from e2e.scheduler import StartScheduler
from e2e.tests.helpers import bound as bound_pods
from e2e.tests.helpers import pod_names, pod_scheduled, show
from e2e.waiting import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.version_sensitive,
    pytest.mark.kubernetes(
        "1.35", reason="the v1alpha1 Workload and spec.workloadRef are gone since 1.36"
    ),
    pytest.mark.skipif(
        os.environ.get("COSCHEDULER_E2E_GANG_API") == "0",
        reason="the session's cluster was started without the Workload API",
    ),
]


def gang(min_count: int) -> Json:
    return {"gang": {"minCount": min_count}}


BASIC: Json = {"basic": {}}


def bound_names(cluster: Cluster, namespace: str) -> list[str]:
    return pod_names(bound_pods(cluster, namespace))


def create_members(
    cluster: Cluster, namespace: str, prefix: str, count: int, **fields: Any
) -> list[str]:
    names = [f"{prefix}-{i}" for i in range(count)]
    for name in names:
        created = w.create_workload_pod(cluster.api, namespace, name, **fields)
        assert created["spec"].get("workloadRef"), "the API server kept spec.workloadRef"
    return names


def events_on(cluster: Cluster, namespace: str, name: str, kind: str) -> list[Json]:
    path = f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name={name}"
    return [e for e in cluster.api.get(path)["items"] if e["involvedObject"]["kind"] == kind]


def scheduled_events(cluster: Cluster, namespace: str, pod: str) -> list[Json]:
    return [e for e in events_on(cluster, namespace, pod, "Pod") if e["reason"] == "Scheduled"]


def wait_workload_event(
    cluster: Cluster, namespace: str, name: str, check: Callable[[Json], bool], what: str
) -> Json:
    event, *_ = wait_for(
        lambda: [e for e in events_on(cluster, namespace, name, "Workload") if check(e)],
        describe=f"an event on Workload {namespace}/{name}: {what}",
    )
    assert event["involvedObject"]["apiVersion"] == w.WORKLOAD_API_VERSION
    return event


def test_the_shape_read_is_the_api_server_s(cluster: Cluster) -> None:
    """The fields the adapter reads, from the served OpenAPI schema; and no status to write."""
    schemas = cluster.api.get("/openapi/v3/apis/scheduling.k8s.io/v1alpha1")["components"][
        "schemas"
    ]
    prefix = "io.k8s.api.scheduling.v1alpha1."

    def fields(name: str) -> set[str]:
        return set(schemas[prefix + name]["properties"])

    assert fields("Workload") == {"apiVersion", "kind", "metadata", "spec"}, "no status in 1.35"
    assert fields("WorkloadSpec") == {"controllerRef", "podGroups"}
    assert fields("PodGroup") == {"name", "policy"}
    assert fields("PodGroupPolicy") == {"basic", "gang"}
    assert fields("GangSchedulingPolicy") == {"minCount"}
    core = cluster.api.get("/openapi/v3/api/v1")["components"]["schemas"]
    assert "workloadRef" in core["io.k8s.api.core.v1.PodSpec"]["properties"]
    assert set(core["io.k8s.api.core.v1.WorkloadReference"]["properties"]) == {
        "name",
        "podGroup",
        "podGroupReplicaKey",
    }


def test_a_gang_of_four_is_placed_whole(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="4")
    start_scheduler()
    w.create_workload(cluster.api, namespace, "train", {"workers": gang(4)})
    names = create_members(
        cluster, namespace, "worker", 4, workload="train", pod_group="workers", pool=pool, cpu="2"
    )

    wait_for(
        lambda: bound_names(cluster, namespace),
        lambda placed: placed == names,
        describe="the four members bound",
    )
    wait_workload_event(
        cluster,
        namespace,
        "train",
        lambda e: e["message"].startswith("podGroup workers: phase Pending -> "),
        "the gang's phase moved",
    )
    show(cluster, namespace, "get", "pods", "-o", "wide")


def test_a_gang_without_room_waits_whole_and_says_so_then_runs(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(3, cpu="1")  # room for three members of four
    start_scheduler()
    w.create_workload(cluster.api, namespace, "train", {"workers": gang(4)})
    names = create_members(
        cluster, namespace, "worker", 4, workload="train", pod_group="workers", pool=pool, cpu="1"
    )

    warning = wait_workload_event(
        cluster,
        namespace,
        "train",
        lambda e: (
            e["reason"] == "FailedScheduling"
            and "4 pods of Workload" in e["message"]
            and "Insufficient cpu" in e["message"]
        ),
        "FailedScheduling about room",
    )
    assert warning["type"] == "Warning"
    assert f"4 pods of Workload {namespace}/train podGroup workers: " in warning["message"]
    for name in names:
        pod = wait_for(
            partial(cluster.api.get, f"/api/v1/namespaces/{namespace}/pods/{name}"),
            lambda p: (
                pod_scheduled(p).get("status") == "False"
                and pod_scheduled(p).get("reason") == "Unschedulable"
            ),
            describe=f"pod {name}: PodScheduled=False, Unschedulable",
        )
        assert "Workload " + namespace + "/train podGroup workers" in pod_scheduled(pod)["message"]
    assert bound_names(cluster, namespace) == [], "no member placed while the gang cannot fit"
    show(cluster, namespace, "get", "pods")
    show(cluster, namespace, "describe", "workload", "train")
    show(cluster, namespace, "get", "pod", names[0], "-o", "jsonpath={.status.conditions}")

    add_nodes(1, cpu="1")
    wait_for(
        lambda: bound_names(cluster, namespace),
        lambda placed: placed == names,
        describe="all four bound once a node is added",
    )
    wait_workload_event(
        cluster,
        namespace,
        "train",
        lambda e: (
            e["message"].startswith("podGroup workers: phase ") and "-> Running" in e["message"]
        ),
        "the gang Running",
    )
    show(cluster, namespace, "get", "pods", "-o", "wide")
    show(cluster, namespace, "describe", "workload", "train")


def test_each_replica_key_is_a_gang_of_its_own(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(6, cpu="1")  # room for 6 of the 8 pods: one whole gang of 4, not two
    start_scheduler()
    w.create_workload(cluster.api, namespace, "train", {"workers": gang(4)})
    for replica in ("a", "b"):
        create_members(
            cluster,
            namespace,
            f"worker-{replica}",
            4,
            workload="train",
            pod_group="workers",
            replica_key=replica,
            pool=pool,
            cpu="1",
        )

    placed = wait_for(
        lambda: bound_names(cluster, namespace),
        lambda names: len(names) == 4,
        describe="one replica's gang bound",
    )
    winner = placed[0].split("-")[1]
    assert placed == [f"worker-{winner}-{i}" for i in range(4)], "one replica whole"
    loser = "b" if winner == "a" else "a"
    wait_workload_event(
        cluster,
        namespace,
        "train",
        lambda e: (
            e["reason"] == "FailedScheduling"
            and f"of Workload {namespace}/train podGroup workers replica {loser}: " in e["message"]
        ),
        f"replica {loser} cannot fit whole",
    )
    # Two free slots are not four: the other replica's members stay unbound.
    assert len(bound_names(cluster, namespace)) == 4
    show(cluster, namespace, "get", "pods", "-o", "wide")


def test_basic_policy_pods_are_placed_alone(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="1")  # room for two of three
    start_scheduler()
    w.create_workload(cluster.api, namespace, "web", {"servers": BASIC})
    names = create_members(
        cluster, namespace, "server", 3, workload="web", pod_group="servers", pool=pool, cpu="1"
    )

    placed = wait_for(
        lambda: bound_names(cluster, namespace),
        lambda done: len(done) == 2,
        describe="two of three placed, each on its own",
    )
    [left] = sorted(set(names) - set(placed))
    pod = wait_for(
        lambda: cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/{left}"),
        lambda p: pod_scheduled(p).get("reason") == "Unschedulable",
        describe=f"pod {left} waits alone, Unschedulable",
    )
    assert f"pod {namespace}/{left}" in pod_scheduled(pod)["message"]
    assert events_on(cluster, namespace, "web", "Workload") == [], "no gang, nothing to tell"


def test_a_pod_naming_a_workload_not_yet_created_waits_for_it(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="4")
    start_scheduler()
    names = create_members(
        cluster, namespace, "early", 2, workload="later", pod_group="workers", pool=pool, cpu="1"
    )
    pod = wait_for(
        lambda: cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/{names[0]}"),
        lambda p: pod_scheduled(p).get("reason") == "GroupNotFound",
        describe="PodScheduled=False, GroupNotFound",
    )
    message = pod_scheduled(pod)["message"]
    assert f"Workload {namespace}/later podGroup workers is not known" in message
    show(cluster, namespace, "get", "pod", names[0], "-o", "jsonpath={.status.conditions}")

    w.create_workload(cluster.api, namespace, "later", {"workers": gang(2)})
    wait_for(
        lambda: bound_names(cluster, namespace),
        lambda placed: placed == names,
        describe="both bound once the Workload exists",
    )


@pytest.fixture
def kube_scheduler(cluster: Cluster, tmp_path: Path) -> Iterator[Process]:
    """kube-scheduler 1.35 with its own gang plugin on, as the default scheduler."""
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": str(cluster.kubeconfig)},
        "profiles": [{"schedulerName": "default-scheduler"}],
    }
    path = tmp_path / "kube-scheduler.yaml"
    path.write_text(yaml.safe_dump(config))
    process = Process.start(
        "kube-scheduler",
        [
            str(build.binaries().kube_scheduler),
            f"--config={path}",
            f"--feature-gates={versions.native_gang_feature_gates()}",
            f"--secure-port={free_port()}",
            "--bind-address=127.0.0.1",
            f"--cert-dir={tmp_path / 'serving'}",
            "--v=1",
        ],
        log=tmp_path / "kube-scheduler.log",
        die_with_parent=True,
    )
    try:
        yield process
    finally:
        process.stop()


def test_kube_scheduler_s_gang_plugin_leaves_our_pods_to_us(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    kube_scheduler: Process,
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="8")
    w.create_workload(cluster.api, namespace, "mixed", {"ours": gang(2), "theirs": gang(2)})
    ours = create_members(
        cluster, namespace, "ours", 2, workload="mixed", pod_group="ours", pool=pool, cpu="1"
    )
    theirs = create_members(
        cluster,
        namespace,
        "theirs",
        2,
        workload="mixed",
        pod_group="theirs",
        pool=pool,
        cpu="1",
        scheduler="default-scheduler",
    )

    # kube-scheduler is running and its gang plugin placed the gang meant for it,
    # created after ours: it saw ours and left them.
    wait_for(
        lambda: bound_names(cluster, namespace),
        lambda placed: placed == theirs,
        describe="kube-scheduler placed its own gang",
    )
    for name in ours:
        assert events_on(cluster, namespace, name, "Pod") == [], "kube-scheduler said nothing"

    start_scheduler()
    wait_for(
        lambda: bound_names(cluster, namespace),
        lambda placed: placed == sorted(ours + theirs),
        describe="coscheduler placed ours",
    )
    for name in ours:
        scheduled = wait_for(
            partial(scheduled_events, cluster, namespace, name),
            describe=f"the Scheduled event of {name}",
        )
        assert {e["reportingComponent"] for e in scheduled} == {"coscheduler"}
    # Our events on the Workload speak of our gang only.
    said = wait_workload_event(
        cluster, namespace, "mixed", lambda e: "podGroup ours" in e["message"], "our gang"
    )
    assert said["reportingComponent"] == "coscheduler"
    assert not [
        e
        for e in events_on(cluster, namespace, "mixed", "Workload")
        if e.get("reportingComponent") == "coscheduler" and "podGroup theirs" in e["message"]
    ]
    assert kube_scheduler.is_running()
