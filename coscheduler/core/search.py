"""An exact placement search, for a small gang the greedy trial could not place.

Why: the trial (:mod:`~coscheduler.core.planner`, rule 5) places members one
after another, each on the best node at that moment. That is fast, but not a
complete bin-packing: with members of different sizes it can fill a node with
small pods that a large one needed, and report "does not fit" where a packing
exists. Worse, the greedy answer is not monotone in capacity: a gang refused
on a freer cluster may fit later on a fuller one, and meanwhile the queue has
let lower-priority groups pass it. A search that answers exactly whether a
packing exists is monotone, so priority order holds.

The search is a depth-first backtracking over the members, by priority and
then largest first (first-fit-decreasing order finds most packings at once;
with members to spare, higher-priority ones are chosen first), each tried on every
node where it fits or left out when the group can spare it. Symmetry is cut:
identical members take nodes in non-decreasing order, and nodes that are
interchangeable for the members left (same static verdicts, same free room)
are tried once. It runs only when the greedy trial failed, only for gangs
of members that differ (for identical ones the trial is exact), without host
ports and without inter-pod rules (its node classes cannot see the pods
around a node: for such gangs the trial's answer stands, and the planner
says so), whose smallest members could fit in the free room summed, and within a
step budget: past it, the greedy answer stands. It cares about fitting, not
scoring: the nodes it picks are tried in name order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from coscheduler.api.pod import PodInfo
from coscheduler.core.snapshot import Snapshot

__all__ = ["STEP_BUDGET", "find_packing"]

# Node tries before the search gives up: some tens of milliseconds at most.
STEP_BUDGET: Final = 10_000
# Beyond these sizes the search is not even prepared: the budget would run out.
MAX_MEMBERS: Final = 64
MAX_NODES: Final = 256


@dataclass(slots=True)
class _Member:
    pod: PodInfo
    shape: int  # index into the shapes, for the static verdicts
    amounts: list[int]  # per searched column
    candidates: list[int]  # node indexes where the member fits alone now, in name order


class _BudgetSpentError(Exception):
    pass


def find_packing(
    snapshot: Snapshot,
    pending: Sequence[PodInfo],
    role_needs: Mapping[str, int],
    needed: int,
    *,
    budget: int = STEP_BUDGET,
) -> list[tuple[PodInfo, str]] | None:
    """Members and nodes that meet ``needed`` and every role's need, or None.

    None means either that no packing exists or that the search gave up (host
    ports, size, budget); the caller keeps its own answer then. The snapshot
    is only read.
    """
    if needed <= 0 or len(pending) > MAX_MEMBERS or any(pod.host_ports for pod in pending):
        return None
    if snapshot.topology.has_anti_terms or any(pod.topology for pod in pending):
        return None
    if any(pod.device_claims for pod in pending):
        return None  # node classes cannot see devices (DRA): the trial finds them
    if len({(pod.shape, pod.role) for pod in pending}) == 1:
        return None  # identical members: the trial's answer is exact already
    prepared = _prepare(snapshot, pending)
    if prepared is None:
        return None
    members, free, node_classes, names = prepared
    if not _room_enough(members, free, needed):
        return None
    search = _Search(members, free, node_classes, role_needs, needed, budget)
    try:
        found = search.run()
    except _BudgetSpentError:
        return None
    if found is None:
        return None
    return [(members[index].pod, names[node]) for index, node in found]


def _prepare(
    snapshot: Snapshot, pending: Sequence[PodInfo]
) -> tuple[list[_Member], list[list[int]], list[tuple[bool, ...]], list[str]] | None:
    """The members, largest first, and the free room of the nodes any of them fits."""
    shapes: dict[tuple[object, ...], int] = {}
    static: list[npt.NDArray[np.bool_]] = []
    fits: list[npt.NDArray[np.bool_]] = []
    requests: list[dict[int, int]] = []
    for pod in pending:
        if pod.shape not in shapes:
            shapes[pod.shape] = len(shapes)
            static.append(snapshot.static_mask(pod))
            fits.append(snapshot.feasible(pod))
            requests.append(snapshot.request(pod))
    slots = np.flatnonzero(np.logical_or.reduce(fits))
    if len(slots) == 0 or len(slots) > MAX_NODES:
        return None
    slots = slots[np.argsort(snapshot.ranks(slots), kind="stable")]
    columns = sorted({column for request in requests for column, a in request.items() if a > 0})
    allocatable, used = snapshot.rows(slots)
    free_rows = (allocatable[:, columns] - used[:, columns]).tolist()
    totals = [max(1, sum(row[i] for row in free_rows)) for i in range(len(columns))]
    node_classes = [tuple(bool(mask[slot]) for mask in static) for slot in slots.tolist()]
    members: list[_Member] = []
    for pod in pending:
        shape = shapes[pod.shape]
        amounts = [requests[shape].get(column, 0) for column in columns]
        fit = fits[shape][slots]
        members.append(_Member(pod, shape, amounts, np.flatnonzero(fit).tolist()))
    # Higher priority first, as the trial does; within a priority, largest first (by its
    # share of the free room), and identical members next to each other, which the
    # symmetry cut needs.
    order = sorted(
        range(len(members)),
        key=lambda i: (
            -members[i].pod.priority,
            -max(a / t for a, t in zip(members[i].amounts, totals, strict=True)),
            members[i].shape,
            i,
        ),
    )
    return [members[i] for i in order], free_rows, node_classes, _names(snapshot, slots)


def _room_enough(members: list[_Member], free: list[list[int]], needed: int) -> bool:
    """Whether the nodes' free room, summed, could hold the ``needed`` smallest members."""
    for column in range(len(free[0]) if free else 0):
        smallest = sorted(member.amounts[column] for member in members)[:needed]
        if sum(smallest) > sum(row[column] for row in free):
            return False
    return True


