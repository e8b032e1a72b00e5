"""runtime/retry.py: what is retried, for how long, and the wait between tries."""

from __future__ import annotations

import pytest

from coscheduler.runtime.errors import ApiError, Conflict, Transient
from coscheduler.runtime.retry import backoff_seconds, retried


def failure(kind: type[ApiError], status: int) -> ApiError:
    return kind(method="POST", path="/x", status=status, message="said")


class Script:
    """Answers each call with the next of ``answers`` (an error is raised)."""

    def __init__(self, *answers: str | ApiError) -> None:
        self._answers = list(answers)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        answer = self._answers.pop(0)
        if isinstance(answer, ApiError):
            raise answer
        return answer


def test_each_wait_is_between_half_and_all_of_a_doubling_capped_delay() -> None:
    for failures, whole in ((1, 0.2), (2, 0.4), (3, 0.8), (10, 5.0)):
        for _ in range(50):
            assert whole / 2 <= backoff_seconds(failures) <= whole


async def test_a_success_at_once_is_not_retried() -> None:
    script = Script("ok")
    assert await retried(script, within=10) == "ok"
    assert script.calls == 1


async def test_retryable_failures_are_sent_again_and_told() -> None:
    told: list[tuple[str, float]] = []
    script = Script(failure(Transient, 503), failure(Transient, 500), "ok")
    answer = await retried(
        script,
        within=10,
        on_retry=lambda error, seconds: told.append((str(error), seconds)),
        initial=0.01,
        maximum=0.02,
    )
    assert answer == "ok"
    assert script.calls == 3
    assert [error for error, _ in told] == ["POST /x: 503: said", "POST /x: 500: said"]
    assert all(0.005 <= seconds <= 0.02 for _, seconds in told)


async def test_a_failure_that_is_not_retryable_is_raised_at_once() -> None:
    script = Script(failure(Transient, 503), failure(Conflict, 409), "never")
    with pytest.raises(Conflict):
        await retried(script, within=10, initial=0.01)
    assert script.calls == 2


async def test_the_last_failure_is_raised_once_the_time_is_up() -> None:
    script = Script(*(failure(Transient, 503) for _ in range(3)), "too late")
    with pytest.raises(Transient):
        await retried(script, within=0.0, initial=0.01)
    assert script.calls == 1  # no time left after the first: its failure is the answer
