"""Pods that need a node feature go only to nodes declaring it (NodeDeclaredFeatures, 1.37)."""

from __future__ import annotations

from typing import Any

import pytest

from coscheduler.api.node import NodeInfo, NodeParseError
from coscheduler.api.pod import PodInfo, PodParseError
from coscheduler.core import Scheduler
from coscheduler.core.filters import check_node, features
from coscheduler.core.snapshot import Snapshot
from tests.builders import Clock, node_object, pod, pod_object

RESTART_ALL = "RestartAllContainersOnContainerExits"
RESTART_ALL_RULE = {
    "action": "RestartAllContainers",
    "exitCodes": {"operator": "In", "values": [42]},
}


def declaring(name: str, *declared: str) -> NodeInfo:
    raw = node_object(name)
    raw.setdefault("status", {})["declaredFeatures"] = list(declared)
    return NodeInfo.from_object(raw)


def needing(name: str, **spec: Any) -> PodInfo:
    raw = pod_object(name)
    raw["spec"].update(spec)
    return PodInfo.from_object(raw)


def with_rule(kind: str = "containers") -> dict[str, Any]:
    rules = {"name": "w", "image": "busybox", "restartPolicyRules": [RESTART_ALL_RULE]}
    return {kind: [rules]} if kind == "containers" else {kind: [rules], "containers": []}


@pytest.mark.parametrize(
    ("spec", "needed"),
    [
        pytest.param({}, (), id="most-pods-need-nothing"),
        pytest.param(with_rule(), (RESTART_ALL,), id="restart-all-containers"),
        pytest.param(with_rule("initContainers"), (RESTART_ALL,), id="restart-all-from-init"),
        pytest.param(
            {"hostNetwork": True, "hostUsers": False},
            ("UserNamespacesHostNetworkSupport",),
            id="host-network-in-a-user-namespace",
        ),
        pytest.param({"hostUsers": False}, (), id="a-user-namespace-alone"),
        pytest.param(
            {
                "containers": [
                    {
                        "name": "w",
                        "volumeMounts": [
                            {"name": "a", "mountPath": "/a"},
                            {"name": "b", "mountPath": "/b", "bindMountOptions": ["nosuid"]},
                        ],
                    }
                ]
            },
            ("VolumeBindMountOptions",),
            id="bind-mount-options",
        ),
    ],
)
def test_needed_features_are_read_from_the_spec(spec: dict[str, Any], needed: tuple[str]) -> None:
    assert needing("p", **spec).node_features == needed


def test_bad_fields_are_named() -> None:
    bad = {"containers": [{"name": "w", "restartPolicyRules": [{"action": 1}]}]}
    with pytest.raises(PodParseError, match=r"spec.containers\[0\].restartPolicyRules\[0\].action"):
        needing("p", **bad)
    raw = node_object("n")
    raw["status"]["declaredFeatures"] = "all"
    with pytest.raises(NodeParseError, match=r"status\.declaredFeatures must be a list"):
        NodeInfo.from_object(raw)


def test_the_filter_wants_every_needed_feature_declared() -> None:
    asking = needing("p", **with_rule())
    assert features.check(asking, declaring("old")) == features.REASON
    assert features.check(asking, declaring("new", RESTART_ALL, "Other")) is None
    assert features.check(needing("plain"), declaring("old")) is None
    refusal = check_node(asking, declaring("old"), {})
    assert refusal is not None
    assert refusal.filter == features.NAME


def test_a_pod_needing_a_feature_goes_to_a_node_declaring_it_or_waits_saying_why() -> None:
    made = Scheduler(Clock())
    made.upsert_node(declaring("old"))
    made.upsert_pod(needing("p", **with_rule()))
    decision = made.next_decision()
    assert decision is not None
    assert not decision.bindings
    assert "1 node(s) didn't match Pod's required features" in decision.status.message

    made.upsert_node(declaring("new", RESTART_ALL))
    made.upsert_pod(pod("plain"))
    placed: dict[str, str] = {}
    while (decision := made.next_decision()) is not None and decision.bindings:
        placed |= {b.name: b.node for b in decision.bindings}
    assert placed["p"] == "new"


def test_the_snapshot_agrees_with_the_plain_filters() -> None:
    snapshot = Snapshot()
    tainted = node_object("tainted-new", taints=[("gpu", "true", "NoSchedule")])
    tainted["status"]["declaredFeatures"] = [RESTART_ALL]
    nodes = [
        declaring("old"),
        declaring("new", RESTART_ALL),
        NodeInfo.from_object(tainted),
        declaring("other", "VolumeBindMountOptions"),
    ]
    for made in nodes:
        snapshot.upsert_node(made)
    tolerant = [{"operator": "Exists"}]
    pods = [
        needing("plain"),
        needing("tolerant", tolerations=tolerant),
        needing("restart", **with_rule()),
        needing("restart-tolerant", tolerations=tolerant, **with_rule()),
    ]
    for asking in pods:
        mask = snapshot.feasible(asking)
        for made in nodes:
            plain = check_node(asking, made, {})
            assert bool(mask[snapshot.slot_of(made.name)]) == (plain is None), (
                asking.name,
                made.name,
            )
