"""Kubernetes' own PodGroups (scheduling.k8s.io/v1beta1, 1.37) scheduled by coscheduler.

The session's API server serves the gang API (``ClusterOptions(gang_api=True)``:
``GenericWorkload``, ``TopologyAwareWorkloadScheduling``, ``WorkloadWithJob``...),
and ``kubectl get podgroup`` resolves to the native kind there. Pods join with
``spec.schedulingGroup.podGroupName`` and ``schedulerName: coscheduler``; the
verdict is in the native PodGroup's ``PodGroupInitiallyScheduled`` condition
and its events. Objects are created with strict field validation, so a field
the server does not know fails the test. Tests print ``kubectl`` output
(``pytest -s``); the README quotes it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from coscheduler.api.owners import GANG_ANNOTATION
from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests.helpers import bound, pod_names, show
from e2e.waiting import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.version_sensitive,
    pytest.mark.kubernetes("1.37", reason="Kubernetes' own PodGroup v1beta1 is served from 1.37"),
    pytest.mark.skipif(
        os.environ.get("COSCHEDULER_E2E_GANG_API") == "0",
        reason="the session's cluster was started without the gang API",
    ),
]

INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"

# With WorkloadWithJob every Job of the cluster gets a native group, so the session's cluster
# runs without it; these tests need it, and `make test` runs them in a session of their own.
needs_job_workloads = pytest.mark.skipif(
    os.environ.get("COSCHEDULER_E2E_JOB_WORKLOADS") != "1",
    reason="needs WorkloadWithJob on the session's cluster (COSCHEDULER_E2E_JOB_WORKLOADS=1)",
)


def native_group(cluster: Cluster, namespace: str, name: str) -> Json:
    return cluster.api.get(f"{w.NATIVE_PODGROUPS.format(ns=namespace)}/{name}")


def condition(group: Json, kind: str) -> Json:
    found = [c for c in (group.get("status") or {}).get("conditions") or [] if c["type"] == kind]
    return found[0] if found else {}


def wait_condition(
    cluster: Cluster, namespace: str, name: str, kind: str, check: Callable[[Json], bool], what: str
) -> Json:
    group = wait_for(
        lambda: native_group(cluster, namespace, name),
        lambda g: check(condition(g, kind)),
        describe=f"PodGroup {namespace}/{name} (scheduling.k8s.io): {what}",
    )
    return condition(group, kind)


def members(cluster: Cluster, namespace: str, group: str, count: int, **fields: Any) -> list[str]:
    names = [f"{group}-{i}" for i in range(count)]
    for name in names:
        created = w.create_native_member(cluster.api, namespace, name, group=group, **fields)
        assert created["spec"]["schedulingGroup"] == {"podGroupName": group}
    return names


def bound_names(cluster: Cluster, namespace: str, prefix: str = "") -> list[str]:
    return [n for n in pod_names(bound(cluster, namespace)) if n.startswith(prefix)]


def native_events(cluster: Cluster, namespace: str, name: str, reason: str) -> list[Json]:
    return w.events_about(
        cluster.api, namespace, name, api_version=w.NATIVE_API_VERSION, reason=reason
    )


def test_the_fields_read_are_the_api_server_s(cluster: Cluster) -> None:
    """The native shape the adapter reads, from the served OpenAPI schema."""
    schemas = cluster.api.get("/openapi/v3/apis/scheduling.k8s.io/v1beta1")["components"]["schemas"]

    def fields(name: str) -> set[str]:
        return set(schemas["io.k8s.api.scheduling.v1beta1." + name]["properties"])

    assert {
        "workloadRef",
        "schedulingPolicy",
        "schedulingConstraints",
        "resourceClaims",
        "disruptionMode",
        "priorityClassName",
        "priority",
        "preemptionPolicy",
        "parentCompositePodGroupName",
    } <= fields("PodGroupSpec")
    assert fields("WorkloadReference") == {"workloadName", "templateName"}
    assert fields("PodGroupSchedulingPolicy") == {"basic", "gang"}
    assert fields("DisruptionMode") == {"single", "all"}
    assert fields("TopologyConstraint") == {"key"}
    core = cluster.api.get("/openapi/v3/api/v1")["components"]["schemas"]
    assert set(core["io.k8s.api.core.v1.PodSchedulingGroup"]["properties"]) == {"podGroupName"}


def test_a_gang_is_bound_whole_and_its_podgroup_says_so(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="4")
    start_scheduler()
    w.create_native_podgroup(cluster.api, namespace, "train", 4)
    names = members(cluster, namespace, "train", 4, pool=pool, cpu="2")

    wait_for(
        lambda: bound_names(cluster, namespace),
        lambda placed: placed == names,
        describe="the four members bound",
    )
    placed = wait_condition(
        cluster,
        namespace,
        "train",
        INITIALLY_SCHEDULED,
        lambda c: c.get("status") == "True",
        "True",
    )
    assert placed["reason"] == "Scheduled"
    wait_for(
        lambda: native_events(cluster, namespace, "train", "Scheduled"),
        describe="a Scheduled event on the native PodGroup",
    )
    show(cluster, namespace, "get", "podgroups")
    show(cluster, namespace, "describe", "podgroup", "train")


def test_a_gang_without_room_waits_whole_and_describe_podgroup_says_why(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(3, cpu="1")  # room for three members of four
    start_scheduler()
    w.create_native_podgroup(cluster.api, namespace, "train", 4)
    names = members(cluster, namespace, "train", 4, pool=pool, cpu="1")

    waiting = wait_condition(
        cluster,
        namespace,
        "train",
        INITIALLY_SCHEDULED,
        lambda c: c.get("status") == "False" and "Insufficient cpu" in c.get("message", ""),
        "False for room",
    )
    assert waiting["reason"] == "Unschedulable"
    assert waiting["message"].startswith("NotEnoughResources: ")
    assert bound_names(cluster, namespace) == [], "no member placed while the gang cannot fit"
    wait_for(
        lambda: native_events(cluster, namespace, "train", "FailedScheduling"),
        describe="a FailedScheduling event on the native PodGroup",
    )
    described = cluster.kubectl("describe", "podgroup", "train", "-n", namespace).stdout
    assert "scheduling.k8s.io/v1beta1" in described, "kubectl resolves podgroup to the native kind"
    assert INITIALLY_SCHEDULED in described
    assert "Unschedulable" in described
    assert "FailedScheduling" in described
    show(cluster, namespace, "describe", "podgroup", "train")

    add_nodes(1, cpu="1")
    wait_for(
        lambda: bound_names(cluster, namespace),
        lambda placed: placed == names,
        describe="all four bound once a node is added",
    )
    wait_condition(
        cluster,
        namespace,
        "train",
        INITIALLY_SCHEDULED,
        lambda c: c.get("status") == "True",
        "True",
    )


def test_the_topology_constraint_keeps_the_gang_in_one_domain(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    rack = "e2e.coscheduler.dev/rack"
    add_nodes(2, cpu="2", labels={rack: "small"})
    big = add_nodes(3, cpu="2", labels={rack: "big"})
    start_scheduler()
    w.create_native_podgroup(
        cluster.api, namespace, "train", 3, schedulingConstraints={"topology": [{"key": rack}]}
    )
    members(cluster, namespace, "train", 3, pool=pool, cpu="2")
    placed = wait_for(
        lambda: bound(cluster, namespace),
        lambda pods: len(pods) == 3,
        describe="the gang bound",
    )
    assert {pod["spec"]["nodeName"] for pod in placed} == set(big)
    show(cluster, namespace, "get", "pods", "-o", "wide")


def test_disruption_mode_all_is_preempted_as_one_unit(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    low, high = f"{namespace}-low", f"{namespace}-high"
    for name, value in ((low, 1), (high, 100)):
        cluster.api.create(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
    try:
        add_nodes(1, cpu="6")
        start_scheduler()
        # Three members, minCount 2: one above the minimum would make room alone,
        # but disruptionMode all says the group goes whole or not at all.
        w.create_native_podgroup(
            cluster.api, namespace, "victim", 2, disruptionMode={"all": {}}, priorityClassName=low
        )
        victims = members(cluster, namespace, "victim", 3, pool=pool, cpu="2", priority_class=low)
        wait_for(
            lambda: bound_names(cluster, namespace, "victim"),
            lambda placed: placed == victims,
            describe="the victim gang running",
        )
        w.create_native_podgroup(cluster.api, namespace, "urgent", 1, priorityClassName=high)
        members(cluster, namespace, "urgent", 1, pool=pool, cpu="2", priority_class=high)

        wait_for(
            lambda: bound_names(cluster, namespace, "urgent"),
            lambda placed: placed == ["urgent-0"],
            describe="the urgent gang bound",
        )
        # Evicted whole: every member goes (they were bare pods: nobody recreates them).
        wait_for(
            lambda: [
                p["metadata"]["name"]
                for p in w.list_pods(cluster.api, namespace)
                if p["metadata"]["name"].startswith("victim")
            ],
            lambda left: left == [],
            describe="the three victims gone",
        )
        target = wait_condition(
            cluster,
            namespace,
            "victim",
            "DisruptionTarget",
            lambda c: c.get("status") == "True",
            "DisruptionTarget",
        )
        assert target["reason"] == "PreemptionByScheduler"
        assert "3 pods (the whole gang)" in target["message"]
        show(cluster, namespace, "describe", "podgroup", "victim")
    finally:
        for name in (low, high):
            cluster.api.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


@pytest.mark.job_workloads
@needs_job_workloads
def test_a_job_with_a_gang_policy_is_gang_scheduled_without_annotation(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    """WorkloadWithJob: the Job controller makes the Workload and PodGroup itself and sets
    the pods' schedulingGroup; coscheduler places the gang whole."""
    add_nodes(2, cpu="2")
    start_scheduler()
    job = w.create_job(
        cluster.api,
        namespace,
        "train",
        parallelism=4,
        pool=pool,
        cpu="1",
        run_seconds=600,
        scheduling={"schedulingPolicy": {"gang": {}}},
    )
    assert "annotations" not in job["metadata"] or not job["metadata"]["annotations"]
    pods = wait_for(
        lambda: w.list_pods(cluster.api, namespace),
        lambda found: len(found) == 4 and all(p["spec"].get("nodeName") for p in found),
        describe="the Job's four pods bound",
    )
    [group_name] = {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods}
    group = native_group(cluster, namespace, group_name)
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    wait_condition(
        cluster,
        namespace,
        group_name,
        INITIALLY_SCHEDULED,
        lambda c: c.get("status") == "True",
        "True",
    )
    show(cluster, namespace, "get", "workloads,podgroups")


