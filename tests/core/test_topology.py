"""Filters 6-7: pod affinity, anti-affinity and spread, as kube-scheduler has them.

Each case is a small cluster (nodes in zones), pods already running, and one
pending pod: the nodes it may take, and the reason the others give.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from coscheduler.api.pod import PodInfo
from coscheduler.core import GroupKey, GroupPolicy, Snapshot
from coscheduler.core.filters import interpod
from coscheduler.core.planner import plan
from tests.builders import node, pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
# n0, n1 in zone a; n2, n3 in zone b; n4 has no zone label.
ZONES = {"n0": "a", "n1": "a", "n2": "b", "n3": "b", "n4": None}


def term(key: str = ZONE, **fields: Any) -> dict[str, Any]:
    """A pod (anti-)affinity term selecting app=db by default."""
    return {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": key, **fields}


def affinity(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {kind: {REQUIRED: list(terms)}}}


def spread(max_skew: int = 1, key: str = ZONE, **fields: Any) -> dict[str, Any]:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": max_skew,
                "topologyKey": key,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "db"}},
                **fields,
            }
        ]
    }


@dataclass
class Case:
    running: Sequence[tuple[str, Mapping[str, str]]]  # (node, labels) of running pods
    spec: Mapping[str, Any]
    labels: Mapping[str, str] = field(default_factory=dict)
    allowed: set[str] = field(default_factory=set)
    reason: str | None = None
    running_spec: Mapping[str, Any] = field(default_factory=dict)
    namespace: str = "default"
    running_namespace: str = "default"
    node_selector: Mapping[str, str] | None = None
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


DB = {"app": "db"}
CASES = {
    "affinity-to-a-running-pods-zone": Case(
        [("n2", DB)],
        affinity("podAffinity", term()),
        allowed={"n2", "n3"},
        reason=interpod.AFFINITY_REASON,
    ),
    "affinity-with-nothing-to-follow-refuses-every-node": Case(
        [], affinity("podAffinity", term()), allowed=set(), reason=interpod.AFFINITY_REASON
    ),
    "the-first-of-a-series-goes-to-any-node-with-the-key": Case(
        [],
        affinity("podAffinity", term()),
        labels=DB,
        allowed={"n0", "n1", "n2", "n3"},
        reason=interpod.AFFINITY_REASON,
    ),
    "affinity-in-another-namespace-is-not-seen": Case(
        [("n2", DB)],
        affinity("podAffinity", term()),
        allowed=set(),
        running_namespace="other",
        reason=interpod.AFFINITY_REASON,
    ),
    "affinity-naming-the-namespace-sees-it": Case(
        [("n2", DB)],
        affinity("podAffinity", term(namespaces=["other"])),
        allowed={"n2", "n3"},
        running_namespace="other",
    ),
    "affinity-with-an-empty-namespace-selector-sees-every-namespace": Case(
        [("n0", DB)],
        affinity("podAffinity", term(namespaceSelector={})),
        allowed={"n0", "n1"},
        running_namespace="other",
    ),
    "a-namespace-selector-sees-the-namespaces-it-matches": Case(
        [("n2", DB)],
        affinity("podAffinity", term(namespaceSelector={"matchLabels": {"team": "data"}})),
        allowed={"n2", "n3"},
        running_namespace="other",
        namespace_labels={"other": {"team": "data"}},
    ),
    "a-namespace-selector-ignores-the-others": Case(
        [("n2", DB)],
        affinity("podAffinity", term(namespaceSelector={"matchLabels": {"team": "data"}})),
        allowed=set(),
        running_namespace="other",
        namespace_labels={"other": {"team": "web"}},
        reason=interpod.AFFINITY_REASON,
    ),
    "anti-affinity-keeps-out-of-a-running-pods-zone": Case(
        [("n0", DB)],
        affinity("podAntiAffinity", term()),
        allowed={"n2", "n3", "n4"},
        reason=interpod.ANTI_AFFINITY_REASON,
    ),
    "anti-affinity-by-hostname-keeps-out-of-its-node-only": Case(
        [("n0", DB)],
        affinity("podAntiAffinity", term(HOST)),
        allowed={"n1", "n2", "n3", "n4"},
        reason=interpod.ANTI_AFFINITY_REASON,
    ),
    "a-running-pods-anti-affinity-keeps-the-pods-it-selects-away": Case(
        [("n0", {"app": "cache"})],
        {},
        labels=DB,
        running_spec=affinity("podAntiAffinity", term(HOST)),
        allowed={"n1", "n2", "n3", "n4"},
        reason=interpod.EXISTING_ANTI_AFFINITY_REASON,
    ),
    "a-running-pods-anti-affinity-ignores-pods-it-does-not-select": Case(
        [("n0", {"app": "cache"})],
        {},
        labels={"app": "web"},
        running_spec=affinity("podAntiAffinity", term(HOST)),
        allowed={"n0", "n1", "n2", "n3", "n4"},
    ),
    "match-label-keys-narrow-the-selector-to-the-pods-own-value": Case(
        [("n0", {"app": "db", "run": "old"})],
        affinity("podAntiAffinity", term(HOST, matchLabelKeys=["run"])),
        labels={"app": "db", "run": "new"},
        allowed={"n0", "n1", "n2", "n3", "n4"},
    ),
    "spread-sends-the-next-pod-to-the-emptier-zone": Case(
        [("n0", DB)],
        spread(),
        labels=DB,
        allowed={"n2", "n3"},
        reason=interpod.SPREAD_REASON,
    ),
    "spread-refuses-nodes-without-the-key": Case(
        [],
        spread(),
        labels=DB,
        allowed={"n0", "n1", "n2", "n3"},
        reason=interpod.SPREAD_LABEL_REASON,
    ),
    "spread-counts-only-the-pods-it-selects": Case(
        [("n0", {"app": "web"}), ("n0", {"app": "web"})],
        spread(),
        labels=DB,
        allowed={"n0", "n1", "n2", "n3"},
    ),
    "a-pod-outside-its-own-selector-does-not-add-to-the-skew": Case(
        [("n0", DB)],
        spread(),
        labels={"app": "web"},
        allowed={"n0", "n1", "n2", "n3"},
    ),
    "min-domains-above-the-domains-there-are-counts-the-minimum-as-zero": Case(
        [("n2", DB)],
        spread(minDomains=3),
        labels=DB,
        allowed={"n0", "n1"},
        reason=interpod.SPREAD_REASON,
    ),
    "domains-the-pods-node-selector-excludes-do-not-count-by-default": Case(
        # Zone b is outside the pod's selector, so zone a's one pod is the minimum.
        [("n0", DB)],
        spread(),
        labels=DB,
        allowed={"n0", "n1"},
        node_selector={"pool": "x"},
    ),
    "with-node-affinity-policy-ignore-they-do": Case(
        [("n0", DB)],
        spread(nodeAffinityPolicy="Ignore"),
        labels=DB,
        allowed=set(),
        node_selector={"pool": "x"},
        reason=interpod.SPREAD_REASON,
    ),
}


def _snapshot(case: Case) -> Snapshot:
    snapshot = Snapshot()
    snapshot.topology.namespace_labels.update(case.namespace_labels)
    for name, zone in ZONES.items():
        labels = {"pool": "x"} if name in ("n0", "n1") else {}
        if zone is not None:
            labels[ZONE] = zone
        snapshot.upsert_node(node(name, labels=labels))
    for index, (where, running_labels) in enumerate(case.running):
        snapshot.update_pod(
            pod(
                f"running-{index}",
                namespace=case.running_namespace,
                node=where,
                phase="Running",
                labels=running_labels,
                spec_extra=case.running_spec,
            )
        )
    return snapshot


def _pending(case: Case, name: str = "new") -> PodInfo:
    return pod(
        name,
        namespace=case.namespace,
        labels=case.labels,
        spec_extra=case.spec,
        node_selector=case.node_selector,
    )


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_nodes_a_pod_may_take(case: Case) -> None:
    snapshot = _snapshot(case)
    pending = _pending(case)
    mask = snapshot.feasible(pending)
    assert {snapshot.name_of(int(slot)) for slot in np.flatnonzero(mask)} == case.allowed
    if case.reason is not None:
        assert case.reason in snapshot.diagnose(pending).reasons


def _gang(spec: Mapping[str, Any], count: int, labels: Mapping[str, str]) -> list[PodInfo]:
    return [
        pod(f"w-{index}", group="g", labels=labels, spec_extra=spec, cpu="1")
        for index in range(count)
    ]


def _placed(snapshot: Snapshot, members: int, pods: list[PodInfo]) -> dict[str, str]:
    decision = plan(
        snapshot,
        GroupKey("default", "g"),
        GroupPolicy("default", "g", min_member=members),
        pods,
        [],
    )
    return {binding.name: binding.node for binding in decision.bindings}


def test_a_gang_with_affinity_to_itself_lands_in_one_zone() -> None:
    snapshot = _snapshot(Case([], {}))
    placed = _placed(snapshot, 4, _gang(affinity("podAffinity", term()), 4, DB))
    assert len(placed) == 4
    assert len({ZONES[where] for where in placed.values()}) == 1


def test_a_spread_gang_splits_evenly_over_the_zones() -> None:
    snapshot = _snapshot(Case([], {}))
    placed = _placed(snapshot, 4, _gang(spread(), 4, DB))
    zones = [ZONES[where] or "-" for where in placed.values()]
    assert sorted(zones) == ["a", "a", "b", "b"]


def test_a_one_per_zone_gang_takes_one_place_per_zone_and_any_on_a_node_without_zones() -> None:
    # As kube-scheduler: anti-affinity never refuses a node without the key (n4).
    snapshot = _snapshot(Case([], {}))
    placed = _placed(snapshot, 4, _gang(affinity("podAntiAffinity", term()), 4, DB))
    assert sorted(str(ZONES[where] or "-") for where in placed.values()) == ["-", "-", "a", "b"]
    snapshot = _snapshot(Case([], {}))
    snapshot.remove_node("n4")
    placed = _placed(snapshot, 3, _gang(affinity("podAntiAffinity", term()), 3, DB))
    assert placed == {}
    assert all(snapshot.allocated(name) == {} for name in ZONES)


def test_a_series_with_affinity_to_itself_starts_in_the_tightest_zone_that_holds_it() -> None:
    # The best-scored node (n0, fullest) is in zone a, which has room for 2 of 3:
    # starting there would strand the gang. Zone b holds 3 exactly, zone c 16:
    # b is chosen, keeping c free for a larger gang.
    snapshot = Snapshot()
    for name, zone, cpu in (("n0", "a", "1"), ("n1", "a", "1"), ("n2", "b", "2"), ("n3", "b", "1")):
        snapshot.upsert_node(node(name, cpu=cpu, labels={ZONE: zone}))
    snapshot.upsert_node(node("n4", cpu="16", labels={ZONE: "c"}))
    snapshot.update_pod(pod("other", node="n0", phase="Running", cpu="500m"))
    placed = _placed(snapshot, 3, _gang(affinity("podAffinity", term()), 3, DB))
    assert sorted(placed.values()) == ["n2", "n2", "n3"]
