"""What preemption is set up with, and what it asks of the scheduler after an attempt.

``--preemption`` (:class:`Mode`) and its timings (:class:`PreemptionSettings`);
:class:`Attempted` is the one object :meth:`~.tracker.Preemptions.settle`
is handed about the group just tried, instead of a callback per question.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from coscheduler.core.preemption.mode import Mode

# Types only: the search imports this module.
if TYPE_CHECKING:
    from coscheduler.core.preemption.search import Admits, Preemptor
    from coscheduler.core.scoring import Scoring
    from coscheduler.core.victims import RunningGroup, VictimRule

__all__ = ["DEFAULT_BUDGET", "Attempted", "Mode", "PreemptionSettings"]

#: Trials of the preemptor's gang per search (see :mod:`.search`).
DEFAULT_BUDGET = 40


@dataclass(frozen=True, slots=True)
class PreemptionSettings:
    mode: Mode = Mode.ON
    #: Trials of the preemptor's gang per search.
    budget: int = DEFAULT_BUDGET
    #: The longest the room is held for a preemptor while its victims terminate.
    hold_seconds: float = 300.0


class Attempted(Protocol):
    """What :meth:`Preemptions.settle` asks about the group just tried, and its queue."""

    @property
    def scoring(self) -> Scoring:
        """How nodes are ranked in the search's trials (as in the attempt)."""

    @property
    def lowest(self) -> int | None:
        """No running group has a lower priority (:meth:`RunningPriorities.lowest`;
        None: unknown)."""

    def preemptor(self) -> Preemptor | None:
        """The group as a preemptor (None: it has no policy or nothing pending)."""

    def running(self) -> Iterable[RunningGroup]:
        """Every group running now (where victims come from)."""

    def reclaim(self, who: Preemptor) -> VictimRule | None:
        """For a preemptor whose queue may take back what other queues borrowed, the rule
        for victims of those queues (any priority); None otherwise."""

    def admits(self, who: Preemptor) -> Admits | None:
        """Whether its queue takes it once given victims are gone (None: no accounting)."""
