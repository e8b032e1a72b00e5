"""Wait for a condition on the cluster, failing with what was last seen.

Why not ``time.sleep`` and an assert: a real control plane answers in its own
time, so tests poll with a deadline; and a bare "timed out" diagnoses nothing,
so the failure shows the last value observed (or the last error raised while
observing it).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import yaml

T = TypeVar("T")

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_INTERVAL_SECONDS = 0.2
MAX_SHOWN_CHARACTERS = 3000


class WaitTimeoutError(AssertionError):
    """The condition did not hold in time; an AssertionError, so pytest reports a failure."""


def wait_for(
    fetch: Callable[[], T],
    condition: Callable[[T], bool] | None = None,
    *,
    describe: str,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    interval: float = DEFAULT_INTERVAL_SECONDS,
) -> T:
    """Call ``fetch`` until ``condition(value)`` (or the value's truthiness) holds; return it.

    Exceptions raised by ``fetch`` count as "not yet" and are shown if time runs out.
    """
    watch = _Watch(describe, timeout, condition)
    while not watch.attempt(fetch):
        time.sleep(interval)
    return watch.value


async def async_wait_for(
    fetch: Callable[[], Awaitable[T]] | Callable[[], T],
    condition: Callable[[T], bool] | None = None,
    *,
    describe: str,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,  # noqa: ASYNC109 - the message needs the last value seen
    interval: float = DEFAULT_INTERVAL_SECONDS,
) -> T:
    """The same as ``wait_for`` for async tests: ``fetch`` may be a coroutine function."""
    watch = _Watch(describe, timeout, condition)

    async def fetched() -> T:
        result: Any = fetch()
        value: T = await result if inspect.isawaitable(result) else result
        return value

    while True:
        try:
            value = await fetched()
        except Exception as error:  # shown if time runs out
            watch.saw(error)
        else:
            if watch.holds(value):
                return value
        await asyncio.sleep(interval)


class _Watch(Generic[T]):
    """One wait: its deadline, its condition, and the last value or error seen."""

    def __init__(
        self, describe: str, timeout: float, condition: Callable[[T], bool] | None
    ) -> None:
        self.describe = describe
        self.timeout = timeout
        self.condition = condition
        self.deadline = time.monotonic() + timeout
        self.seen: object = "(nothing observed)"

    def attempt(self, fetch: Callable[[], T]) -> bool:
        """Fetch once; True when the condition holds (``value`` is then the answer)."""
        try:
            value = fetch()
        except Exception as error:  # shown if time runs out
            self.saw(error)
            return False
        return self.holds(value)

    def holds(self, value: T) -> bool:
        """Whether ``value`` meets the condition; raise once the deadline has passed."""
        self.seen = value
        if self.condition(value) if self.condition is not None else bool(value):
            self.value = value
            return True
        self._check_deadline()
        return False

    def saw(self, error: Exception) -> None:
        self.seen = error
        self._check_deadline()

    def _check_deadline(self) -> None:
        if time.monotonic() >= self.deadline:
            raise WaitTimeoutError(_message(self.describe, self.timeout, self.seen))


def _message(describe: str, timeout: float, seen: object) -> str:
    if isinstance(seen, BaseException):
        shown = f"{type(seen).__name__}: {seen}"
    elif isinstance(seen, dict | list):
        shown = yaml.safe_dump(seen, sort_keys=False, default_flow_style=False)
    else:
        shown = repr(seen)
    if len(shown) > MAX_SHOWN_CHARACTERS:
        shown = shown[:MAX_SHOWN_CHARACTERS] + "\n... (truncated)"
    return f"timed out after {timeout:g}s waiting for {describe}; last seen:\n{shown}"
