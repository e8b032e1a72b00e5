"""The pause before a status writer's next round, longer while writes fail.

A writer that could not write (the API server answered 429/5xx or did not
answer) marks the object again and tries on its next round. Without a pause
that grows, an outage turns every round into a burst of failing writes; with
it, the rounds spread out (doubling from the debounce up to a cap) and come
back to the debounce after the first round that wrote without a retryable
failure.
"""

from __future__ import annotations

__all__ = ["RoundBackoff"]

#: Longest pause between rounds while writes fail: status is late by at most this
#: much once the API server is back.
DEFAULT_CAP_SECONDS = 8.0


class RoundBackoff:
    """The pause before the next round (see the module docstring)."""

    def __init__(self, debounce: float, cap: float = DEFAULT_CAP_SECONDS) -> None:
        self._debounce = debounce
        self._cap = max(cap, debounce)
        self._pause = debounce

    @property
    def pause(self) -> float:
        return self._pause

    def round_done(self, *, failed: bool) -> None:
        """After a round: ``failed`` when some write failed and is to be tried again."""
        if failed:
            self._pause = min(max(self._pause * 2, self._debounce, 0.5), self._cap)
        else:
            self._pause = self._debounce
