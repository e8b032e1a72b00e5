"""Fair share over time: recent usage decays with its half-life and orders queues (unit and
hypothesis property tests)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coscheduler.core import GroupKey, QueuePolicy, Quotas, Scheduler
from coscheduler.core.queue import GroupQueue
from coscheduler.core.settings import SchedulerSettings
from tests.builders import Clock, gang, group, node

EVERYONE = frozenset({"default"})
HALF_LIFE = 100.0


def quotas_with(clock: Clock, half_life: float = HALF_LIFE, *names: str) -> Quotas:
    quotas = Quotas(clock, half_life)
    quotas.set_capacity({"cpu": 64_000})
    for name in names or ("a", "b"):
        quotas.upsert_queue(QueuePolicy(name, namespaces=EVERYONE))
    return quotas


def test_recent_usage_approaches_usage_and_halves_each_half_life_once_it_stops() -> None:
    clock = Clock()
    quotas = quotas_with(clock)
    quotas.charge("a", {"cpu": 4000})
    assert quotas.recent_usage("a") == {}
    clock.advance(HALF_LIFE)
    assert quotas.recent_usage("a")["cpu"] == pytest.approx(2000)
    quotas.charge("a", {"cpu": 4000}, -1)
    clock.advance(HALF_LIFE)
    assert quotas.recent_usage("a")["cpu"] == pytest.approx(1000)
    clock.advance(HALF_LIFE)
    assert quotas.recent_usage("a")["cpu"] == pytest.approx(500)
    assert quotas.report("a").recent == {"cpu": 500}


def test_a_queue_that_ran_lately_goes_after_one_that_did_not() -> None:
    clock = Clock()
    quotas = quotas_with(clock)
    quotas.charge("a", {"cpu": 32_000})
    clock.advance(HALF_LIFE)
    quotas.charge("a", {"cpu": 32_000}, -1)
    clock.advance(10)
    # Both use nothing now; a ran 32 cpu until 10 s ago.
    assert quotas.share("a") > quotas.share("b")
    queue = GroupQueue(clock, share=quotas.share)
    queue.add(GroupKey("default", "from-a"), 0, 1.0, "a")
    queue.add(GroupKey("default", "from-b"), 0, 2.0, "b")
    assert queue.pop() == GroupKey("default", "from-b")


def test_with_the_half_life_off_the_past_is_not_kept() -> None:
    clock = Clock()
    quotas = quotas_with(clock, 0.0)
    quotas.charge("a", {"cpu": 32_000})
    clock.advance(HALF_LIFE)
    quotas.charge("a", {"cpu": 32_000}, -1)
    assert quotas.recent_usage("a") == {}
    assert quotas.share("a") == quotas.share("b") == 0.0
    assert quotas.report("a").recent == {}


def test_the_scheduler_passes_its_clock_and_half_life_to_the_queues() -> None:
    clock = Clock()
    scheduler = Scheduler(clock, SchedulerSettings(usage_half_life_seconds=HALF_LIFE))
    scheduler.upsert_node(node("n0", cpu="8"))
    scheduler.upsert_queue(QueuePolicy("a", namespaces=EVERYONE))
    scheduler.upsert_group(group("train", 4, queue="a"))
    for member in gang("train", 4):
        scheduler.upsert_pod(member)
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.ok
    clock.advance(HALF_LIFE)
    assert scheduler.quotas.recent_usage("a")["cpu"] == pytest.approx(2000)


# -- properties ----------------------------------------------------------------------------

#: A history: (queue, cpu cores charged (+) or given back (-), seconds until the next step).
steps = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(1, 16), st.booleans(), st.integers(0, 300)),
    max_size=20,
)


def replay(quotas: Quotas, clock: Clock, history: list[tuple[str, int, bool, int]]) -> None:
    for queue, cores, give_back, wait in history:
        held = quotas.usage(queue).get("cpu", 0)
        amount = min(cores * 1000, held) if give_back else cores * 1000
        if amount:
            quotas.charge(queue, {"cpu": amount}, -1 if give_back else 1)
        clock.advance(wait)


@given(steps)
def test_with_decay_off_the_order_is_the_one_without_it(
    history: list[tuple[str, int, bool, int]],
) -> None:
    clock = Clock()
    off = quotas_with(clock, 0.0)
    plain = Quotas()
    plain.set_capacity({"cpu": 64_000})
    for name in ("a", "b"):
        plain.upsert_queue(QueuePolicy(name, namespaces=EVERYONE))
    for queue, cores, give_back, wait in history:
        held = off.usage(queue).get("cpu", 0)
        amount = min(cores * 1000, held) if give_back else cores * 1000
        if amount:
            off.charge(queue, {"cpu": amount}, -1 if give_back else 1)
            plain.charge(queue, {"cpu": amount}, -1 if give_back else 1)
        clock.advance(wait)
        for name in ("a", "b"):
            assert off.share(name) == plain.share(name)
            assert off.report(name) == plain.report(name)


@given(steps, steps, st.integers(0, 32), st.integers(0, 600))
def test_of_two_equal_queues_the_one_with_less_recent_usage_goes_first(
    history_a: list[tuple[str, int, bool, int]],
    history_b: list[tuple[str, int, bool, int]],
    now_cores: int,
    wait: int,
) -> None:
    """Two queues of one policy, with any histories, brought to the same usage now: the
    one with less recent usage stands lower and its group is popped first."""
    clock = Clock()
    quotas = quotas_with(clock)
    replay(quotas, clock, [("a", *rest) for _, *rest in history_a])  # type: ignore[misc]
    replay(quotas, clock, [("b", *rest) for _, *rest in history_b])  # type: ignore[misc]
    for name in ("a", "b"):
        held = quotas.usage(name).get("cpu", 0)
        if held != now_cores * 1000:
            quotas.charge(name, {"cpu": now_cores * 1000 - held})
    clock.advance(wait)
    recent_a = quotas.recent_usage("a").get("cpu", 0.0)
    recent_b = quotas.recent_usage("b").get("cpu", 0.0)
    if abs(recent_a - recent_b) < 1.0:  # a millicore apart or less: a tie, by name
        return
    lower = "a" if recent_a < recent_b else "b"
    higher = "b" if lower == "a" else "a"
    assert quotas.share(lower) < quotas.share(higher)
    queue = GroupQueue(clock, share=quotas.share)
    # The other queue's group is older: only recent usage can put ``lower`` first.
    queue.add(GroupKey("default", "g-lower"), 0, 2.0, lower)
    queue.add(GroupKey("default", "g-higher"), 0, 1.0, higher)
    assert queue.pop() == GroupKey("default", "g-lower")


@given(steps)
def test_recent_usage_stays_between_zero_and_the_largest_usage_held(
    history: list[tuple[str, int, bool, int]],
) -> None:
    clock = Clock()
    quotas = quotas_with(clock)
    peak = {"a": 0, "b": 0}
    for queue, cores, give_back, wait in history:
        replay(quotas, clock, [(queue, cores, give_back, wait)])
        peak[queue] = max(peak[queue], quotas.usage(queue).get("cpu", 0))
        for name in ("a", "b"):
            recent = quotas.recent_usage(name).get("cpu", 0.0)
            assert 0.0 <= recent <= peak[name] + 1e-6
