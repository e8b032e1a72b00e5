"""Preferences are weighed as kube-scheduler weighs them, and never override a requirement."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest

from coscheduler.api.pod import PodInfo, PodParseError
from coscheduler.core import GroupKey, GroupPolicy, Snapshot
from coscheduler.core.planner import plan
from tests.builders import node, pod, pod_object

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_GANGS = itertools.count()


def cluster(*nodes: tuple[str, str, dict[str, str]]) -> Snapshot:
    snapshot = Snapshot()
    for name, cpu, labels in nodes:
        snapshot.upsert_node(node(name, cpu=cpu, labels=labels))
    return snapshot


def placed(snapshot: Snapshot, spec: dict[str, Any], count: int) -> list[str]:
    """Plan a new gang of ``count`` and keep it."""
    name = f"g{next(_GANGS)}"
    members = [
        pod(f"{name}-{i}", group=name, labels={"app": "w"}, spec_extra=spec, cpu="1")
        for i in range(count)
    ]
    policy = GroupPolicy("default", name, min_member=count)
    decision = plan(snapshot, GroupKey("default", name), policy, members, [])
    return [binding.node for binding in decision.bindings]


def prefer_nodes(weight: int, **labels: str) -> dict[str, Any]:
    expressions = [{"key": k, "operator": "In", "values": [v]} for k, v in labels.items()]
    term = {"weight": weight, "preference": {"matchExpressions": expressions}}
    return {"affinity": {"nodeAffinity": {PREFERRED: [term]}}}


def prefer_pods(kind: str, app: str, key: str, weight: int = 100) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"affinity": {kind: {PREFERRED: [{"weight": weight, "podAffinityTerm": term}]}}}


def test_a_preferred_node_wins_over_a_fuller_one() -> None:
    snapshot = cluster(("n0", "4", {"pool": "x"}), ("n1", "4", {"pool": "y"}))
    snapshot.update_pod(pod("busy", node="n0", phase="Running", cpu="2"))
    assert placed(snapshot, {}, 1) == ["n0"]  # packing: the fuller node
    assert placed(snapshot, prefer_nodes(10, pool="y"), 1) == ["n1"]  # n0 is fuller still


def test_a_preference_never_overrides_a_requirement() -> None:
    snapshot = cluster(("n0", "4", {"pool": "x"}), ("n1", "1", {"pool": "y"}))
    snapshot.update_pod(pod("busy", node="n1", phase="Running", cpu="1"))
    assert placed(snapshot, prefer_nodes(100, pool="y"), 2) == ["n0", "n0"]


def test_preferred_anti_affinity_to_itself_spreads_a_gang_over_nodes() -> None:
    nodes: list[tuple[str, str, dict[str, str]]] = [(f"n{i}", "8", {}) for i in range(3)]
    assert len(set(placed(cluster(*nodes), {}, 3))) == 1  # packing alone: one node
    spread = placed(cluster(*nodes), prefer_pods("podAntiAffinity", "w", HOST), 3)
    assert sorted(spread) == ["n0", "n1", "n2"]


def test_preferred_anti_affinity_still_places_a_gang_larger_than_the_nodes() -> None:
    snapshot = cluster(("n0", "8", {}), ("n1", "8", {}))
    assert Counter(placed(snapshot, prefer_pods("podAntiAffinity", "w", HOST), 4)) == {
        "n0": 2,
        "n1": 2,
    }


def test_preferred_affinity_follows_a_running_pod_into_its_zone() -> None:
    snapshot = cluster(("n0", "8", {ZONE: "a"}), ("n1", "8", {ZONE: "b"}))
    snapshot.update_pod(pod("db", node="n1", phase="Running", labels={"app": "db"}))
    assert placed(snapshot, prefer_pods("podAffinity", "db", ZONE), 2) == ["n1", "n1"]


def test_schedule_anyway_spread_balances_zones_but_places_when_it_cannot() -> None:
    soft = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "w"}},
            }
        ]
    }
    snapshot = cluster(("n0", "8", {ZONE: "a"}), ("n1", "8", {ZONE: "b"}))
    assert Counter(placed(snapshot, soft, 4)) == {"n0": 2, "n1": 2}
    tight = cluster(("n0", "8", {ZONE: "a"}), ("n1", "1", {ZONE: "b"}))
    assert Counter(placed(tight, soft, 4)) == {"n0": 3, "n1": 1}


def test_a_weight_outside_1_to_100_is_named() -> None:
    raw = pod_object("w-0")
    raw["spec"].update(prefer_nodes(0, pool="x"))
    with pytest.raises(PodParseError, match=r"weight = 0 is not between 1 and 100"):
        PodInfo.from_object(raw)
