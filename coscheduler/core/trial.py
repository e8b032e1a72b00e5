"""The trial: placing the members a group needs, in order, on one statement.

Rule 5 of :mod:`~coscheduler.core.planner`: members are assumed in member
order until every role's minimum and ``minMember`` are reached; a member that
does not fit is skipped (another of the same role may), and its shape is not
tried again in this trial. The caller commits or discards the statement.

Roles with their own ``topology`` (a role kept inside one domain) are placed
first, role by role in name order, each inside the first domain of its levels
that holds the role's needed members (tried as :mod:`~coscheduler.core.domains`
orders them, each try on a child statement that is discarded when it falls
short); the other roles, and the members beyond the role minimums, follow as
usual. A role's members beyond its minimum stay out of the slack, so they
never land outside their role's domain. The choice is greedy across roles:
an earlier role's domain is not revisited for a later role's sake.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from coscheduler.api.pod import PodInfo
from coscheduler.core.attempt import Attempt
from coscheduler.core.diagnosis import Diagnosis
from coscheduler.core.domains import candidate_domains
from coscheduler.core.placement import place_run
from coscheduler.core.scoring import Scoring
from coscheduler.core.statement import Statement

__all__ = ["Failure", "Trial", "greedy_trial", "run_trial", "runs"]


class Failure(NamedTuple):
    """The first member that did not fit in a trial, and why."""

    pod: PodInfo
    diagnosis: Diagnosis


class Trial(NamedTuple):
    """Rule 5's outcome: how many were placed, the members not placed, the first failure."""

    placed: int
    rest: list[PodInfo]
    failure: Failure | None
    #: What the trial's failure message starts with, when the plain histogram is not enough.
    note: str = ""


def greedy_trial(
    statement: Statement,
    pending: Sequence[PodInfo],
    role_needs: Mapping[str, int],
    needed: int,
    scoring: Scoring,
) -> Trial:
    """Rule 5: place members in order until the needs are met or none is left."""
    needs: dict[str | None, int] = {}
    needs.update(role_needs)
    slack = needed - sum(needs.values())
    placed = 0
    rest: list[PodInfo] = []
    failed_shapes: set[tuple[object, ...]] = set()
    failure: Failure | None = None
    for run in runs(pending):
        role = run[0].role
        useful = min(len(run), needs.get(role, 0) + slack)
        if placed == needed or useful == 0 or run[0].shape in failed_shapes:
            rest.extend(run)
            continue
        count = place_run(statement, run[:useful], scoring)
        own = min(count, needs.get(role, 0))
        if own:
            needs[role] -= own
        slack -= count - own
        placed += count
        rest.extend(run[count:])
        if count < useful:
            failed_shapes.add(run[0].shape)
            if failure is None:
                failure = Failure(run[count], statement.snapshot.diagnose(run[count]))
    return Trial(placed, rest, failure)


def run_trial(statement: Statement, attempt: Attempt) -> Trial:
    """The trial, with roles kept in their own domains first when the policy says so."""
    policy, pending, bound = attempt.policy, attempt.pending, attempt.bound
    role_needs, needed, scoring = attempt.role_needs, attempt.needed, attempt.scoring
    if not policy.role_topology:
        return greedy_trial(statement, pending, role_needs, needed, scoring)
    placed = 0
    rest: list[PodInfo] = []
    for role, levels in sorted(policy.role_topology.items()):
        members = [pod for pod in pending if pod.role == role]
        need = role_needs.get(role, 0)
        if need == 0 or not members:
            continue
        held = [pod.node_name for pod in bound if pod.role == role and pod.node_name]
        outcome = _role_in_one_domain(statement, members, role, need, levels, held, scoring)
        if outcome.placed < need:
            return Trial(placed + outcome.placed, list(pending), outcome.failure, outcome.note)
        placed += outcome.placed
        rest.extend(outcome.rest)
    others = [pod for pod in pending if pod.role not in policy.role_topology]
    free_needs = {r: n for r, n in role_needs.items() if r not in policy.role_topology}
    tail = greedy_trial(statement, others, free_needs, needed - placed, scoring)
    return Trial(placed + tail.placed, rest + tail.rest, tail.failure, tail.note)


def _role_in_one_domain(
    statement: Statement,
    members: list[PodInfo],
    role: str,
    need: int,
    levels: Sequence[str],
    held: Sequence[str],
    scoring: Scoring,
) -> Trial:
    """One role's needed members inside one domain of its levels, or the closest try."""

    snapshot = statement.snapshot
    closest: Trial | None = None
    for key in levels:
        for domain in candidate_domains(snapshot, key, members[0], need, held):
            within = domain.nodes if statement.within is None else domain.nodes & statement.within
            child = Statement(snapshot, within=within)
            trial = greedy_trial(child, members, {role: need}, need, scoring)
            if trial.placed >= need:
                statement.absorb(child)
                return trial
            child.discard()
            if closest is None or trial.placed > closest.placed:
                note = (
                    f"role {role}: no domain of {levels[-1]} holds its {need} needed members; "
                    f"closest: {domain}, with room for {trial.placed} of {need}"
                )
                closest = Trial(trial.placed, members, trial.failure, note)
    if closest is None:
        note = f"role {role}: no node carries {levels[-1]} (or its bound members span domains)"
        return Trial(0, members, None, note)
    return Trial(0, members, closest.failure, closest.note)


def runs(pods: Sequence[PodInfo]) -> list[list[PodInfo]]:
    """Consecutive members of one shape and role."""
    runs: list[list[PodInfo]] = []
    for pod in pods:
        if runs and runs[-1][0].shape == pod.shape and runs[-1][0].role == pod.role:
            runs[-1].append(pod)
        else:
            runs.append([pod])
    return runs
