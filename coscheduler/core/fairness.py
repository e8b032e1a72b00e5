"""Each queue's fair share of the cluster's cpu at one moment (water-filling).

The definition is :mod:`coscheduler.sim.fairness`'s (its module docstring):
nominals first, the rest of the room by weight among the backlogged queues,
no queue above its max. The simulator measures replays against it and the
dashboard shows it beside each queue's share as it stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coscheduler.core.quota import IMPLICIT_DEFAULT, QueuePolicy

__all__ = ["Entitlement", "entitlements", "fair_shares"]

#: Below this a remainder is rounding, not capacity.
_EPSILON = 1e-12


@dataclass(frozen=True, slots=True)
class Entitlement:
    """A queue's terms, in fractions of the cluster's cpu."""

    weight: int
    nominal: float = 0.0
    max: float = 1.0


def entitlements(
    queues: Sequence[QueuePolicy], names: Sequence[str], cpu_capacity: int
) -> list[Entitlement]:
    """Each named queue's weight, nominal cpu and cpu max (its parents' too) as fractions."""
    by_name = {queue.name: queue for queue in queues}
    capacity = cpu_capacity or 1
    found = []
    for name in names:
        queue = by_name.get(name, IMPLICIT_DEFAULT)
        cap = float(capacity)
        level: QueuePolicy | None = queue
        seen: set[str] = set()
        while level is not None and level.name not in seen:
            seen.add(level.name)
            cap = min(cap, level.max.get("cpu", cap))
            level = by_name.get(level.parent) if level.parent is not None else None
        found.append(
            Entitlement(
                weight=queue.weight,
                nominal=min(queue.nominal.get("cpu", 0), cap) / capacity,
                max=cap / capacity,
            )
        )
    return found


def fair_shares(
    terms: Sequence[Entitlement], backlogged: Sequence[bool], shares: Sequence[float]
) -> list[float | None]:
    """Each backlogged queue's fair share at one moment (None for the others); module doc."""
    chosen = [i for i, waiting in enumerate(backlogged) if waiting]
    kept = sum(s for s, waiting in zip(shares, backlogged, strict=True) if not waiting)
    room = max(0.0, 1.0 - kept)
    give = {i: min(terms[i].nominal, terms[i].max) for i in chosen}
    floor = sum(give.values())
    if floor >= room:
        scale = room / floor if floor > 0 else 0.0
        return [give[i] * scale if i in give else None for i in range(len(terms))]
    rest = room - floor
    open_to_more = [i for i in chosen if give[i] < terms[i].max]
    while rest > _EPSILON and open_to_more:
        weights = sum(terms[i].weight for i in open_to_more)
        capped = [
            i for i in open_to_more if give[i] + rest * terms[i].weight / weights >= terms[i].max
        ]
        if not capped:
            for i in open_to_more:
                give[i] += rest * terms[i].weight / weights
            break
        for i in capped:
            rest -= terms[i].max - give[i]
            give[i] = terms[i].max
        open_to_more = [i for i in open_to_more if i not in capped]
    return [give.get(i) for i in range(len(terms))]
