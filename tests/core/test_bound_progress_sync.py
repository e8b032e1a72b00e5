"""A bound member's progress does not re-sync its group, and loses nothing.

The property: for any sequence of decisions, confirmations, progress, failed
bindings, deletions, recreations, group changes and time, a scheduler that
skips the sync of a bound member staying bound ends in the same core state
(queue, members, first attempts, accounts, preemptions) and takes the same
decisions as one that runs the full sync on every pod update.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.pod import PodInfo
from coscheduler.core import GroupPolicy, Scheduler
from coscheduler.core.group import GroupKey
from coscheduler.core.statement import Binding
from tests.builders import Clock, gang, group, node, pod

GROUPS = ("a", "b", "c")


def _world() -> tuple[list[GroupPolicy], list[PodInfo]]:
    policies = [group("a", 2), group("b", 3, priority=5), group("c", 1)]
    pods = [*gang("a", 3, cpu="1"), *gang("b", 3, cpu="2"), *gang("c", 2, cpu="1")]
    pods.append(pod("lone", cpu="1"))
    return policies, pods


def _state(scheduler: Scheduler) -> dict[str, Any]:
    """What a sync can change, as plain values."""
    queue = {
        name: value
        for name, value in vars(scheduler.queue).items()
        if name not in ("_clock", "settings", "_share")
    }
    membership = scheduler._membership
    members = {
        key: (sorted(record.pending), sorted(record.bound))
        for key, record in membership._members.items()
    }
    accounts = scheduler._accounts
    preemptions = scheduler.preemptions
    return {
        "queue": queue,
        "members": members,
        "member_of": dict(membership._member_of),
        "first_attempt": dict(scheduler._pipeline.first_attempt),
        "accounts": (accounts.on, dict(accounts._charged), dict(accounts._claiming)),
        "preemptions": (
            dict(preemptions._holds),
            dict(preemptions._restores),
            dict(preemptions._doomed),
            dict(preemptions._memory),
            dict(preemptions._notes),
        ),
    }


operations = st.lists(
    st.one_of(
        st.tuples(st.just("decide")),
        st.tuples(
            st.sampled_from(["confirm", "run", "finish", "fail", "delete", "recreate"]),
            st.integers(0, 8),
        ),
        st.tuples(
            st.just("group"),
            st.sampled_from(GROUPS),
            st.integers(1, 3),
            st.sampled_from([None, 0, 9]),
        ),
        st.tuples(st.just("tick"), st.sampled_from([0.5, 5.0, 60.0])),
    ),
    max_size=40,
)


def _apply(
    scheduler: Scheduler, clock: Clock, originals: list[PodInfo], op: tuple[Any, ...]
) -> Any:
    """One step; what it answers (a decision's bindings) must be alike in both."""
    match op:
        case ("decide",):
            decision = scheduler.next_decision()
            return None if decision is None else (decision.group, decision.bindings)
        case ("tick", seconds):
            clock.advance(seconds)
        case ("group", name, min_member, priority):
            scheduler.upsert_group(group(name, min_member, priority=priority))
        case (verb, index):
            original = originals[index % len(originals)]
            known = scheduler.pod(original.uid)
            node_name = scheduler.snapshot.node_of(original.uid)
            if verb == "recreate":
                if known is None:
                    scheduler.upsert_pod(original)
            elif known is None:
                pass
            elif verb == "delete":
                scheduler.remove_pod(original.uid)
            elif verb == "fail":
                if not known.bound and scheduler.snapshot.is_assumed(original.uid):
                    assert node_name is not None
                    scheduler.binding_failed(
                        Binding(known.namespace, known.name, known.uid, node_name)
                    )
            elif node_name is not None:
                phase = {"confirm": known.phase, "run": "Running", "finish": "Succeeded"}[verb]
                scheduler.upsert_pod(dataclasses.replace(known, node_name=node_name, phase=phase))
    return None


@given(operations)
def test_skipping_a_bound_members_sync_keeps_the_full_syncs_state(ops: list[Any]) -> None:
    policies, pods = _world()
    runs = []
    for skip in (True, False):
        clock = Clock()
        scheduler = Scheduler(clock)
        scheduler.skip_unchanged_sync = skip
        for i in range(4):
            scheduler.upsert_node(node(f"n{i}", cpu="4"))
        for policy in policies:
            scheduler.upsert_group(policy)
        for member in pods:
            scheduler.upsert_pod(member)
        runs.append((scheduler, clock))
    (lean, lean_clock), (full, full_clock) = runs
    for op in ops:
        assert _apply(lean, lean_clock, pods, op) == _apply(full, full_clock, pods, op), op
        assert _state(lean) == _state(full), op


def test_a_bound_members_progress_does_not_sync_its_group(monkeypatch: Any) -> None:
    scheduler = Scheduler(Clock())
    scheduler.upsert_node(node("n0", cpu="4"))
    scheduler.upsert_group(group("a", 2))
    members = gang("a", 2, cpu="1")
    for member in members:
        scheduler.upsert_pod(member)
    decision = scheduler.next_decision()
    assert decision is not None
    assert len(decision.bindings) == 2
    synced: list[GroupKey] = []
    monkeypatch.setattr(scheduler, "_sync", synced.append)
    bound = dataclasses.replace(members[0], node_name="n0")
    scheduler.upsert_pod(bound)  # the Binding's own update: assumed, now bound
    scheduler.upsert_pod(dataclasses.replace(bound, phase="Running"))
    assert synced == []
    scheduler.upsert_pod(dataclasses.replace(bound, phase="Succeeded"))  # leaves the group
    assert synced == [GroupKey("default", "a")]
