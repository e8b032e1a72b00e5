"""Publishes each pending group's place in line to its status, with few writes.

When the group at the head of a queue of thousands is placed, every group
behind it moves up one: writing each new number at once would cost
thousands of status writes per pass, competing with bindings for the
client's rate limit. So, once per round (``interval_seconds``), the
publisher takes the core's positions (:mod:`~coscheduler.core.positions`)
and changes what the status says only where :func:`due` finds it worth it:

- near the front (position ``exact_within`` or less, in the queue or the
  cluster) the number is exact: that is where people watch it move;
- further back a number is rewritten once it is off by more than ``drift``
  of itself (a group at 1,000 is rewritten after about 100 moves, not every
  one): a few writes per move over the whole queue, not one per group;
- at most ``budget`` groups gain a new number per round, front first; the
  rest follow in the next rounds;
- a group that left the queue (placed, deleted) loses its number at once;
  its status is being written for that change anyway;
- a number already in a group's status (a previous leader wrote it) is
  taken as published, so a new leader rewrites only what is due. The
  process publishes once before its status writer's first round, which
  would otherwise clear every number not yet published.

Rounds are spaced so that they take at most 5 % of the event loop (a backlog
of 50,000 takes a while to number). The full, exact list is always at
``/debug/queue`` and ``coscheduler queue``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from coscheduler.core.group import GroupKey
from coscheduler.core.positions import Position

__all__ = ["PositionPublisher", "PublishRule", "due"]


@dataclass(frozen=True, slots=True)
class PublishRule:
    exact_within: int = 10
    drift: float = 0.1
    budget: int = 50


def _close(said: int, now: int, rule: PublishRule) -> bool:
    if said <= rule.exact_within or now <= rule.exact_within:
        return said == now
    return abs(said - now) <= rule.drift * now


def due(
    published: Mapping[GroupKey, Position],
    current: Mapping[GroupKey, Position],
    rule: PublishRule,
) -> dict[GroupKey, Position | None]:
    """What to change in ``published`` this round (None: drop the group's number)."""
    changes: dict[GroupKey, Position | None] = {
        key: None for key in published if key not in current
    }
    stale = []
    for key, now in current.items():
        said = published.get(key)
        if (
            said is None
            or said.queue != now.queue
            or not _close(said.in_queue, now.in_queue, rule)
            or not _close(said.in_cluster, now.in_cluster, rule)
        ):
            stale.append((now.in_cluster, key))
    stale.sort()
    for _, key in stale[: rule.budget]:
        changes[key] = current[key]
    return changes


class PositionPublisher:
    """Keeps :attr:`published` (what statuses say) in step with the core, by :func:`due`."""

    def __init__(
        self,
        *,
        positions: Callable[[], Mapping[GroupKey, Position]],
        mark: Callable[[GroupKey], None],
        said: Callable[[GroupKey], tuple[int, int] | None] = lambda _key: None,
        rule: PublishRule | None = None,
        interval_seconds: float = 2.0,
    ) -> None:
        self._positions = positions
        self._mark = mark
        #: The numbers a group's status holds (queue, cluster), if any.
        self._said = said
        self.rule = rule or PublishRule()
        self._interval = interval_seconds
        #: Each group's place as its status says it (or is about to).
        self.published: dict[GroupKey, Position] = {}

    async def run(self) -> None:
        pause = self._interval
        while True:
            await asyncio.sleep(pause)
            started = time.perf_counter()
            self.publish()
            # Numbering a backlog of tens of thousands takes the event loop a while:
            # rounds spaced so that they never take more than 5 % of it.
            pause = max(self._interval, 20 * (time.perf_counter() - started))

    def publish(self) -> int:
        """One round: how many groups' numbers changed (each marked for the writer)."""
        current = {key: p for key, p in self._positions().items() if not key.lone}
        for key, position in current.items():
            if key not in self.published and (said := self._said(key)) is not None:
                self.published[key] = dataclasses.replace(
                    position, in_queue=said[0], in_cluster=said[1]
                )
        changes = due(self.published, current, self.rule)
        for key, change in changes.items():
            if change is None:
                del self.published[key]
            else:
                self.published[key] = change
            self._mark(key)
        return len(changes)
