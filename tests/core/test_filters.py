"""Node fit filters, one table per filter, in kube-scheduler's wording."""

from __future__ import annotations

from typing import Any

import pytest

from coscheduler.api.pod import HostPort
from coscheduler.core.filters import affinity, check_node, fit, ports, taints, unschedulable
from tests.builders import node, pod


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


LABELS = {"zone": "a", "gen": "5", "disk": "ssd"}

AFFINITY_CASES = [
    pytest.param({"zone": "a"}, None, True, id="selector-match"),
    pytest.param({"zone": "b"}, None, False, id="selector-mismatch"),
    pytest.param({"zone": "a", "missing": "x"}, None, False, id="selector-all-must-hold"),
    pytest.param(None, [{"matchExpressions": [expr("zone", "In", "a", "b")]}], True, id="in"),
    pytest.param(None, [{"matchExpressions": [expr("zone", "In", "b")]}], False, id="in-miss"),
    pytest.param(None, [{"matchExpressions": [expr("zone", "NotIn", "b")]}], True, id="notin"),
    pytest.param(
        None, [{"matchExpressions": [expr("rack", "NotIn", "b")]}], True, id="notin-absent-key"
    ),
    pytest.param(None, [{"matchExpressions": [expr("disk", "Exists")]}], True, id="exists"),
    pytest.param(None, [{"matchExpressions": [expr("gpu", "Exists")]}], False, id="exists-miss"),
    pytest.param(
        None, [{"matchExpressions": [expr("gpu", "DoesNotExist")]}], True, id="doesnotexist"
    ),
    pytest.param(None, [{"matchExpressions": [expr("gen", "Gt", "4")]}], True, id="gt"),
    pytest.param(None, [{"matchExpressions": [expr("gen", "Gt", "5")]}], False, id="gt-equal"),
    pytest.param(None, [{"matchExpressions": [expr("gen", "Lt", "6")]}], True, id="lt"),
    pytest.param(
        None, [{"matchExpressions": [expr("zone", "Lt", "6")]}], False, id="lt-non-integer-label"
    ),
    pytest.param(None, [{"matchExpressions": [expr("gen", "Lt", "6")]}, {}], True, id="terms-ored"),
    pytest.param(
        None,
        [
            {"matchExpressions": [expr("zone", "In", "b")]},
            {"matchExpressions": [expr("disk", "In", "ssd")]},
        ],
        True,
        id="second-term",
    ),
    pytest.param(
        None,
        [{"matchExpressions": [expr("zone", "In", "a"), expr("gen", "Gt", "9")]}],
        False,
        id="expressions-anded",
    ),
    pytest.param(None, [], False, id="no-terms-matches-nothing"),
    pytest.param(None, [{}], False, id="empty-term-matches-nothing"),
    pytest.param(
        None, [{"matchFields": [expr("metadata.name", "In", "n1")]}], True, id="matchfields-name"
    ),
    pytest.param(
        None,
        [{"matchFields": [expr("metadata.name", "NotIn", "n1")]}],
        False,
        id="matchfields-notin",
    ),
    pytest.param(
        {"zone": "a"},
        [{"matchExpressions": [expr("zone", "In", "b")]}],
        False,
        id="selector-and-affinity-both",
    ),
]


@pytest.mark.parametrize(("selector", "terms", "fits"), AFFINITY_CASES)
def test_node_affinity(
    selector: dict[str, str] | None, terms: list[dict[str, Any]] | None, fits: bool
) -> None:
    p = pod("p", node_selector=selector, affinity_terms=terms)
    reason = affinity.check(p, node("n1", labels=LABELS))
    assert reason == (None if fits else "node(s) didn't match Pod's node affinity/selector")


TAINT = ("gpu", "true", "NoSchedule")
TAINT_CASES = [
    pytest.param([], [TAINT], False, id="untolerated"),
    pytest.param(
        [{"key": "gpu", "operator": "Equal", "value": "true"}], [TAINT], True, id="equal-any-effect"
    ),
    pytest.param([{"key": "gpu", "value": "true"}], [TAINT], True, id="default-operator-equal"),
    pytest.param(
        [{"key": "gpu", "operator": "Equal", "value": "false"}],
        [TAINT],
        False,
        id="equal-other-value",
    ),
    pytest.param([{"key": "gpu", "operator": "Exists"}], [TAINT], True, id="exists"),
    pytest.param([{"operator": "Exists"}], [TAINT], True, id="empty-key-exists-tolerates-all"),
    pytest.param(
        [{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}],
        [TAINT],
        False,
        id="effect-mismatch",
    ),
    pytest.param([], [("gpu", "true", "PreferNoSchedule")], True, id="prefer-ignored"),
    pytest.param([], [("evict", "", "NoExecute")], False, id="noexecute-filtered"),
    pytest.param(
        [{"key": "gpu", "operator": "Exists"}],
        [TAINT, ("spot", "", "NoSchedule")],
        False,
        id="all-must-be-tolerated",
    ),
]