@pytest.mark.job_workloads
@needs_job_workloads
def test_a_job_too_big_for_the_cluster_waits_whole(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="2")
    start_scheduler()
    w.create_job(
        cluster.api,
        namespace,
        "train",
        parallelism=3,
        pool=pool,
        cpu="1",
        run_seconds=600,
        scheduling={"schedulingPolicy": {"gang": {}}},
    )
    pods = wait_for(
        lambda: w.list_pods(cluster.api, namespace),
        lambda found: len(found) == 3,
        describe="the Job's three pods",
    )
    group_name = pods[0]["spec"]["schedulingGroup"]["podGroupName"]
    wait_condition(
        cluster,
        namespace,
        group_name,
        INITIALLY_SCHEDULED,
        lambda c: c.get("status") == "False",
        "False",
    )
    assert bound_names(cluster, namespace) == []


@pytest.mark.job_workloads
@needs_job_workloads
def test_a_job_annotated_for_us_is_our_gang_not_the_basic_group_it_was_given(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    """The Job controller gives the annotated Job a basic native group (its pods one by
    one); our annotation wins: with room for two of three, none is bound, then all."""
    add_nodes(1, cpu="2")
    start_scheduler()
    w.create_job(
        cluster.api,
        namespace,
        "annotated",
        parallelism=3,
        pool=pool,
        cpu="1",
        run_seconds=600,
        annotations={GANG_ANNOTATION: "true"},
    )
    pods = wait_for(
        lambda: w.list_pods(cluster.api, namespace),
        lambda found: len(found) == 3 and all(p["spec"].get("schedulingGroup") for p in found),
        describe="the Job's three pods, in a native group",
    )
    group_name = pods[0]["spec"]["schedulingGroup"]["podGroupName"]
    assert native_group(cluster, namespace, group_name)["spec"]["schedulingPolicy"] == {"basic": {}}
    wait_for(
        lambda: [
            c.get("message", "")
            for p in w.list_pods(cluster.api, namespace)
            for c in p["status"].get("conditions") or []
            if c["type"] == "PodScheduled"
        ],
        lambda messages: len(messages) == 3,
        describe="each pod told why it waits",
    )
    assert bound_names(cluster, namespace) == []
    add_nodes(1, cpu="2")
    wait_for(
        lambda: bound_names(cluster, namespace),
        lambda placed: len(placed) == 3,
        describe="the gang bound whole once there is room",
    )


def test_bad_input_waits_with_a_reason_and_never_stops_the_loop(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="4")
    scheduler = start_scheduler()
    # A pod naming a native PodGroup that does not exist.
    w.create_native_member(cluster.api, namespace, "lost-0", group="nowhere", pool=pool, cpu="1")
    # Members of one group under two schedulers.
    w.create_native_podgroup(cluster.api, namespace, "mixed", 2)
    w.create_native_member(cluster.api, namespace, "mixed-0", group="mixed", pool=pool, cpu="1")
    w.create_native_member(
        cluster.api,
        namespace,
        "mixed-1",
        group="mixed",
        pool=pool,
        cpu="1",
        scheduler="someone-else",
    )
    # A minCount no member count reaches.
    w.create_native_podgroup(cluster.api, namespace, "huge", 5)
    members(cluster, namespace, "huge", 2, pool=pool, cpu="1")

    def reason(name: str) -> str:
        pod = cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        found = [c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"]
        return f"{found[0].get('reason')}: {found[0].get('message')}" if found else ""

    lost = wait_for(
        lambda: reason("lost-0"),
        lambda r: r.startswith("GroupNotFound"),
        describe="lost-0 waits for its group",
    )
    assert f"PodGroup {namespace}/nowhere (scheduling.k8s.io)" in lost
    wait_condition(
        cluster,
        namespace,
        "mixed",
        INITIALLY_SCHEDULED,
        lambda c: "SchedulerConflict" in c.get("message", ""),
        "SchedulerConflict",
    )
    wait_condition(
        cluster,
        namespace,
        "huge",
        INITIALLY_SCHEDULED,
        lambda c: "NotEnoughMembers" in c.get("message", ""),
        "NotEnoughMembers",
    )
    # The loop goes on: a good gang still binds whole.
    w.create_native_podgroup(cluster.api, namespace, "good", 2)
    good = members(cluster, namespace, "good", 2, pool=pool, cpu="1")
    wait_for(
        lambda: bound_names(cluster, namespace, "good"),
        lambda placed: placed == good,
        describe="a good gang bound",
    )
    assert "Traceback" not in scheduler.log()
    show(cluster, namespace, "get", "pods")


@pytest.mark.job_workloads
@needs_job_workloads
def test_a_plain_job_gets_a_basic_group_its_pods_placed_one_by_one(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    """Without spec.scheduling the Job controller makes a basic PodGroup: no gang, each pod
    placed as room allows (two of three here), and the group says it was placed."""
    add_nodes(1, cpu="2")
    start_scheduler()
    w.create_job(
        cluster.api, namespace, "plain", parallelism=3, pool=pool, cpu="1", run_seconds=600
    )
    pods = wait_for(
        lambda: w.list_pods(cluster.api, namespace),
        lambda found: len(found) == 3 and sum(bool(p["spec"].get("nodeName")) for p in found) == 2,
        describe="two of the Job's three pods bound",
    )
    group_name = pods[0]["spec"]["schedulingGroup"]["podGroupName"]
    assert native_group(cluster, namespace, group_name)["spec"]["schedulingPolicy"] == {"basic": {}}
    wait_condition(
        cluster,
        namespace,
        group_name,
        INITIALLY_SCHEDULED,
        lambda c: c.get("status") == "True",
        "True",
    )


def test_a_podgroup_without_a_queue_label_draws_from_its_workload_s_queue(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    """The Workload's ``scheduling.sigs.k8s.io/queue`` label is the queue of a PodGroup
    that names it and has none: a queue capped below the gang holds it whole."""
    queue = f"capped-{namespace}"[:63]
    w.create_queue(cluster.api, queue, max={"cpu": "1"}, namespaces=[namespace])
    try:
        add_nodes(2, cpu="2")
        start_scheduler()
        cluster.api.create(
            f"/apis/{w.NATIVE_API_VERSION}/namespaces/{namespace}/workloads?fieldValidation=Strict",
            {
                "apiVersion": w.NATIVE_API_VERSION,
                "kind": "Workload",
                "metadata": {"name": "train", "labels": {"scheduling.sigs.k8s.io/queue": queue}},
                "spec": {
                    "podGroupTemplates": [
                        {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}
                    ]
                },
            },
        )
        w.create_native_podgroup(
            cluster.api,
            namespace,
            "train",
            2,
            workloadRef={"workloadName": "train", "templateName": "workers"},
        )
        members(cluster, namespace, "train", 2, pool=pool, cpu="1")
        waiting = wait_condition(
            cluster,
            namespace,
            "train",
            INITIALLY_SCHEDULED,
            lambda c: c.get("status") == "False" and "QueueMaxReached" in c.get("message", ""),
            f"False, held by queue {queue}",
        )
        assert queue in waiting["message"]
        assert bound_names(cluster, namespace) == []
    finally:
        cluster.api.delete(f"/apis/scheduling.sigs.k8s.io/v1alpha1/queues/{queue}")
