"""Properties of inter-pod rules over random clusters (hypothesis).

1. No required anti-affinity term is ever violated by what we place, counting
   the members of the same trial and the running pods' own terms.
2. Every spread constraint holds at each binding, in the order planned,
   checked by a naive recount of the cluster.
3. A gang is placed whole or not at all; a refused gang leaves no trace.
4. Monotone in capacity: a gang refused on a cluster is refused when a node
   has less room, or one without pods is gone (3,000 examples passed once;
   300 run each time).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.core import GroupKey, GroupPolicy, Snapshot
from coscheduler.core.planner import plan
from tests.builders import node, pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _anti(key: str, app: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"affinity": {"podAntiAffinity": {REQUIRED: [term]}}}


@dataclass
class World:
    nodes: list[NodeInfo]
    running: list[PodInfo]
    gang: list[PodInfo]
    min_member: int
    max_skew: int | None


@st.composite
def worlds(draw: Any) -> World:
    nodes = []
    for index in range(draw(st.integers(2, 7))):
        zone = draw(st.sampled_from(["a", "b", "c", None]))
        labels = {ZONE: zone} if zone else {}
        cpu = draw(st.integers(1, 4))
        nodes.append(node(f"n{index}", cpu=str(cpu), labels=labels))
    running = []
    for index in range(draw(st.integers(0, 5))):
        app = draw(st.sampled_from(["db", "web"]))
        carried: dict[str, Any] = {}
        if draw(st.booleans()):
            carried = _anti(
                draw(st.sampled_from([HOST, ZONE])), draw(st.sampled_from(["db", "web"]))
            )
        running.append(
            pod(
                f"r{index}",
                cpu="0",
                node=f"n{draw(st.integers(0, len(nodes) - 1))}",
                phase="Running",
                labels={"app": app},
                spec_extra=carried,
            )
        )
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec.update(_anti(draw(st.sampled_from([HOST, ZONE])), "db"))
    max_skew = draw(st.one_of(st.none(), st.integers(1, 2)))
    if max_skew is not None:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": max_skew,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "db"}},
            }
        ]
    size = draw(st.integers(1, 6))
    gang = [
        pod(f"g{index}", group="g", labels={"app": "db"}, spec_extra=spec, cpu="1")
        for index in range(size)
    ]
    return World(nodes, running, gang, draw(st.integers(1, size)), max_skew)


def _anti_terms(p: PodInfo) -> list[tuple[str, str]]:
    return [
        (term.topology_key, next(iter(term.selector.requirements[0].values)))
        for term in p.topology.anti_affinity
        if term.selector is not None
    ]


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_inter_pod_rules_hold_and_gangs_stay_whole(world: World) -> None:
    snapshot = Snapshot()
    for n in world.nodes:
        snapshot.upsert_node(n)
    for p in world.running:
        snapshot.update_pod(p)
    labels = {n.name: n.labels for n in world.nodes}
    before = {n.name: snapshot.allocated(n.name) for n in world.nodes}
    decision = plan(
        snapshot,
        GroupKey("default", "g"),
        GroupPolicy("default", "g", min_member=world.min_member),
        world.gang,
        [],
    )
    if not decision.bindings:
        assert {n.name: snapshot.allocated(n.name) for n in world.nodes} == before
        return
    assert len(decision.bindings) >= world.min_member
    by_uid = {p.uid: p for p in world.gang}
    placed: list[tuple[PodInfo, str]] = [(p, p.node_name or "") for p in world.running]
    domains = {n.labels[ZONE] for n in world.nodes if ZONE in n.labels}
    counts = Counter(dict.fromkeys(domains, 0))  # domains count even when empty
    for p, where in placed:
        if p.labels.get("app") == "db" and ZONE in labels[where]:
            counts[labels[where][ZONE]] += 1
    for binding in decision.bindings:
        new = by_uid[binding.uid]
        where = binding.node
        # 1. Anti-affinity, both ways, against everything placed before it.
        for other, there in placed:
            for first, second, here, far in (
                (new, other, where, there),
                (other, new, there, where),
            ):
                for key, app in _anti_terms(first):
                    value = labels[here].get(key)  # test nodes carry the hostname label
                    if value is not None and second.labels.get("app") == app:
                        assert value != labels[far].get(key), (first.name, second.name, key)
        # 2. Spread, recounted naively at this binding.
        if world.max_skew is not None:
            assert ZONE in labels[where]
            smallest = min(counts.values())
            assert counts[labels[where][ZONE]] + 1 - smallest <= world.max_skew
            counts[labels[where][ZONE]] += 1
        placed.append((new, where))


@settings(max_examples=300, deadline=None)
@given(worlds(), st.data())
def test_a_gang_refused_is_refused_on_a_cluster_with_less_room(world: World, data: Any) -> None:
    def decide(nodes: list[NodeInfo]) -> bool:
        snapshot = Snapshot()
        for n in nodes:
            snapshot.upsert_node(n)
        for p in world.running:
            snapshot.update_pod(p)
        policy = GroupPolicy("default", "g", min_member=world.min_member)
        return bool(plan(snapshot, GroupKey("default", "g"), policy, world.gang, []).bindings)

    if decide(world.nodes):
        return
    # Less room: one node loses a core, or goes away if no running pod is on it
    # (a node's pods go with it, and with them the rules they impose).
    index = data.draw(st.integers(0, len(world.nodes) - 1))
    smaller = list(world.nodes)
    victim = smaller[index]
    hosts = any(p.node_name == victim.name for p in world.running)
    if victim.allocatable["cpu"] <= 1000 and hosts:
        return
    if not hosts and (data.draw(st.booleans()) or victim.allocatable["cpu"] <= 1000):
        del smaller[index]
    else:
        cpu = str(victim.allocatable["cpu"] // 1000 - 1)
        smaller[index] = node(victim.name, cpu=cpu, labels=dict(victim.labels))
    assert not decide(smaller)
