"""Placing a run of identical pods: the planner's inner loop.

Pods of one shape (see :attr:`PodInfo.shape`) fit exactly the same nodes, so a
run of them is placed with one vector pass over the nodes: filter, score and
sort once, then walk the ranking. The result is the same as placing the pods
one by one, each on the best node at that moment:

- most-allocated: a node only gains score when it receives a pod, so the best
  node stays best until it is full; each node takes as many pods as fit, at
  once, and the walk moves to the next node in the ranking;
- least-allocated: a node loses score when it receives a pod, so it goes back
  into a heap with its new score (computed by the same arithmetic) and the
  next pod takes whichever is best, the heap's top or the ranking's next.

Cost per run: O(n log n) in vector operations for n nodes, plus Python work
per node *used* (packing) or per pod (spreading), never per node per pod.

Pods with inter-pod rules (pod affinity, anti-affinity, spread) change where
the next pod of their run may go: they are placed one at a time, each on the
best node the run's :class:`~coscheduler.core.topology.RunRules` still allow,
which are updated after each pod (a few vector operations per pod).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from coscheduler.api.pod import PodInfo
from coscheduler.core.devices import DeviceRefusalError
from coscheduler.core.scoring import Scoring, score, scored_columns, scores
from coscheduler.core.statement import Statement
from coscheduler.core.strategy import Strategy
from coscheduler.core.topology import RunRules

__all__ = ["place_run"]

#: Most-allocated, every resource weighing 1.
_DEFAULT = Scoring()


def place_run(statement: Statement, pods: Sequence[PodInfo], scoring: Scoring = _DEFAULT) -> int:
    """Assume as many of ``pods`` (one shape) as fit, in order; how many did."""
    if not pods:
        return 0
    snapshot = statement.snapshot
    first = pods[0]
    if first.device_claims:
        return _with_devices(statement, pods, scoring)
    if first.topology or first.preferences:
        return _one_by_one(statement, pods, scoring)
    if snapshot.topology.has_anti_terms and any(pod.labels != first.labels for pod in pods):
        # Placed pods' anti-affinity may refuse some of these pods and not others.
        return _by_labels(statement, pods, scoring)
    strategy = scoring.strategy
    mask = snapshot.feasible(first)
    if statement.within is not None:
        mask &= statement.within
    slots = np.flatnonzero(mask)
    if len(slots) == 0:
        return 0
    allocatable, used = snapshot.rows(slots)
    request = snapshot.request(first)
    columns = [column for column, amount in request.items() if amount > 0]
    amounts = np.array([request[column] for column in columns], dtype=np.int64)
    room = ((allocatable.take(columns, axis=1) - used.take(columns, axis=1)) // amounts).min(axis=1)
    if first.host_ports:
        room = np.minimum(room, 1)
    attach = snapshot.attach_room(first, slots)
    if attach is not None:
        room = np.minimum(room, attach)
    scored = scored_columns(first.requests, snapshot.columns, scoring.weights)
    ranking = scores(strategy, allocatable, used, request, scored)
    ranks = snapshot.ranks(slots)
    ordered = np.lexsort((ranks, -ranking))
    if strategy.packs:
        # Packing fills the best nodes in order until the run is placed: only that
        # prefix of the ranking is walked in Python, not every feasible node.
        enough = int(np.searchsorted(np.cumsum(room[ordered]), len(pods))) + 1
        used_order = ordered[:enough]
        return _pack(statement, pods, slots[used_order].tolist(), room[used_order].tolist())
    return _spread(
        statement,
        pods,
        slots.tolist(),
        room.tolist(),
        ordered.tolist(),
        _Ranking(allocatable, used, request, scored, ranking.tolist(), ranks.tolist()),
        strategy,
    )


class _Ranking(NamedTuple):
    """What spreading re-scores a node with after each pod it takes."""

    allocatable: np.ndarray
    used: np.ndarray
    request: dict[int, int]
    scored: list[tuple[int, float]]
    scores: list[float]
    ranks: list[int]


def _pack(statement: Statement, pods: Sequence[PodInfo], slots: list[int], room: list[int]) -> int:
    """Fill ``slots`` (best first, each with its ``room``) in order until the pods are placed."""
    placed = 0
    for slot, free in zip(slots, room, strict=True):
        if placed == len(pods):
            break
        count = min(free, len(pods) - placed)
        if count > 0:
            statement.assume(pods[placed : placed + count], statement.snapshot.name_of(slot))
            placed += count
    return placed


def _spread(
    statement: Statement,
    pods: Sequence[PodInfo],
    slots: list[int],
    room: list[int],
    order: list[int],
    state: _Ranking,
    strategy: Strategy,
) -> int:
    allocatable, used, request, scored = state.allocatable, state.used, state.request, state.scored
    ranking, ranks = state.scores, state.ranks
    heap: list[tuple[float, int, int]] = []
    cursor = 0
    placed = 0
    request_columns = list(request)
    request_amounts = np.array([request[c] for c in request_columns], dtype=np.int64)
    while placed < len(pods):
        stream = order[cursor] if cursor < len(order) else None
        if stream is not None and (not heap or (-ranking[stream], ranks[stream]) < heap[0][:2]):
            index = stream
            cursor += 1
        elif heap:
            index = heapq.heappop(heap)[2]
        else:
            break
        statement.assume(pods[placed : placed + 1], statement.snapshot.name_of(slots[index]))
        placed += 1
        room[index] -= 1
        if room[index] > 0:
            used[index, request_columns] += request_amounts
            again = score(
                strategy, allocatable[index].tolist(), used[index].tolist(), request, scored
            )
            heapq.heappush(heap, (-again, ranks[index], index))
    return placed


def _by_labels(statement: Statement, pods: Sequence[PodInfo], scoring: Scoring) -> int:
    """Place consecutive pods of equal labels as runs, stopping at the first shortfall."""
    placed = 0
    start = 0
    for end in range(1, len(pods) + 1):
        if end < len(pods) and pods[end].labels == pods[start].labels:
            continue
        count = place_run(statement, pods[start:end], scoring)
        placed += count
        if count < end - start:
            break
        start = end
    return placed


def _one_by_one(statement: Statement, pods: Sequence[PodInfo], scoring: Scoring) -> int:
    """Place pods with inter-pod rules or preferences one at a time, each on the best node allowed.

    The resource score is scaled to 0-100 here so that preferences
    (:mod:`~coscheduler.core.preferences`, 0-100 each, weighted 2) weigh
    against it as in kube-scheduler.
    """
    snapshot = statement.snapshot
    first = pods[0]
    rules = snapshot.rules(first)
    mask = snapshot.fits(first)
    if rules is not None:
        # Nodes outside ``rules.fixed`` never come back (only spread's verdicts
        # can), so the walk looks at the others only.
        mask &= rules.fixed
    if statement.within is not None:
        mask &= statement.within
    slots = np.flatnonzero(mask)
    if len(slots) == 0:
        return 0
    room = snapshot.room(first, slots)
    if rules is not None and rules.first_of_series is not None:
        _choose_domain(rules, slots, room, len(pods))
        slots = slots[rules.fixed[slots]]
        room = snapshot.room(first, slots)
    preferences = snapshot.preferences(first, slots)
    allocatable, used = snapshot.rows(slots)
    request = snapshot.request(first)
    strategy = scoring.strategy
    scored = scored_columns(first.requests, snapshot.columns, scoring.weights)
    scale = 100.0 / sum(weight for _, weight in scored)
    ranking = scores(strategy, allocatable, used, request, scored).astype(np.float64) * scale
    ranks = snapshot.ranks(slots)
    request_columns = list(request)
    request_amounts = np.array([request[c] for c in request_columns], dtype=np.int64)
    placed = 0
    while placed < len(pods):
        candidates = room > 0
        if rules is not None:
            candidates &= rules.mask[slots]
        if not candidates.any():
            break
        total = ranking if preferences is None else ranking + preferences.scores()
        best = np.where(candidates, total, -np.inf)
        ties = np.flatnonzero(best == best.max())
        index = int(ties[np.argmin(ranks[ties])])
        slot = int(slots[index])
        statement.assume(pods[placed : placed + 1], snapshot.name_of(slot))
        if rules is not None:
            rules.placed(slot)
        if preferences is not None:
            preferences.placed(index)
        placed += 1
        room[index] -= 1
        used[index, request_columns] += request_amounts
        ranking[index] = scale * score(
            strategy, allocatable[index].tolist(), used[index].tolist(), request, scored
        )
    return placed


def _with_devices(statement: Statement, pods: Sequence[PodInfo], scoring: Scoring) -> int:
    """Place pods with DRA claims one at a time, each on the best node where its claims get devices.

    Nodes are walked in the resource ranking's order; the first whose devices
    satisfy every claim of the pod (:meth:`~coscheduler.core.devices.DeviceIndex.fit`)
    takes it, and the devices are counted on the statement, so the next member
    sees them taken and a discarded trial gives them back. A run's pods ask
    alike (claims from the same templates), so when packing the ranking is
    computed once per run (a node only gains score as it takes pods); when
    spreading, once per pod. Inter-pod rules are honoured (the run's
    verdicts); preferences are not scored on this path.
    """
    snapshot = statement.snapshot
    devices = snapshot.devices
    rules = snapshot.rules(pods[0])
    walk: _Walk | None = None
    placed = 0
    for pod in pods:
        try:
            claims = devices.claim_keys(pod.namespace, pod.name, pod.device_claims)
        except DeviceRefusalError:
            break
        need = devices.least_need(claims)
        if walk is None or not scoring.strategy.packs:
            walk = _device_walk(statement, pod, need, scoring, rules)
        chosen = None
        for index in walk.order:
            slot = int(walk.slots[index])
            if walk.room[index] <= 0 or (rules is not None and not rules.mask[slot]):
                continue
            name = snapshot.name_of(slot)
            if need and devices.room_on(name) < need:
                continue
            node = snapshot.node(name)
            assert node is not None
            try:
                chosen = (index, devices.fit(pod.uid, claims, node))
            except DeviceRefusalError as refusal:
                if refusal.anywhere:
                    return placed
                continue
            break
        if chosen is None:
            break
        index, found = chosen
        slot = int(walk.slots[index])
        walk.room[index] -= 1
        statement.assume([pod], snapshot.name_of(slot))
        statement.assume_devices(found)
        if rules is not None:
            rules.placed(slot)
        placed += 1
    return placed


class _Walk(NamedTuple):
    """The nodes a pod with claims may take, best first, and the room each has for its shape."""

    slots: npt.NDArray[np.intp]
    order: list[int]
    room: npt.NDArray[np.int64]


def _device_walk(
    statement: Statement, pod: PodInfo, need: int, scoring: Scoring, rules: RunRules | None
) -> _Walk:
    snapshot = statement.snapshot
    mask = snapshot.fits(pod)
    if rules is not None:
        mask &= rules.fixed
    if statement.within is not None:
        mask &= statement.within
    slots = np.flatnonzero(mask)
    if need:
        # Nodes with too few devices left are not searched.
        slots = slots[snapshot.device_room(slots) >= need]
    allocatable, used = snapshot.rows(slots)
    request = snapshot.request(pod)
    # The room for the shape, from the rows already read (as place_run does).
    columns = [column for column, amount in request.items() if amount > 0]
    amounts = np.array([request[column] for column in columns], dtype=np.int64)
    room = ((allocatable.take(columns, axis=1) - used.take(columns, axis=1)) // amounts).min(axis=1)
    if pod.host_ports:
        room = np.minimum(room, 1)
    attach = snapshot.attach_room(pod, slots)
    if attach is not None:
        room = np.minimum(room, attach)
    scored = scored_columns(pod.requests, snapshot.columns, scoring.weights)
    ranking = scores(scoring.strategy, allocatable, used, request, scored)
    order = np.lexsort((snapshot.ranks(slots), -ranking)).tolist()
    return _Walk(slots, order, room)


def _choose_domain(
    rules: RunRules, slots: npt.NDArray[np.intp], room: npt.NDArray[np.int64], wanted: int
) -> None:
    """Settle where a series with affinity to itself starts: not where the best node is.

    The best-scored node is often in the fullest domain (packing), where the
    run would not fit. Choose, among the domains of the first term's key, the
    one with the least room that still holds the whole run (large domains
    stay free for large gangs), else the one with the most room; name order
    breaks ties. Room counts one pod per node when the run also keeps its pods
    apart.
    """
    assert rules.first_of_series is not None
    domains = rules.first_of_series[0][slots]
    usable = rules.mask[slots] & (room > 0) & (domains >= 0)
    if not usable.any():
        return
    per_node = np.minimum(room, 1) if rules.self_anti else room
    totals = np.bincount(domains[usable], weights=per_node[usable]).astype(np.int64)
    present = np.flatnonzero(totals > 0)
    holding = present[totals[present] >= wanted]
    if len(holding):
        chosen = int(holding[np.argmin(totals[holding])])
    else:
        chosen = int(present[np.argmax(totals[present])])
    rules.settle_domain(chosen)
