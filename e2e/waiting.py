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
from typing import Any, TypeVar

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
    deadline = time.monotonic() + timeout
    seen: object = "(nothing observed)"
    while True:
        try:
            value = fetch()
        except Exception as error:
            seen = error
        else:
            if condition(value) if condition is not None else bool(value):
                return value
            seen = value
        if time.monotonic() >= deadline:
            raise WaitTimeoutError(_message(describe, timeout, seen))
        time.sleep(interval)


async def async_wait_for(
    fetch: Callable[[], Awaitable[T]] | Callable[[], T],
    condition: Callable[[T], bool] | None = None,
    *,
    describe: str,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,  # noqa: ASYNC109 - the message needs the last value seen
    interval: float = DEFAULT_INTERVAL_SECONDS,
) -> T:
    """The same as ``wait_for`` for async tests: ``fetch`` may be a coroutine function."""
    deadline = time.monotonic() + timeout
    seen: object = "(nothing observed)"
    while True:
        try:
            result: Any = fetch()
            value: T = await result if inspect.isawaitable(result) else result
        except Exception as error:
            seen = error
        else:
            if condition(value) if condition is not None else bool(value):
                return value
            seen = value
        if time.monotonic() >= deadline:
            raise WaitTimeoutError(_message(describe, timeout, seen))
        await asyncio.sleep(interval)


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
