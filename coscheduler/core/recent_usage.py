"""Each queue's recent usage: its usage averaged over the past, decayed with a half-life.

Why an average and not a sum: it reads in the same units as usage (a queue
that held 40 cpu for a long while has a recent usage of 40 cpu), so it can be
shown beside ``allocated`` and added to it when queues are ordered. Usage only
changes when a pod is charged or given back, and is constant in between, so
the average has a closed form: from ``a`` at ``t0`` with usage ``u`` held,

    a(t) = u + (a - u) * 2 ** (-(t - t0) / half_life)

It is a pure function of the charges and the clock the core is given: the
simulator's time gives the same numbers on every run. A half-life of 0 keeps
nothing (the feature is off).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

__all__ = ["RecentUsage"]


class RecentUsage:
    """Per queue, the decayed average of its usage up to the last change (module docstring)."""

    def __init__(self, half_life_seconds: float, clock: Callable[[], float]) -> None:
        self.half_life_seconds = half_life_seconds
        self._clock = clock
        #: Per queue: the average at the time of its last change, and that time.
        self._average: dict[str, dict[str, float]] = {}
        self._since: dict[str, float] = {}

    @property
    def on(self) -> bool:
        return self.half_life_seconds > 0

    def before_change(self, queue: str, usage: Mapping[str, int]) -> None:
        """Fold the usage the queue held until now into its average (call before changing it)."""
        if not self.on:
            return
        now = self._clock()
        average = self.at(queue, usage, now)
        if average:
            self._average[queue] = average
        else:
            self._average.pop(queue, None)
        self._since[queue] = now

    def at(
        self, queue: str, usage: Mapping[str, int], now: float | None = None
    ) -> dict[str, float]:
        """The queue's recent usage now, given the usage it has held since its last change."""
        if not self.on:
            return {}
        if now is None:
            now = self._clock()
        average = self._average.get(queue, {})
        since = self._since.get(queue)
        if since is None:
            # Nothing charged since the clock started: no history yet.
            return {}
        kept = 0.5 ** (max(0.0, now - since) / self.half_life_seconds)
        result: dict[str, float] = {}
        for resource in average.keys() | usage.keys():
            held = usage.get(resource, 0)
            value = held + (average.get(resource, 0.0) - held) * kept
            if value > 1e-9:
                result[resource] = value
        return result
