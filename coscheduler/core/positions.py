"""Where each pending group stands: in its queue, and across the cluster.

The same order the queue pops in (:mod:`~coscheduler.core.queue`), applied
to every pending group at once, whatever its pool: a group backing off or
waiting keeps its place in line and goes back there when it is retried.

- Within a queue: the queue's own order (priority, then creation time,
  then ``namespace/name`` and kind).
- Across the cluster: queues by their share as it stands now, lowest first
  (ties by name), each queue's groups in its own order. That is the order
  the next pass tries them in while nothing is admitted; an admission moves
  its queue's share, so cluster positions reshuffle as groups are placed.

Pure: entries and a share in, positions out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from coscheduler.core.group import GroupKey

__all__ = ["Pending", "Position", "positions"]

#: A group as the queue holds it: its key, its queue's name, and its order (lowest first).
Pending = tuple[GroupKey, str, tuple[int, float, str, str, str]]


@dataclass(frozen=True, slots=True)
class Position:
    """A pending group's place: 1 is tried first."""

    queue: str
    in_queue: int
    in_cluster: int
    #: The priority it is ordered by.
    priority: int = 0


def positions(
    entries: Iterable[Pending], share: Callable[[str], float]
) -> dict[GroupKey, Position]:
    """Each entry's position (module docstring); both positions are 1..n without gaps."""
    by_queue: dict[str, list[tuple[tuple[int, float, str, str, str], GroupKey]]] = {}
    for key, queue, order in entries:
        by_queue.setdefault(queue, []).append((order, key))
    placed: dict[GroupKey, Position] = {}
    ahead = 0
    for queue in sorted(by_queue, key=lambda name: (share(name), name)):
        groups = sorted(by_queue[queue])
        for index, (order, key) in enumerate(groups, start=1):
            placed[key] = Position(queue, index, ahead + index, -order[0])
        ahead += len(groups)
    return placed
