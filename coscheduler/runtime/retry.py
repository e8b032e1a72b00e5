"""One retry policy for requests to the API server: what is retried, and how long it waits.

A failure is retried when the API server may well answer next time
(:attr:`~coscheduler.runtime.errors.ApiError.retryable`: throttled, a server
starting or failing over, no answer). The wait doubles from ``initial`` up to
``maximum``, each one drawn between its half and its whole, so that clients
failed together do not all come back together.

* :func:`retried` sends a request again until it succeeds, fails for good or
  ``within`` seconds have passed: reads, Bindings, writers. tenacity does the
  retrying, entered only after a first failure: it costs tens of µs of CPU a
  call, as much as a whole write through our pool.
* :func:`backoff_seconds` is the same wait for a loop that cannot be wrapped in
  a call: a watch is a generator that yields its events between failures, and
  its count of failures starts again at each event.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_delay
from tenacity.wait import wait_base

from coscheduler.runtime.errors import ApiError

__all__ = ["INITIAL_SECONDS", "MAXIMUM_SECONDS", "backoff_seconds", "is_retryable", "retried"]

T = TypeVar("T")

INITIAL_SECONDS: Final = 0.2
MAXIMUM_SECONDS: Final = 5.0


def is_retryable(error: BaseException) -> bool:
    """Whether the API server may answer ``error``'s request next time."""
    return isinstance(error, ApiError) and error.retryable


def backoff_seconds(
    failures: int, *, initial: float = INITIAL_SECONDS, maximum: float = MAXIMUM_SECONDS
) -> float:
    """How long to wait after the ``failures``-th failure in a row (1 for the first)."""
    return min(maximum, initial * 2.0 ** (failures - 1)) * random.uniform(0.5, 1.0)


class _Backoff(wait_base):
    """:func:`backoff_seconds` as tenacity's wait."""

    def __init__(self, initial: float, maximum: float) -> None:
        self._initial = initial
        self._maximum = maximum

    def __call__(self, retry_state: RetryCallState) -> float:
        return backoff_seconds(
            retry_state.attempt_number, initial=self._initial, maximum=self._maximum
        )


async def retried(
    send: Callable[[], Awaitable[T]],
    *,
    within: float,
    on_retry: Callable[[ApiError, float], None] | None = None,
    initial: float = INITIAL_SECONDS,
    maximum: float = MAXIMUM_SECONDS,
) -> T:
    """``await send()``, sent again after each retryable failure for up to ``within`` seconds.

    Raises the last failure: at once one that is not retryable, else the one
    met when ``within`` has passed. ``on_retry(error, seconds)`` is told of each
    failure before its wait (to log it, to count it).
    """
    started = time.monotonic()
    try:
        return await send()
    except ApiError as error:
        if not error.retryable:
            raise
        first: ApiError | None = error

    def told(state: RetryCallState) -> None:
        if on_retry is not None and state.outcome is not None and state.next_action is not None:
            error = state.outcome.exception()
            assert isinstance(error, ApiError)
            on_retry(error, state.next_action.sleep)

    retrying = AsyncRetrying(
        retry=retry_if_exception(is_retryable),
        wait=_Backoff(initial, maximum),
        stop=stop_after_delay(within - (time.monotonic() - started)),
        before_sleep=told,
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            if first is not None:  # the failure above, as tenacity's first attempt
                failed, first = first, None
                raise failed
            return await send()
    raise AssertionError("unreachable: tenacity re-raises the last failure")
