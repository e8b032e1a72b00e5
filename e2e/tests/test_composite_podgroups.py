"""CompositePodGroup (scheduling.k8s.io/v1alpha3, Kubernetes 1.37): several gangs placed together.

A JobSet-like job: a leader PodGroup and a workers PodGroup, each a gang of
its own, children of one CompositePodGroup whose ``gang`` policy asks for
both at once. coscheduler places every child whole in the same decision, or
none of them; the composite's ``CompositePodGroupInitiallyScheduled`` and
each child's ``PodGroupInitiallyScheduled`` condition say where it stands.

The session's API server serves ``v1beta1`` and ``v1alpha3`` with the
``CompositePodGroup`` gate (``ClusterOptions(gang_api=True)``, the default);
on a release that does not serve ``compositepodgroups`` the tests are skipped.
Every object is created with strict field validation, so a field name the
server does not know fails the test instead of being dropped.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial

import pytest

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests.helpers import bound, condition, pod_names, pod_scheduled, show
from e2e.waiting import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.version_sensitive,
    pytest.mark.kubernetes("1.37", reason="CompositePodGroup (v1alpha3) is served from 1.37"),
    pytest.mark.skipif(
        os.environ.get("COSCHEDULER_E2E_GANG_API") == "0",
        reason="the session's cluster was started without the native gang API",
    ),
]

COMPOSITES = "/apis/scheduling.k8s.io/v1alpha3/namespaces/{ns}/compositepodgroups"
PODGROUPS = w.NATIVE_PODGROUPS
STRICT = "?fieldValidation=Strict"


@pytest.fixture(autouse=True)
def _served(cluster: Cluster) -> None:
    if cluster.api.get_or_none("/apis/scheduling.k8s.io/v1alpha3") is None:
        pytest.skip("this release does not serve scheduling.k8s.io/v1alpha3")


def create_composite(
    cluster: Cluster, namespace: str, name: str, min_group_count: int, **spec: object
) -> Json:
    body = {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": name},
        "spec": {
            "workloadRef": {"workloadName": name, "templateName": name},
            "schedulingPolicy": {"gang": {"minGroupCount": min_group_count}},
            **spec,
        },
    }
    return cluster.api.create(COMPOSITES.format(ns=namespace) + STRICT, body)


def create_child(cluster: Cluster, namespace: str, name: str, min_count: int, parent: str) -> Json:
    """A native PodGroup naming ``parent`` (the API server wants its workloadRef with it)."""
    return w.create_native_podgroup(
        cluster.api,
        namespace,
        name,
        min_count,
        parentCompositePodGroupName=parent,
        workloadRef={"workloadName": parent, "templateName": name},
    )


def create_members(
    cluster: Cluster, namespace: str, group: str, count: int, *, pool: str, cpu: str
) -> list[str]:
    names = [f"{group}-{i}" for i in range(count)]
    for name in names:
        created = w.create_native_member(
            cluster.api, namespace, name, group=group, pool=pool, cpu=cpu
        )
        assert created["spec"]["schedulingGroup"] == {"podGroupName": group}
    return names


def bound_names(cluster: Cluster, namespace: str) -> list[str]:
    return pod_names(bound(cluster, namespace))


def wait_condition(
    cluster: Cluster, path: str, kind: str, check: Callable[[Json], bool], what: str
) -> Json:
    item = wait_for(
        partial(cluster.api.get, path),
        lambda got: check(condition(got, kind)),
        describe=what,
    )
    return condition(item, kind)


def composite_path(namespace: str, name: str) -> str:
    return f"{COMPOSITES.format(ns=namespace)}/{name}"


def child_path(namespace: str, name: str) -> str:
    return f"{PODGROUPS.format(ns=namespace)}/{name}"


def wait_pod_reason(cluster: Cluster, namespace: str, name: str, reason: str) -> Json:
    pod = wait_for(
        partial(cluster.api.get, f"/api/v1/namespaces/{namespace}/pods/{name}"),
        lambda p: pod_scheduled(p).get("reason") == reason,
        describe=f"pod {name}: PodScheduled=False, {reason}",
    )
    return pod_scheduled(pod)


def test_leader_and_workers_are_placed_together(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="4")
    start_scheduler()
    create_composite(cluster, namespace, "job", 2, disruptionMode={"all": {}})
    create_child(cluster, namespace, "leader", 1, "job")
    create_child(cluster, namespace, "workers", 3, "job")
    leader = create_members(cluster, namespace, "leader", 1, pool=pool, cpu="1")
    # The leader's own gang is complete, but the composite is not: it waits.
    said = wait_pod_reason(cluster, namespace, leader[0], "NotEnoughMembers")
    assert "CompositePodGroup" in said["message"] or "job" in said["message"]
    assert bound_names(cluster, namespace) == [], "the leader waits for its workers"

    workers = create_members(cluster, namespace, "workers", 3, pool=pool, cpu="2")
    wait_for(
        lambda: bound_names(cluster, namespace),
        lambda placed: placed == sorted(leader + workers),
        describe="the leader and the three workers bound",
    )
    placed = wait_condition(
        cluster,
        composite_path(namespace, "job"),
        "CompositePodGroupInitiallyScheduled",
        lambda c: c.get("status") == "True",
        "the composite's CompositePodGroupInitiallyScheduled=True",
    )
    assert placed["reason"] == "Scheduled"
    for child in ("leader", "workers"):
        wait_condition(
            cluster,
            child_path(namespace, child),
            "PodGroupInitiallyScheduled",
            lambda c: c.get("status") == "True",
            f"PodGroup {child}: PodGroupInitiallyScheduled=True",
        )
    show(cluster, namespace, "get", "pods", "-o", "wide")
    show(cluster, namespace, "describe", "compositepodgroup", "job")


def test_a_composite_that_cannot_fit_waits_whole(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="4")  # the leader and two workers would fit; the whole composite does not
    start_scheduler()
    create_composite(cluster, namespace, "job", 2)
    create_child(cluster, namespace, "leader", 1, "job")
    create_child(cluster, namespace, "workers", 3, "job")
    names = create_members(cluster, namespace, "leader", 1, pool=pool, cpu="1")
    names += create_members(cluster, namespace, "workers", 3, pool=pool, cpu="1500m")

    failing = wait_condition(
        cluster,
        composite_path(namespace, "job"),
        "CompositePodGroupInitiallyScheduled",
        # While its pods are created it waits for members first: then for room.
        lambda c: c.get("status") == "False" and "Insufficient cpu" in c.get("message", ""),
        "the composite's CompositePodGroupInitiallyScheduled=False for room",
    )
    assert failing["reason"] == "Unschedulable"
    assert failing["message"].startswith("NotEnoughResources: ")
    for child in ("leader", "workers"):
        said = wait_condition(
            cluster,
            child_path(namespace, child),
            "PodGroupInitiallyScheduled",
            lambda c: c.get("status") == "False" and "Insufficient cpu" in c.get("message", ""),
            f"PodGroup {child}: PodGroupInitiallyScheduled=False for room",
        )
        assert said["reason"] == "Unschedulable"
    assert bound_names(cluster, namespace) == [], "no child placed while the whole cannot fit"
    show(cluster, namespace, "describe", "compositepodgroup", "job")

    add_nodes(1, cpu="4")
    wait_for(
        lambda: bound_names(cluster, namespace),
        lambda placed: placed == sorted(names),
        describe="every child bound once a node is added",
    )


def test_a_child_naming_a_missing_composite_waits_for_it(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="4")
    start_scheduler()
    create_child(cluster, namespace, "leader", 1, "nowhere")
    names = create_members(cluster, namespace, "leader", 1, pool=pool, cpu="1")
    said = wait_pod_reason(cluster, namespace, names[0], "GroupNotFound")
    assert f"CompositePodGroup {namespace}/nowhere" in said["message"]
    assert bound_names(cluster, namespace) == []

    create_composite(cluster, namespace, "nowhere", 1)
    wait_for(
        lambda: bound_names(cluster, namespace),
        lambda placed: placed == names,
        describe="the child bound once its composite exists",
    )


def test_fewer_groups_than_children_is_refused_naming_the_field(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="4")
    start_scheduler()
    create_composite(cluster, namespace, "job", 1)
    create_child(cluster, namespace, "a", 1, "job")
    create_child(cluster, namespace, "b", 1, "job")
    names = create_members(cluster, namespace, "a", 1, pool=pool, cpu="1")
    names += create_members(cluster, namespace, "b", 1, pool=pool, cpu="1")
    said = wait_pod_reason(cluster, namespace, names[0], "UnsupportedField")
    assert "spec.schedulingPolicy.gang.minGroupCount" in said["message"]
    refused = wait_condition(
        cluster,
        composite_path(namespace, "job"),
        "CompositePodGroupInitiallyScheduled",
        lambda c: c.get("status") == "False",
        "the composite's CompositePodGroupInitiallyScheduled=False",
    )
    assert refused["reason"] == "Invalid"
    assert "minGroupCount" in refused["message"]
    assert bound_names(cluster, namespace) == []


def test_disruption_mode_all_evicts_the_composite_as_one_unit(
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
        # The second worker is above its PodGroup's minCount: evicting it alone
        # would make room, but disruptionMode all says the composite goes whole.
        create_composite(
            cluster, namespace, "job", 2, disruptionMode={"all": {}}, priorityClassName=low
        )
        create_child(cluster, namespace, "leader", 1, "job")
        create_child(cluster, namespace, "workers", 1, "job")
        running = [
            *members_of(cluster, namespace, "leader", 1, pool=pool, priority_class=low),
            *members_of(cluster, namespace, "workers", 2, pool=pool, priority_class=low),
        ]
        wait_for(
            lambda: bound_names(cluster, namespace),
            lambda placed: placed == sorted(running),
            describe="the composite running",
        )
        w.create_native_podgroup(cluster.api, namespace, "urgent", 1, priorityClassName=high)
        members_of(cluster, namespace, "urgent", 1, pool=pool, priority_class=high)
        wait_for(
            lambda: bound_names(cluster, namespace),
            lambda placed: placed == ["urgent-0"],
            describe="the urgent gang bound, the composite evicted whole",
        )
        target = wait_condition(
            cluster,
            composite_path(namespace, "job"),
            "DisruptionTarget",
            lambda c: c.get("status") == "True",
            "the composite's DisruptionTarget=True",
        )
        assert target["reason"] == "PreemptionByScheduler"
        for child in ("leader", "workers"):
            wait_condition(
                cluster,
                child_path(namespace, child),
                "DisruptionTarget",
                lambda c: c.get("status") == "True",
                f"PodGroup {child}: DisruptionTarget=True",
            )
        show(cluster, namespace, "describe", "compositepodgroup", "job")
    finally:
        for name in (low, high):
            cluster.api.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


def test_disruption_mode_single_evicts_one_child_whole_its_sibling_runs_on(
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
        # single (the default): the workers' PodGroup whole makes the room, the
        # leader runs on; no worker goes alone (minCount 2).
        create_composite(cluster, namespace, "job", 2, priorityClassName=low)
        create_child(cluster, namespace, "leader", 1, "job")
        create_child(cluster, namespace, "workers", 2, "job")
        leader = members_of(cluster, namespace, "leader", 1, pool=pool, priority_class=low)
        workers = members_of(cluster, namespace, "workers", 2, pool=pool, priority_class=low)
        wait_for(
            lambda: bound_names(cluster, namespace),
            lambda placed: placed == sorted(leader + workers),
            describe="the composite running",
        )
        w.create_native_podgroup(cluster.api, namespace, "urgent", 2, priorityClassName=high)
        urgent = members_of(cluster, namespace, "urgent", 2, pool=pool, priority_class=high)
        wait_for(
            lambda: bound_names(cluster, namespace),
            lambda placed: placed == sorted(leader + urgent),
            describe="the urgent gang bound in the workers' room, the leader still running",
        )
        wait_condition(
            cluster,
            child_path(namespace, "workers"),
            "DisruptionTarget",
            lambda c: c.get("status") == "True",
            "PodGroup workers: DisruptionTarget=True",
        )
        leader_group = cluster.api.get(child_path(namespace, "leader"))
        assert condition(leader_group, "DisruptionTarget") == {}, "the leader was not disrupted"
        show(cluster, namespace, "describe", "podgroups.scheduling.k8s.io", "workers")
    finally:
        for name in (low, high):
            cluster.api.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


def members_of(
    cluster: Cluster, namespace: str, group: str, count: int, *, pool: str, priority_class: str
) -> list[str]:
    names = [f"{group}-{i}" for i in range(count)]
    for name in names:
        w.create_native_member(
            cluster.api,
            namespace,
            name,
            group=group,
            pool=pool,
            cpu="2",
            priority_class=priority_class,
        )
    return names