def _names(snapshot: Snapshot, slots: npt.NDArray[np.intp]) -> list[str]:
    return [snapshot.name_of(slot) for slot in slots.tolist()]


class _Search:
    """Depth-first search; ``run`` returns (member index, node index) pairs or None."""

    def __init__(
        self,
        members: list[_Member],
        free: list[list[int]],
        node_classes: list[tuple[bool, ...]],
        role_needs: Mapping[str, int],
        needed: int,
        budget: int,
    ) -> None:
        self.members = members
        self.free = free
        self.node_classes = node_classes
        self.needs: dict[str | None, int] = {}
        self.needs.update(role_needs)
        self.slack = needed - sum(role_needs.values())
        self.left = needed
        self.budget = budget
        self.chosen: list[tuple[int, int]] = []
        # Members of each role from index i on, to stop early when too few remain.
        self.after: list[dict[str | None, int]] = [{} for _ in range(len(members) + 1)]
        for i in range(len(members) - 1, -1, -1):
            counts = dict(self.after[i + 1])
            role = members[i].pod.role
            counts[role] = counts.get(role, 0) + 1
            self.after[i] = counts

    def run(self) -> list[tuple[int, int]] | None:
        return list(self.chosen) if self._visit(0, -1, placed_previous=True) else None

    def _possible(self, index: int) -> bool:
        remaining = self.after[index]
        if sum(remaining.values()) < self.left:
            return False
        return all(remaining.get(role, 0) >= need for role, need in self.needs.items())

    def _visit(self, index: int, previous_node: int, *, placed_previous: bool) -> bool:
        if self.left == 0:
            return True
        if index == len(self.members) or not self._possible(index):
            return False
        member = self.members[index]
        role = member.pod.role
        twin = index > 0 and self._twins(self.members[index - 1], member)
        own_need = self.needs.get(role, 0) > 0
        if (own_need or self.slack > 0) and (not twin or placed_previous):
            floor = previous_node if twin else -1
            tried: set[tuple[tuple[bool, ...], tuple[int, ...]]] = set()
            for node in member.candidates:
                if node < floor:
                    continue
                self.budget -= 1
                if self.budget < 0:
                    raise _BudgetSpentError
                room = self.free[node]
                if any(r < a for r, a in zip(room, member.amounts, strict=True)):
                    continue
                signature = (self.node_classes[node], tuple(room))
                if signature in tried:
                    continue
                tried.add(signature)
                self._take(member, node, role, own_need, +1)
                self.chosen.append((index, node))
                if self._visit(index + 1, node, placed_previous=True):
                    return True
                self.chosen.pop()
                self._take(member, node, role, own_need, -1)
        return self._visit(index + 1, -1, placed_previous=False)

    def _take(self, member: _Member, node: int, role: str | None, own: bool, sign: int) -> None:
        room = self.free[node]
        for column, amount in enumerate(member.amounts):
            room[column] -= sign * amount
        if own:
            self.needs[role] -= sign
        else:
            self.slack -= sign
        self.left -= sign

    @staticmethod
    def _twins(a: _Member, b: _Member) -> bool:
        return a.shape == b.shape and a.pod.role == b.pod.role
