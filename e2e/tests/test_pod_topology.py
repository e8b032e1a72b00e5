"""Pod affinity, anti-affinity and topology spread on the real control plane.

Each gang is placed whole where its members' rules allow, counting one
another inside the one decision, or waits whole saying which rule refused.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests.helpers import PROMPT_EVENTS, pod_scheduled, unbound_names, wait_not_scheduled
from e2e.waiting import wait_for

pytestmark = pytest.mark.e2e

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _term(app: str, key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


def _create(
    cluster: Cluster,
    namespace: str,
    pool: str,
    name: str,
    app: str,
    spec: dict[str, Any],
    group: str | None = None,
    cpu: str = "2",
) -> None:
    body = w.pod(name, pool=pool, cpu=cpu, **({"group": group} if group else {}))
    body["metadata"]["labels"]["app"] = app
    body["spec"].update(spec)
    cluster.api.create(f"/api/v1/namespaces/{namespace}/pods", body)


def _gang(
    cluster: Cluster,
    namespace: str,
    pool: str,
    name: str,
    size: int,
    spec: dict[str, Any],
    cpu: str = "2",
) -> None:
    w.create_podgroup(cluster.api, namespace, name, size)
    for index in range(size):
        _create(cluster, namespace, pool, f"{name}-{index}", name, spec, group=name, cpu=cpu)


def _nodes_of(cluster: Cluster, namespace: str, prefix: str, count: int) -> list[str]:
    pods = wait_for(
        lambda: [
            p
            for p in w.list_pods(cluster.api, namespace)
            if p["metadata"]["name"].startswith(prefix)
        ],
        lambda items: len(items) == count and all(p["spec"].get("nodeName") for p in items),
        describe=f"the {count} pods of {prefix} bound",
    )
    return [p["spec"]["nodeName"] for p in pods]


def test_one_per_node_gangs_spread_over_nodes_or_wait_whole(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    # Issue #20's report: 3 members, each "one per node", 3 nodes with room for 2 each.
    add_nodes(3, cpu="4")
    start_scheduler(*PROMPT_EVENTS)
    one_per_node = {"affinity": {"podAntiAffinity": {REQUIRED: [_term("mpi", HOST)]}}}
    _gang(cluster, namespace, pool, "mpi", 3, one_per_node)
    assert len(set(_nodes_of(cluster, namespace, "mpi-", 3))) == 3
    # Four more "one per node" members of another job (1 cpu: room for two per node)
    # cannot share 3 nodes: all four wait.
    wide = {"affinity": {"podAntiAffinity": {REQUIRED: [_term("wide", HOST)]}}}
    _gang(cluster, namespace, pool, "wide", 4, wide, cpu="1")
    pod = wait_not_scheduled(cluster, namespace, "wide-0", "Unschedulable")
    assert "didn't match pod anti-affinity rules" in pod_scheduled(pod)["message"]
    assert unbound_names(cluster, namespace) == ["wide-0", "wide-1", "wide-2", "wide-3"]


def test_affinity_follows_a_running_pod_into_its_zone(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    zone_a = add_nodes(2, cpu="8", labels={ZONE: "a"})
    zone_b = add_nodes(2, cpu="8", labels={ZONE: "b"})
    start_scheduler()
    _create(cluster, namespace, pool, "db", "db", {"nodeSelector": {w.POOL_LABEL: pool, ZONE: "b"}})
    assert _nodes_of(cluster, namespace, "db", 1)[0] in zone_b
    near_db = {"affinity": {"podAffinity": {REQUIRED: [_term("db", ZONE)]}}}
    _gang(cluster, namespace, pool, "app", 3, near_db)
    assert set(_nodes_of(cluster, namespace, "app-", 3)) <= set(zone_b)
    assert not set(zone_a) & set(_nodes_of(cluster, namespace, "app-", 3))


def test_a_spread_gang_is_placed_evenly_across_zones(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    zones = dict.fromkeys(add_nodes(2, cpu="16", labels={ZONE: "a"}), "a")
    zones.update(dict.fromkeys(add_nodes(2, cpu="16", labels={ZONE: "b"}), "b"))
    start_scheduler()
    even = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "spread"}},
            }
        ]
    }
    _gang(cluster, namespace, pool, "spread", 6, even)
    placed = Counter(zones[node] for node in _nodes_of(cluster, namespace, "spread-", 6))
    assert placed == {"a": 3, "b": 3}


def test_a_field_still_unsupported_holds_the_gang_and_is_named(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="8")
    start_scheduler(*PROMPT_EVENTS)
    # An in-tree iSCSI disk: its attach rules are not modelled.
    target = {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:disk", "lun": 0}
    disk = {"volumes": [{"name": "data", "iscsi": target}]}
    _gang(cluster, namespace, pool, "vol", 2, disk)
    pod: Json = wait_not_scheduled(cluster, namespace, "vol-0", "UnsupportedField")
    assert "spec.volumes[0].iscsi" in pod_scheduled(pod)["message"]
    wait_for(
        lambda: cluster.api.get(f"{w.PODGROUPS.format(ns=namespace)}/vol"),
        lambda g: any(
            c["type"] == "Unschedulable" and c["reason"] == "UnsupportedField"
            for c in g.get("status", {}).get("conditions", [])
        ),
        describe="the PodGroup's Unschedulable condition says UnsupportedField",
    )
    assert unbound_names(cluster, namespace) == ["vol-0", "vol-1"]


def _podgroup_yaml(namespace: str, name: str, topology: str) -> str:
    return (
        "apiVersion: scheduling.sigs.k8s.io/v1alpha1\nkind: PodGroup\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\n"
        f"spec: {{minMember: 4, topology: {topology}}}\n"
    )


def test_a_gang_kept_in_one_rack_goes_to_the_tightest_rack_that_holds_it(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    racks = dict.fromkeys(add_nodes(2, cpu="4", labels={"rack": "r1"}), "r1")
    racks.update(dict.fromkeys(add_nodes(4, cpu="4", labels={"rack": "r2"}), "r2"))
    start_scheduler()
    # 6 members of 2 cpu: r1 holds 4, r2 holds 8: the gang goes to r2, whole.
    w.create_podgroup(cluster.api, namespace, "ring", 6, topology={"required": "rack"})
    for index in range(6):
        _create(cluster, namespace, pool, f"ring-{index}", "ring", {}, group="ring")
    assert {racks[n] for n in _nodes_of(cluster, namespace, "ring-", 6)} == {"r2"}
    # Another 6 fit in no rack now (r1 holds 4, r2 has room for 2): all wait, saying so.
    w.create_podgroup(cluster.api, namespace, "late", 6, topology={"required": "rack"})
    for index in range(6):
        _create(cluster, namespace, pool, f"late-{index}", "late", {}, group="late")
    # The condition, not the event: while "ring" is still binding, the first
    # messages may name other numbers, and events of a series are rate-limited.
    pod = wait_for(
        lambda: cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/late-0"),
        lambda p: "closest: rack=r1, with room for 4 of 6" in pod_scheduled(p).get("message", ""),
        describe="late-0 says which rack came closest",
    )
    assert pod_scheduled(pod)["reason"] == "Unschedulable"
    assert "no domain of rack holds the 6 needed members" in pod_scheduled(pod)["message"]
    assert unbound_names(cluster, namespace) == [f"late-{i}" for i in range(6)]


def test_a_topology_that_makes_no_sense_is_refused_by_the_api_server(
    cluster: Cluster, namespace: str, podgroup_crd: str
) -> None:
    cases = {
        "{}": "set topology.required, topology.preferred, or both",
        "{required: 'not a key!'}": "must be a node label key",
        "{required: zone, preferred: [rack, zone]}": "topology.required is the widest level",
        "{preferred: [rack, rack]}": "Duplicate value",
    }
    for topology, expected in cases.items():
        result = cluster.kubectl(
            "apply", "-f", "-", input=_podgroup_yaml(namespace, "bad", topology), check=False
        )
        assert result.returncode != 0
        assert expected in result.stderr, result.stderr


def test_affinity_through_a_namespace_selector_follows_a_pod_of_another_team(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    zone_a = add_nodes(2, cpu="8", labels={ZONE: "a"})
    zone_b = add_nodes(2, cpu="8", labels={ZONE: "b"})
    other = f"{namespace}-data"
    cluster.api.create(
        "/api/v1/namespaces",
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": other, "labels": {"team": "data"}},
        },
    )
    try:
        # The data team's pod, placed by someone else in zone a.
        db = w.pod("db", pool=pool, cpu="1", scheduler="default-scheduler")
        db["metadata"]["labels"]["app"] = "db"
        db["spec"]["nodeName"] = zone_a[1]
        cluster.api.create(f"/api/v1/namespaces/{other}/pods", db)
        start_scheduler()
        selector = {"matchLabels": {"team": "data"}}
        near = {
            "affinity": {
                "podAffinity": {REQUIRED: [{**_term("db", ZONE), "namespaceSelector": selector}]}
            }
        }
        _gang(cluster, namespace, pool, "etl", 2, near)
        assert set(_nodes_of(cluster, namespace, "etl-", 2)) <= set(zone_a)
        assert not set(zone_b) & set(_nodes_of(cluster, namespace, "etl-", 2))
    finally:
        cluster.api.delete(f"/api/v1/namespaces/{other}")


def test_preferred_anti_affinity_spreads_a_gang_while_room_allows(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(3, cpu="16")
    start_scheduler()
    term = {"weight": 100, "podAffinityTerm": _term("spread", HOST)}
    apart = {"affinity": {"podAntiAffinity": {PREFERRED: [term]}}}
    _gang(cluster, namespace, pool, "spread", 6, apart)
    assert sorted(Counter(_nodes_of(cluster, namespace, "spread-", 6)).values()) == [2, 2, 2]


def test_a_gang_preferring_one_rack_falls_back_to_one_zone(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    where = dict.fromkeys(add_nodes(2, cpu="4", labels={"rack": "r1", ZONE: "a"}), "r1")
    where.update(dict.fromkeys(add_nodes(2, cpu="4", labels={"rack": "r2", ZONE: "a"}), "r2"))
    where.update(dict.fromkeys(add_nodes(1, cpu="4", labels={"rack": "r3", ZONE: "b"}), "r3"))
    start_scheduler()
    # 6 members of 2 cpu: no rack holds them (4 each, r3 2); zone a (8) does.
    w.create_podgroup(
        cluster.api, namespace, "wide", 6, topology={"preferred": ["rack"], "required": ZONE}
    )
    for index in range(6):
        _create(cluster, namespace, pool, f"wide-{index}", "wide", {}, group="wide")
    assert {where[n] for n in _nodes_of(cluster, namespace, "wide-", 6)} == {"r1", "r2"}
    group = wait_for(
        lambda: cluster.api.get(f"{w.PODGROUPS.format(ns=namespace)}/wide"),
        lambda g: any(
            c["type"] == "Scheduled" and c["status"] == "True"
            for c in g.get("status", {}).get("conditions", [])
        ),
        describe="the PodGroup Scheduled",
    )
    scheduled = next(c for c in group["status"]["conditions"] if c["type"] == "Scheduled")
    assert scheduled["message"].endswith(f"in {ZONE}=a"), scheduled
