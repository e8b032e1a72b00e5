"""PodGroups of scheduling.x-k8s.io, as Kubeflow's and Spark's operators make them.

The CRD is installed before coscheduler starts (it asks discovery once, at
start). Groups are placed whole or not at all, exactly as ours, and their
status is written in their own schema: upstream's phases and counters, no
conditions. Each test prints ``kubectl get`` of its groups (``pytest -s``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests import helpers as h
from e2e.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.version_sensitive, pytest.mark.usefixtures("xk8s_crd")]

UPSTREAM_PHASES = {"Pending", "Scheduling", "Running", "Finished", "Failed", "Unknown"}
UPSTREAM_STATUS_FIELDS = {
    "phase",
    "running",
    "succeeded",
    "failed",
    "scheduleStartTime",
    "occupiedBy",
}


def their_group(cluster: Cluster, namespace: str, name: str) -> Json:
    return h.podgroup(cluster, namespace, name, xk8s=True)


def wait_status(
    cluster: Cluster, namespace: str, name: str, check: Callable[[Json], bool], what: str
) -> Json:
    status: Json = h.wait_their_group(cluster, namespace, name, check, what)["status"]
    assert set(status) <= UPSTREAM_STATUS_FIELDS, "only their schema's fields are kept"
    assert status["phase"] in UPSTREAM_PHASES
    return status


def show_groups(cluster: Cluster, namespace: str, describe: str | None = None) -> None:
    """What a person sees: ``kubectl get``, or ``describe`` of one group; the README quotes it."""
    kind = "podgroups.scheduling.x-k8s.io"
    h.show(cluster, namespace, *(["describe", kind, describe] if describe else ["get", kind]))


def test_a_gang_is_placed_whole_and_its_status_written_in_their_schema(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="4")
    start_scheduler()
    w.create_xk8s_podgroup(cluster.api, namespace, "train", 4, scheduleTimeoutSeconds=60)
    w.create_job(
        cluster.api,
        namespace,
        "train",
        parallelism=4,
        pool=pool,
        cpu="2",
        group="train",
        group_label=w.XK8S_GROUP_LABEL,
        run_seconds=6,
    )

    status = wait_status(
        cluster,
        namespace,
        "train",
        lambda s: s.get("phase") == "Running" and s.get("running") == 4,
        "Running, 4 running",
    )
    assert len(h.bound(cluster, namespace)) == 4
    assert status["occupiedBy"] == f"{namespace}/train"
    assert status["scheduleStartTime"]
    show_groups(cluster, namespace)

    status = wait_status(
        cluster,
        namespace,
        "train",
        lambda s: s.get("phase") == "Finished",
        "Finished once the Job's pods succeed",
    )
    assert (status.get("succeeded"), status.get("running", 0)) == (4, 0)
    show_groups(cluster, namespace)


def test_a_gang_that_cannot_fit_waits_whole_and_says_so(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="4")  # room for two 3-cpu members, one per node
    start_scheduler()
    w.create_xk8s_podgroup(cluster.api, namespace, "big", 3)
    w.create_replicaset(
        cluster.api,
        namespace,
        "big",
        replicas=3,
        pool=pool,
        cpu="3",
        group="big",
        group_label=w.XK8S_GROUP_LABEL,
    )

    status = wait_status(
        cluster,
        namespace,
        "big",
        lambda s: s.get("phase") == "Pending" and bool(s.get("scheduleStartTime")),
        "Pending since its first attempt",
    )
    assert status.get("running", 0) == 0
    assert status["occupiedBy"] == f"{namespace}/big"
    # Why, where their schema has no place for it: a Warning event on the group.
    # (The ReplicaSet's pods arrive one by one, so an earlier event may say that
    # members are missing: wait for the one about room.)
    warning, *_ = wait_for(
        lambda: w.events_about(
            cluster.api,
            namespace,
            "big",
            api_version=w.XK8S_API_VERSION,
            reason="FailedScheduling",
            containing="for 3 pods of group",
        ),
        describe="a FailedScheduling event on the x-k8s.io PodGroup about room",
    )
    assert "Insufficient cpu" in warning["message"]
    assert h.bound(cluster, namespace) == [], "no member placed while the gang cannot fit"
    show_groups(cluster, namespace)
    show_groups(cluster, namespace, describe="big")

    add_nodes(1, cpu="4")  # now each member has a node
    wait_status(
        cluster,
        namespace,
        "big",
        lambda s: s.get("phase") == "Running" and s.get("running") == 3,
        "Running once there is room",
    )
    assert len(h.bound(cluster, namespace)) == 3


def test_ours_wins_a_name_held_in_both_apis(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="8")
    w.create_xk8s_podgroup(cluster.api, namespace, "both", 5)  # would never fill
    w.create_podgroup(cluster.api, namespace, "both", 2)
    start_scheduler()
    w.create_replicaset(
        cluster.api,
        namespace,
        "both",
        replicas=2,
        pool=pool,
        cpu="1",
        group="both",
        group_label=w.XK8S_GROUP_LABEL,
    )

    wait_for(
        lambda: cluster.api.get(f"{w.PODGROUPS.format(ns=namespace)}/both"),
        lambda g: (g.get("status") or {}).get("phase") == "Running",
        describe="our PodGroup Running with minMember 2",
    )
    assert len(h.bound(cluster, namespace)) == 2
    assert "status" not in their_group(cluster, namespace, "both"), "the shadowed one untouched"
