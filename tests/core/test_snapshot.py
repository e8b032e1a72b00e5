"""The snapshot: incremental updates, assume/forget, vector answers equal plain ones."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from coscheduler.core import Snapshot, Statement
from coscheduler.core.filters import check_node
from tests.builders import node, pod


def test_pods_count_whoever_bound_them_until_terminal() -> None:
    snapshot = Snapshot()
    snapshot.upsert_node(node("a", cpu="4"))
    other = pod("x", cpu="3", node="a", scheduler="default-scheduler")
    snapshot.update_pod(other)
    assert snapshot.allocated("a") == {"cpu": 3000, "pods": 1}
    snapshot.update_pod(pod("x", cpu="3", node="a", phase="Succeeded"))
    assert snapshot.allocated("a") == {}
    assert snapshot.free_capacity()["cpu"] == 4000


def test_pod_on_unknown_node_applies_when_node_arrives() -> None:
    snapshot = Snapshot()
    snapshot.update_pod(pod("x", cpu="3", node="a"))
    snapshot.upsert_node(node("a", cpu="4"))
    assert snapshot.free_capacity()["cpu"] == 1000
    snapshot.remove_node("a")
    snapshot.upsert_node(node("a", cpu="8"))
    assert snapshot.free_capacity()["cpu"] == 5000


def test_assume_then_forget_and_confirmation() -> None:
    snapshot = Snapshot()
    snapshot.upsert_node(node("a", cpu="4"))
    p = pod("p", cpu="2")
    snapshot.assume(p, "a")
    snapshot.update_pod(p)  # the watch still shows it pending: stays assumed
    assert snapshot.is_assumed(p.uid)
    assert snapshot.node_of(p.uid) == "a"
    assert snapshot.forget(p.uid)
    assert snapshot.allocated("a") == {}
    snapshot.assume(p, "a")
    snapshot.update_pod(pod("p", cpu="2", node="a"))  # confirmed bound
    assert not snapshot.is_assumed(p.uid)
    assert not snapshot.forget(p.uid)
    assert snapshot.allocated("a") == {"cpu": 2000, "pods": 1}


def test_bound_where_assumed_counts_once_and_elsewhere_or_resized_moves() -> None:
    snapshot = Snapshot()
    snapshot.upsert_node(node("a", cpu="8", labels={"zone": "x"}))
    snapshot.upsert_node(node("b", cpu="8"))
    snapshot.assume_many([pod("p", cpu="2"), pod("q", cpu="2"), pod("r", cpu="2")], "a")
    # Bound where assumed, asking the same (with a new label): confirmed, counted once.
    snapshot.update_pod(pod("p", cpu="2", node="a", labels={"app": "w"}))
    assert not snapshot.is_assumed("uid-default-p")
    assert snapshot.node_of("uid-default-p") == "a"
    # Bound elsewhere: moves.
    snapshot.update_pod(pod("q", cpu="2", node="b"))
    # Bound where assumed but asking more (resized meanwhile): counted as it asks now.
    snapshot.update_pod(pod("r", cpu="3", node="a"))
    assert snapshot.allocated("a") == {"cpu": 5000, "pods": 2}
    assert snapshot.allocated("b") == {"cpu": 2000, "pods": 1}
    assert not any(snapshot.is_assumed(f"uid-default-{n}") for n in "pqr")
    snapshot.update_pod(pod("p", cpu="2", node="a", phase="Succeeded"))
    assert snapshot.allocated("a") == {"cpu": 3000, "pods": 1}


def test_statement_discard_restores_exactly() -> None:
    snapshot = Snapshot()
    snapshot.upsert_node(node("a", cpu="4", extra={"nvidia.com/gpu": "2"}))
    statement = Statement(snapshot)
    statement.assume(
        [
            pod("p", cpu="1", requests={"nvidia.com/gpu": "1"}),
            pod("q", cpu="1", requests={"nvidia.com/gpu": "1"}),
        ],
        "a",
    )
    assert snapshot.allocated("a")["nvidia.com/gpu"] == 2
    statement.discard()
    assert snapshot.allocated("a") == {}
    assert snapshot.free_capacity()["nvidia.com/gpu"] == 2


def test_vector_feasibility_agrees_with_plain_filters() -> None:
    snapshot = Snapshot()
    nodes = [
        node("a", cpu="2"),
        node("b", labels={"zone": "x"}),
        node("c", taints=[("gpu", "true", "NoSchedule")]),
        node("d", unschedulable=True),
        node("e", cpu="8", extra={"nvidia.com/gpu": "1"}),
    ]
    for n in nodes:
        snapshot.upsert_node(n)
    snapshot.update_pod(pod("hp", node="e", host_ports=[80]))
    pods = [
        pod("p1", cpu="4"),
        pod("p2", node_selector={"zone": "x"}),
        pod("p3", tolerations=[{"operator": "Exists"}]),
        pod("p4", requests={"nvidia.com/gpu": "1"}),
        pod("p5", host_ports=[80]),
        pod(
            "p6",
            affinity_terms=[
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b", "c"]}]}
            ],
        ),
    ]
    for p in pods:
        mask = snapshot.feasible(p)
        for n in nodes:
            slot = snapshot._slots[n.name]
            plain = check_node(p, n, snapshot.allocated(n.name), snapshot.ports_on(n.name))
            assert bool(mask[slot]) == (plain is None), (p.name, n.name, plain)


def test_node_updates_keep_usage_and_classes() -> None:
    snapshot = Snapshot()
    snapshot.upsert_node(node("a", cpu="4"))
    snapshot.update_pod(pod("x", cpu="1", node="a"))
    snapshot.upsert_node(node("a", cpu="4", taints=[("t", "", "NoSchedule")]))
    assert not snapshot.feasible(pod("p"))[0]
    snapshot.upsert_node(node("a", cpu="4"))
    assert snapshot.feasible(pod("p"))[0]
    assert snapshot.free_capacity()["cpu"] == 3000
    assert [n.name for n in snapshot.nodes()] == ["a"]


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(1, 16), st.booleans(), st.booleans()),
        max_size=40,
    )
)
def test_capacity_sums_leave_out_cordoned_and_removed_nodes(
    steps: list[tuple[int, int, bool, bool]],
) -> None:
    """Whatever nodes come, change (cordoned or not) and go, the capacity and free capacity
    of schedulable nodes equal the plain sums over the nodes as they are now."""
    snapshot = Snapshot()
    snapshot.update_pod(pod("x", cpu="1", node="n0"))
    now: dict[str, tuple[int, bool]] = {}
    for index, cores, cordoned, remove in steps:
        name = f"n{index}"
        if remove:
            snapshot.remove_node(name)
            now.pop(name, None)
        else:
            snapshot.upsert_node(node(name, cpu=str(cores), unschedulable=cordoned))
            now[name] = (cores, cordoned)
    open_nodes = {name: cores for name, (cores, cordoned) in now.items() if not cordoned}
    used = 1000 if "n0" in open_nodes else 0
    assert snapshot.capacity().get("cpu", 0) == 1000 * sum(open_nodes.values())
    free = snapshot.free_capacity().get("cpu", 0)
    assert free == 1000 * sum(open_nodes.values()) - min(used, 1000 * open_nodes.get("n0", 0))
    every = snapshot.free_capacity(schedulable_only=False).get("cpu", 0)
    in_use = 1000 if "n0" in now else 0
    assert every == 1000 * sum(cores for cores, _ in now.values()) - in_use


@given(
    st.lists(st.integers(1, 64), min_size=1, max_size=12),
    st.lists(
        st.tuples(st.integers(0, 11), st.integers(1, 4), st.integers(0, 2), st.booleans()),
        max_size=40,
    ),
    st.data(),
)
def test_vector_reads_and_counts_equal_plain_indexing(
    cores: list[int], steps: list[tuple[int, int, int, bool]], data: st.DataObject
) -> None:
    """Whatever pods are assumed and forgotten: the used rows equal the plain sums of the
    pods placed, and ``rows``/``room`` equal reading the matrices by plain indexing."""
    snapshot = Snapshot()
    for index, count in enumerate(cores):
        snapshot.upsert_node(node(f"n{index}", cpu=str(count), extra={"example.com/x": "9"}))
    placed: dict[str, tuple[str, int, int]] = {}
    for index, (slot, cpu, extra, forget) in enumerate(steps):
        name = f"n{slot % len(cores)}"
        uid = f"p{index % 7}"
        if forget and uid in placed:
            assert snapshot.forget(pod(uid).uid)
            placed.pop(uid)
            continue
        asked = {"example.com/x": str(extra)} if extra else None
        snapshot.assume(pod(uid, cpu=str(cpu), requests=asked), name)
        placed[uid] = (name, cpu, extra)
    for index in range(len(cores)):
        mine = [(cpu, extra) for name, cpu, extra in placed.values() if name == f"n{index}"]
        row = snapshot._used[snapshot.slot_of(f"n{index}")]
        assert row[snapshot.columns.column("cpu")] == 1000 * sum(c for c, _ in mine)
        assert row[snapshot.columns.column("example.com/x")] == sum(x for _, x in mine)
        assert row[snapshot.columns.column("pods")] == len(mine)
    slots = np.array(
        data.draw(st.lists(st.integers(0, len(cores) - 1), max_size=20)), dtype=np.intp
    )
    allocatable, used = snapshot.rows(slots)
    assert np.array_equal(allocatable, snapshot._alloc[slots])
    assert np.array_equal(used, snapshot._used[slots])
    shape = pod("shape", cpu="1", requests={"example.com/x": "1"})
    columns = [c for c, a in snapshot.request(shape).items() if a > 0]
    plain = ((snapshot._alloc[slots][:, columns] - snapshot._used[slots][:, columns])
             // np.array([snapshot.request(shape)[c] for c in columns])).min(axis=1)  # fmt: skip
    assert np.array_equal(snapshot.room(shape, slots), plain)
