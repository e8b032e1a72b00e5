"""The fault harness's own logic, without a cluster: request kinds, seeded choices, checkers."""

from __future__ import annotations

from decimal import Decimal

import pytest

from e2e.faultproxy import Faults, RequestKind, Rule
from e2e.invariants import (
    counted_status,
    double_bindings,
    over_committed,
    quantity,
    rss_growth,
)


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/pods", {"watch": "true"}, "watch pods"),
        ("GET", "/api/v1/pods", {}, "list pods"),
        ("GET", "/api/v1/namespaces/a/pods/p", {}, "get pods"),
        ("POST", "/api/v1/namespaces/a/pods/p/binding", {}, "create pods/binding"),
        ("PATCH", "/api/v1/namespaces/a/pods/p/status", {}, "patch pods/status"),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/a/leases/l", {}, "update leases"),
        ("GET", "/apis/scheduling.sigs.k8s.io/v1alpha1/podgroups", {}, "list podgroups"),
        ("POST", "/api/v1/namespaces/a/events", {}, "create events"),
        ("GET", "/api/v1/nodes/n", {}, "get nodes"),
        ("DELETE", "/api/v1/namespaces/a", {}, "delete namespaces"),
    ],
)
def test_request_kind_is_the_verb_and_resource_rbac_sees(
    method: str, path: str, query: dict[str, str], expected: str
) -> None:
    assert str(RequestKind.of(method, path, query)) == expected


def _victims(seed: int) -> list[bool]:
    faults = Faults()
    faults.set(seed, [Rule(kind="status", share=0.3, resources=("pods/binding",))])
    binding = RequestKind("create", "pods/binding")
    other = RequestKind("list", "pods")
    picks = []
    for _ in range(200):
        faults.choose(other)  # other traffic does not shift the binding's choices
        picks.append(faults.choose(binding) is not None)
    return picks


def test_the_same_seed_hits_the_same_requests_and_another_seed_others() -> None:
    first = _victims(7)
    assert first == _victims(7)
    assert first != _victims(8)
    assert 30 < sum(first) < 90  # about 30 % of 200


def test_a_rule_fires_at_most_max_count_times_and_watch_faults_only_on_watches() -> None:
    faults = Faults()
    faults.set(1, [Rule(kind="reset", share=1.0, max_count=3), Rule(kind="gone", share=1.0)])
    fired = [faults.choose(RequestKind("get", "pods")) for _ in range(10)]
    assert sum(1 for rule in fired if rule is not None) == 3
    hit = faults.choose(RequestKind("watch", "pods"))
    assert hit is not None
    assert hit.kind == "gone"


def test_a_rule_lets_its_first_after_requests_of_a_kind_through() -> None:
    faults = Faults()
    refusal = Rule("status", 1.0, ("create",), ("pods/eviction",), status=429, max_count=1, after=1)
    faults.set(1, [refusal])
    eviction = RequestKind("create", "pods/eviction")
    assert faults.choose(RequestKind("create", "pods")) is None
    fired = [faults.choose(eviction) for _ in range(3)]
    assert fired == [None, refusal, None]
    assert Rule.from_json({"kind": "status", "after": 2}).after == 2


def test_an_open_watch_meets_only_the_watch_faults_of_new_rules() -> None:
    faults = Faults()
    faults.set(1, [Rule(kind="reset", share=1.0), Rule(kind="cut_watch", share=1.0)])
    hit = faults.choose(RequestKind("watch", "pods"), open_watch=True)
    assert hit is not None
    assert hit.kind == "cut_watch"
    assert faults.stats.requests == {}, "an open watch is not a new request"


def test_rules_refuse_what_they_cannot_do() -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        Rule.from_json({"kind": "explode"})
    with pytest.raises(ValueError, match="share"):
        Rule.from_json({"kind": "reset", "share": 2})
    assert Rule.from_json({"kind": "stall", "seconds": 3600}).seconds == 30.0


def test_quantities() -> None:
    assert quantity("250m") == Decimal("0.25")
    assert quantity("1Gi") == 2**30
    assert quantity("2k") == 2000
    assert quantity("1e3") == 1000
    assert quantity(4) == 4


def _node(name: str, cpu: str, pods: str = "110") -> dict[str, object]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "pods": pods}}}


def _pod(node: str | None, cpu: str, phase: str = "Running") -> dict[str, object]:
    return {
        "metadata": {"name": "p", "namespace": "a"},
        "spec": {"nodeName": node, "containers": [{"resources": {"requests": {"cpu": cpu}}}]},
        "status": {"phase": phase},
    }


def test_over_commitment_counts_bound_unfinished_pods_only() -> None:
    nodes = [_node("n", "4", pods="3")]
    fits = [_pod("n", "2"), _pod("n", "2"), _pod("n", "3", phase="Succeeded"), _pod(None, "9")]
    assert over_committed(nodes, fits) == []
    (cpu,) = over_committed(nodes, [*fits, _pod("n", "500m")])
    assert "cpu requested 4.5" in cpu.detail
    too_many = [_pod("n", "1m") for _ in range(4)]
    assert [v.detail.split(":")[1].split()[0] for v in over_committed(nodes, too_many)] == ["pods"]


def test_status_counters_from_members() -> None:
    members = [
        _pod("n", "1"),
        _pod("n", "1", phase="Pending"),
        _pod(None, "1", phase="Pending"),
        _pod("n", "1", phase="Succeeded"),
    ]
    assert counted_status(members) == {"pending": 1, "scheduled": 3, "running": 1, "succeeded": 1}


def test_a_409_on_a_binding_is_a_violation_unless_another_outcome_was_unknown() -> None:
    clean = {"bindings": {"/p/a/binding": ["201"], "/p/b/binding": ["injected 503", "201"]}}
    assert double_bindings(clean) == (0, 0, [])
    explained = {
        "bindings": {
            "/p/a/binding": ["201 undelivered", "409 undelivered", "409"],
            "/p/b/binding": ["503", "409"],
            "/p/c/binding": ["upstream error", "409"],
            "/p/d/binding": ["201 lost", "409"],
            # Retries waiting together on etcd: the last to arrive committed first.
            "/p/e/binding": ["409 undelivered", "409 undelivered", "201"],
        }
    }
    assert double_bindings(explained) == (7, 7, [])
    unexplained = {
        "bindings": {
            "/p/a/binding": ["injected reset", "409"],
            "/p/b/binding": ["201 undelivered", "201", "409"],
        }
    }
    conflicts, unknown, violations = double_bindings(unexplained)
    assert (conflicts, unknown) == (2, 1)
    assert [v.kind for v in violations] == ["pod bound twice"] * 2


def test_rss_growth_flags_a_climb_not_a_plateau() -> None:
    plateau = [(float(t), 1, 100.0 + min(t, 30)) for t in range(0, 300, 5)]
    assert rss_growth(plateau) == []
    leak = [(float(t), 2, 100.0 + t) for t in range(0, 300, 5)]
    assert [v.kind for v in rss_growth(leak)] == ["scheduler memory grows"]
    short = [(float(t), 3, 100.0 + 10 * t) for t in range(0, 60, 5)]
    assert rss_growth(short) == []
