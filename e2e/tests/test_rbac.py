"""The manifests' RBAC is enough for coscheduler, and no more than it needs.

coscheduler runs here with the ServiceAccount's own token (from the
TokenRequest API), not as cluster admin: if a verb it uses were missing from
the ClusterRole or Role, this test would see the gang stay unbound, the status
unwritten or the Lease not taken.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from e2e import versions
from e2e import workloads as w
from e2e.api import write_token_kubeconfig
from e2e.controlplane import Cluster
from e2e.scheduler import SchedulerProcess
from e2e.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.version_sensitive]

WORKLOAD_V1ALPHA1 = "v1alpha1" in versions.native_gang_api_versions()
"""1.35's Workload and spec.workloadRef are served (gone since 1.36)."""

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"
SYSTEM = "coscheduler-system"


@pytest.fixture
def service_account_kubeconfig(
    cluster: Cluster, podgroup_crd: str, xk8s_crd: str, tmp_path: Path
) -> Path:
    """The ServiceAccount's own token; both PodGroup APIs and (on 1.35) Kubernetes' Workload
    API are served, so each is exercised."""
    cluster.apply(MANIFESTS / "namespace.yaml")
    cluster.apply(MANIFESTS / "rbac.yaml")
    token = cluster.api.create(
        f"/api/v1/namespaces/{SYSTEM}/serviceaccounts/coscheduler/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )["status"]["token"]
    return write_token_kubeconfig(
        tmp_path / "coscheduler.kubeconfig",
        server=cluster.server,
        ca_cert=cluster.api.pki.ca_cert,
        token=token,
    )


def test_manifests_pass_server_side_dry_run(cluster: Cluster, podgroup_crd: str) -> None:
    cluster.apply(MANIFESTS / "namespace.yaml")
    for name in ("rbac.yaml", "deployment.yaml"):
        out = cluster.kubectl("apply", "--dry-run=server", "-f", str(MANIFESTS / name)).stdout
        assert "(server dry run)" in out


def test_coscheduler_works_with_exactly_its_service_account(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    service_account_kubeconfig: Path,
    tmp_path: Path,
) -> None:
    add_nodes(1, cpu="8")
    process = SchedulerProcess(
        kubeconfig=service_account_kubeconfig,
        log_path=tmp_path / "coscheduler.log",
        args=[
            "--namespace",
            namespace,
            "--lease-namespace",
            SYSTEM,
            "--identity",
            "rbac-test",
            "--metrics-port",
            "0",
        ],
    )
    queue = f"{namespace}-rbac"
    queues = w.QUEUES
    try:
        w.create_queue(cluster.api, queue, namespaces=[namespace], max={"cpu": "4"})
        process.start()
        w.create_podgroup(cluster.api, namespace, "rbac", 2, queue=queue)
        w.create_replicaset(
            cluster.api, namespace, "rbac", replicas=2, pool=pool, cpu="1", group="rbac"
        )
        w.create_xk8s_podgroup(cluster.api, namespace, "rbac-x", 2)
        w.create_replicaset(
            cluster.api,
            namespace,
            "rbac-x",
            replicas=2,
            pool=pool,
            cpu="1",
            group="rbac-x",
            group_label=w.XK8S_GROUP_LABEL,
        )
        # A Job annotated for a gang: its Jobs are read, its PodGroup made.
        w.create_job(
            cluster.api,
            namespace,
            "rbac-job",
            parallelism=2,
            pool=pool,
            cpu="1",
            run_seconds=600,
            annotations={"scheduling.sigs.k8s.io/gang": "true"},
        )
        gangs = 3
        if WORKLOAD_V1ALPHA1:
            gangs += 1
            w.create_workload(
                cluster.api, namespace, "rbac-w", {"workers": {"gang": {"minCount": 2}}}
            )
            for index in range(2):
                w.create_workload_pod(
                    cluster.api,
                    namespace,
                    f"rbac-w-{index}",
                    workload="rbac-w",
                    pod_group="workers",
                    pool=pool,
                    cpu="1",
                )
        wait_for(
            lambda: w.list_pods(cluster.api, namespace),
            lambda pods: sum(1 for p in pods if p["spec"].get("nodeName")) == 2 * gangs,
            describe=f"the {gangs} gangs bound under the ServiceAccount",
        )
        paths = (f"{w.PODGROUPS}/rbac", f"{w.XK8S_PODGROUPS}/rbac-x", f"{w.PODGROUPS}/rbac-job")
        for path in paths:
            group_path = path.format(ns=namespace)
            wait_for(
                partial(cluster.api.get, group_path),
                lambda g: (g.get("status") or {}).get("phase") == "Running",
                describe=f"status of {group_path} written under the ServiceAccount",
            )
        wait_for(
            partial(cluster.api.get, f"{queues}/{queue}"),
            lambda q: (q.get("status") or {}).get("allocated", {}).get("cpu") == "2",
            describe=f"status of queue {queue} written under the ServiceAccount",
        )
        events = cluster.api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
        assert any(e["reason"] == "Scheduled" for e in events)
        if WORKLOAD_V1ALPHA1:
            wait_for(
                lambda: cluster.api.get(f"/api/v1/namespaces/{namespace}/events")["items"],
                lambda items: any(e["involvedObject"]["kind"] == "Workload" for e in items),
                describe="an event on the Workload under the ServiceAccount",
            )
        queue_events = (
            f"/api/v1/namespaces/default/events?fieldSelector=involvedObject.name={queue}"
        )
        wait_for(
            lambda: cluster.api.get(queue_events)["items"],
            lambda items: any(e["reason"] == "QueueOpen" for e in items),
            describe=f"an event on the cluster-scoped queue {queue}",
        )
        # Preemption under the ServiceAccount: budgets read, victims evicted, nomination
        # written. 6 cpu in the default queue: rbac-x, rbac-job (and rbac-w on 1.35; 2 cpu
        # each, same queue) must make room; rbac is in another queue, so priority does not
        # reach it.
        w.create_podgroup(cluster.api, namespace, "rbac-urgent", 1, priority=100)
        w.create_replicaset(
            cluster.api,
            namespace,
            "rbac-urgent",
            replicas=1,
            pool=pool,
            cpu="6",
            group="rbac-urgent",
        )
        wait_for(
            lambda: w.list_pods(cluster.api, namespace, "app=rbac-urgent"),
            lambda pods: len(pods) == 1 and bool(pods[0]["spec"].get("nodeName")),
            describe="the urgent gang bound after evictions under the ServiceAccount",
        )
        events = cluster.api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
        assert any(e["reason"] == "Preempted" for e in events)
        other_queue = w.list_pods(cluster.api, namespace, "app=rbac")
        assert sum(1 for p in other_queue if p["spec"].get("nodeName")) == 2
        lease = cluster.api.get(
            f"/apis/coordination.k8s.io/v1/namespaces/{SYSTEM}/leases/coscheduler"
        )
        assert lease["spec"]["holderIdentity"] == "rbac-test"
        log = process.log()
        assert " 403 " not in log, log[-3000:]
        assert "Forbidden" not in log, log[-3000:]
    except BaseException:
        print(f"--- coscheduler log ---\n{process.log()[-6000:]}")
        raise
    finally:
        process.stop()
        cluster.api.delete(f"{queues}/{queue}")

    # And not more than needed: a verb it never uses stays denied.
    denied = cluster.kubectl(
        f"--kubeconfig={service_account_kubeconfig}",
        "delete",
        "pods",
        "--all",
        "-n",
        namespace,
        check=False,
    )
    assert denied.returncode != 0
    assert "forbidden" in denied.stderr.lower()
    secrets = cluster.kubectl(
        f"--kubeconfig={service_account_kubeconfig}", "get", "secrets", "-A", check=False
    )
    assert "forbidden" in secrets.stderr.lower()
