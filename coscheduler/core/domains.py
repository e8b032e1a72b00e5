"""Which topology domains a gang kept in one domain is tried in, and in what order.

A PodGroup's ``spec.topology`` names node label keys, narrow to wide; each
value of a key is a *domain* (a rack, a zone). The planner tries the whole
gang's trial inside one domain at a time (:class:`~coscheduler.core.statement.Statement`
``within``), at the narrowest level first, and takes the first domain where
every needed member fits.

The order within a level is the rule that keeps large domains for large
gangs: domains whose free room (counted for the first member's shape, on the
nodes that accept it) holds every needed member come first, the *tightest*
first, so a small gang fills a nearly full rack rather than opening an empty
one; then the others, the roomiest first (they may still fit a gang of mixed
shapes). Name order breaks ties. Nodes without the label belong to no domain.
Members already bound pin the group to their domain: at a level where they
span two domains, no domain of it can hold the group.

Only :data:`MAX_TRIALS` domains per level are tried: each trial costs as much
as a whole placement attempt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from coscheduler.api.pod import PodInfo
from coscheduler.core.snapshot import Snapshot

__all__ = ["MAX_TRIALS", "Domain", "bound_domain", "candidate_domains"]

#: Domains tried per level before the level is given up.
MAX_TRIALS: Final = 8


@dataclass(frozen=True, slots=True)
class Domain:
    """One value of a topology key, its nodes, and its room for the first member."""

    key: str
    value: str
    nodes: npt.NDArray[np.bool_]
    room: int

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


def candidate_domains(
    snapshot: Snapshot, key: str, first: PodInfo, needed: int, bound_nodes: Sequence[str]
) -> list[Domain]:
    """The domains of ``key`` to try for a gang, in the order of the module docstring."""
    size = snapshot.slot_count
    ids = snapshot.topology.domains(key, size)
    names = snapshot.topology.domain_names(key)
    pinned: set[int] = set()
    for node in bound_nodes:
        slot = snapshot.slot_of(node)
        pinned.add(-1 if slot is None else int(ids[slot]))
    if -1 in pinned or len(pinned) > 1:
        return []  # bound members outside any one domain of this key
    usable = snapshot.fits(first) & (ids >= 0)
    slots = np.flatnonzero(usable)
    room = np.zeros(len(names), dtype=np.int64)
    if len(slots):
        np.add.at(room, ids[slots], snapshot.room(first, slots))
    present = set(np.unique(ids[ids >= 0]).tolist())
    chosen = sorted(present & pinned) if pinned else sorted(present)

    def order(domain: int) -> tuple[int, int, str]:
        holds = room[domain] >= needed
        return (
            0 if holds else 1,
            int(room[domain]) if holds else -int(room[domain]),
            names[domain],
        )

    return [
        Domain(key, names[domain], ids == domain, int(room[domain]))
        for domain in sorted(chosen, key=order)[:MAX_TRIALS]
    ]


def bound_domain(
    snapshot: Snapshot, levels: Sequence[str], bound_nodes: Sequence[str]
) -> Domain | None:
    """The narrowest domain holding every bound member: where the group's others go.

    None when nothing is bound, or when the bound members span domains even
    at the widest level (bound before the group asked for a domain).
    """
    if not bound_nodes:
        return None
    for key in levels:
        ids = snapshot.topology.domains(key, snapshot.slot_count)
        slots = [snapshot.slot_of(node) for node in bound_nodes]
        found = {-1 if slot is None else int(ids[slot]) for slot in slots}
        if len(found) == 1 and -1 not in found:
            domain = found.pop()
            names = snapshot.topology.domain_names(key)
            return Domain(key, names[domain], ids == domain, 0)
    return None
