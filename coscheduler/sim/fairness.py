"""How fairly a replay shared the cluster's cpu between queues.

A queue's *share* at a moment is the cpu bound to its gangs' pods (started
or not) over the cpu of the schedulable nodes. Only cpu is measured: it is
what the samples hold, and what a fairness benchmark compares.

The *fair share* of a queue at a moment is defined only while it is
*backlogged* (Open, with an arrived gang that has not started). Queues that
are not backlogged keep what they hold; the rest of the cluster (the *room*)
is divided among the backlogged ones by water-filling:

1. each first gets its nominal cpu (no more than its max);
2. what is left is split in proportion to the weights, no queue above its
   max (cpu max of the queue and of its parents); what a capped queue cannot
   take goes to the others, again by weight;
3. if the nominals alone exceed the room, they are scaled down to fit.

With weights only, that is ``w_i / sum(w)`` of the room over the backlogged
queues, which is what the core's weighted dominant share converges to. A tree
is flattened: a child counts its own nominal and the tightest max up its
parents, each child alone (not what its parents' nominal or max leave to the
children together).

Per queue, the time-weighted means while backlogged of its share and of its
fair share give its *deviation* (share minus fair share). The figures over all
queues are the largest absolute deviation and Jain's index over
``x_i = share_i / fair share_i`` (1 when every queue got exactly its fair
share, ``1/n`` when one took everything); with weights only and every queue
backlogged, ``x_i`` is the share divided by the weight, up to a constant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from coscheduler.core.fairness import Entitlement, entitlements, fair_shares
from coscheduler.sim.replay import Replay

__all__ = [
    "Entitlement",
    "Fairness",
    "QueueShare",
    "entitlements",
    "fair_shares",
    "fairness",
    "jain_index",
    "share_windows",
]


@dataclass(frozen=True, slots=True)
class QueueShare:
    """One queue's figures over a replay (fractions of the cluster's cpu)."""

    name: str
    entitlement: Entitlement
    #: Seconds during which it was backlogged.
    backlogged_seconds: float
    #: Mean share over the whole replay.
    mean_share: float
    #: Means while backlogged (None when it never was).
    backlogged_share: float | None
    fair_share: float | None

    @property
    def deviation(self) -> float | None:
        if self.backlogged_share is None or self.fair_share is None:
            return None
        return self.backlogged_share - self.fair_share


@dataclass(frozen=True, slots=True)
class Fairness:
    queues: tuple[QueueShare, ...]
    #: The largest absolute deviation over the queues that were backlogged.
    max_deviation: float | None
    jain: float | None


def jain_index(values: Sequence[float]) -> float | None:
    """Jain's fairness index: (sum x)^2 / (n * sum x^2); None without values."""
    squares = sum(x * x for x in values)
    if not values or squares <= 0:
        return None
    return sum(values) ** 2 / (len(values) * squares)


def fairness(result: Replay) -> Fairness | None:
    """The figures of the module docstring; None when the scenario has no queues."""
    names = result.queue_names
    samples = result.queue_timeline
    if not names or not samples:
        return None
    terms = entitlements(result.queues, names, result.cpu_capacity)
    capacity = result.cpu_capacity or 1
    count = len(names)
    seconds = [0.0] * count
    held = [0.0] * count
    held_backlogged = [0.0] * count
    fair = [0.0] * count
    for (time, used, backlogged), (following, _, _) in zip(
        samples, [*samples[1:], samples[-1]], strict=True
    ):
        span = following - time
        if span <= 0:
            continue
        shares = [u / capacity for u in used]
        due = fair_shares(terms, backlogged, shares)
        for i in range(count):
            held[i] += shares[i] * span
            entitled = due[i]
            if entitled is not None:
                seconds[i] += span
                held_backlogged[i] += shares[i] * span
                fair[i] += entitled * span
    horizon = samples[-1][0] - samples[0][0]
    queues = tuple(
        QueueShare(
            name=name,
            entitlement=terms[i],
            backlogged_seconds=seconds[i],
            mean_share=held[i] / horizon if horizon > 0 else 0.0,
            backlogged_share=held_backlogged[i] / seconds[i] if seconds[i] else None,
            fair_share=fair[i] / seconds[i] if seconds[i] else None,
        )
        for i, name in enumerate(names)
    )
    deviations = [abs(d) for q in queues if (d := q.deviation) is not None]
    ratios = [
        q.backlogged_share / q.fair_share
        for q in queues
        if q.backlogged_share is not None and q.fair_share
    ]
    return Fairness(
        queues=queues,
        max_deviation=max(deviations) if deviations else None,
        jain=jain_index(ratios),
    )


def share_windows(result: Replay, windows: int) -> list[tuple[float, float, list[float]]]:
    """The replay cut into equal windows: (start, end, mean share per queue) for each."""
    samples = result.queue_timeline
    if not samples or windows < 1:
        return []
    begin, end = samples[0][0], samples[-1][0]
    width = (end - begin) / windows
    if width <= 0:
        return []
    capacity = result.cpu_capacity or 1
    edges = [begin + k * width for k in range(windows)] + [end]
    found = []
    for low, high in pairwise(edges):
        totals = [0.0] * len(result.queue_names)
        for (time, used, _), (following, _, _) in pairwise(samples):
            span = min(following, high) - max(time, low)
            if span > 0:
                for i, amount in enumerate(used):
                    totals[i] += amount / capacity * span
        found.append((low, high, [total / (high - low) for total in totals]))
    return found