@pytest.mark.parametrize(("tolerations", "node_taints", "fits"), TAINT_CASES)
def test_taints(
    tolerations: list[dict[str, str]], node_taints: list[tuple[str, str, str]], fits: bool
) -> None:
    reason = taints.check(pod("p", tolerations=tolerations), node("n", taints=node_taints))
    assert (reason is None) == fits


def test_taint_reason_wording() -> None:
    reason = taints.check(pod("p"), node("n", taints=[TAINT]))
    assert reason == "node(s) had untolerated taint {gpu: true}"


@pytest.mark.parametrize(
    ("tolerations", "fits"),
    [
        pytest.param([], False, id="cordoned"),
        pytest.param(
            [
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                }
            ],
            True,
            id="tolerates-cordon",
        ),
    ],
)
def test_unschedulable(tolerations: list[dict[str, str]], fits: bool) -> None:
    reason = unschedulable.check(pod("p", tolerations=tolerations), node("n", unschedulable=True))
    assert reason == (None if fits else "node(s) were unschedulable")


@pytest.mark.parametrize(
    ("used", "wanted", "conflict"),
    [
        pytest.param(
            [HostPort("0.0.0.0", "TCP", 80)],
            HostPort("10.0.0.1", "TCP", 80),
            True,
            id="any-address-in-use",
        ),
        pytest.param(
            [HostPort("10.0.0.1", "TCP", 80)],
            HostPort("0.0.0.0", "TCP", 80),
            True,
            id="wants-any-address",
        ),
        pytest.param(
            [HostPort("10.0.0.1", "TCP", 80)],
            HostPort("10.0.0.2", "TCP", 80),
            False,
            id="different-addresses",
        ),
        pytest.param(
            [HostPort("0.0.0.0", "UDP", 80)],
            HostPort("0.0.0.0", "TCP", 80),
            False,
            id="different-protocols",
        ),
        pytest.param(
            [HostPort("0.0.0.0", "TCP", 81)],
            HostPort("0.0.0.0", "TCP", 80),
            False,
            id="different-ports",
        ),
    ],
)
def test_host_ports(used: list[HostPort], wanted: HostPort, conflict: bool) -> None:
    in_use = ports.PortSet()
    in_use.add(used)
    assert in_use.conflicts([wanted]) is conflict
    in_use.remove(used)
    assert not in_use.conflicts([wanted])


@pytest.mark.parametrize(
    ("requests", "allocated", "reasons"),
    [
        pytest.param({"cpu": 1000, "pods": 1}, {}, [], id="fits"),
        pytest.param({"cpu": 9000, "pods": 1}, {}, ["Insufficient cpu"], id="cpu"),
        pytest.param(
            {"cpu": 1000, "memory": 2**40, "pods": 1},
            {"cpu": 7500},
            ["Insufficient cpu", "Insufficient memory"],
            id="every-shortfall",
        ),
        pytest.param({"cpu": 1, "pods": 1}, {"pods": 110}, ["Too many pods"], id="pod-count"),
        pytest.param(
            {"nvidia.com/gpu": 1, "pods": 1},
            {},
            ["Insufficient nvidia.com/gpu"],
            id="absent-extended-resource",
        ),
        pytest.param({"nvidia.com/gpu": 0, "pods": 1}, {}, [], id="zero-request-ignored"),
    ],
)
def test_resources_fit(
    requests: dict[str, int], allocated: dict[str, int], reasons: list[str]
) -> None:
    n = node("n", cpu="8", memory="32Gi")
    assert fit.insufficient(requests, n.allocatable, allocated) == reasons


def test_check_node_stops_at_first_failing_filter() -> None:
    n = node("n", cpu="1", taints=[TAINT], unschedulable=True)
    assert check_node(pod("p", cpu="4"), n, {}) == (
        "NodeUnschedulable",
        ["node(s) were unschedulable"],
    )
    n = node("n", cpu="1", taints=[TAINT])
    assert check_node(pod("p", cpu="4"), n, {})[0] == "TaintToleration"  # type: ignore[index]
    assert check_node(pod("p", cpu="4"), node("n", cpu="1"), {}) == (
        "NodeResourcesFit",
        ["Insufficient cpu"],
    )
    assert check_node(pod("p"), node("n"), {}) is None
