"""The pause between status rounds grows while writes fail and comes back after one that works."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from coscheduler.controller.backoff import RoundBackoff


def test_failing_rounds_double_the_pause_up_to_the_cap_and_a_good_round_resets_it() -> None:
    backoff = RoundBackoff(0.25, cap=8.0)
    assert backoff.pause == 0.25
    pauses = []
    for _ in range(7):
        backoff.round_done(failed=True)
        pauses.append(backoff.pause)
    assert pauses == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    backoff.round_done(failed=False)
    assert backoff.pause == 0.25


@given(st.floats(0.0, 5.0), st.lists(st.booleans(), max_size=40))
def test_the_pause_stays_between_the_debounce_and_the_cap(
    debounce: float, rounds: list[bool]
) -> None:
    backoff = RoundBackoff(debounce, cap=8.0)
    for failed in rounds:
        backoff.round_done(failed=failed)
        assert debounce <= backoff.pause <= max(8.0, debounce)
        if not failed:
            assert backoff.pause == debounce
