"""Lending limits and usage decay in the simulator: parsed, replayed, deterministic."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from coscheduler.sim.model import ScenarioError, load_scenario, parse_scenario
from coscheduler.sim.replay import Policy, replay
from tests.sim.test_queues import EXAMPLES, scenario, series


def test_a_lending_limit_reads_as_the_cores_and_may_not_pass_the_nominal() -> None:
    parsed = parse_scenario(
        scenario([{"name": "a", "nominal": {"cpu": "8"}, "lendingLimit": {"cpu": "2"}}])
        | {"usageHalfLifeSeconds": 300}
        | {"workload": {"gangs": [series("x", "a")]}}
    )
    (queue,) = parsed.queues
    assert queue.lending_limit == {"cpu": 2000}
    assert parsed.usage_half_life_seconds == 300
    with pytest.raises(ScenarioError, match="lendingLimit is above nominal for cpu"):
        parse_scenario(
            scenario(
                [{"name": "a", "nominal": {"cpu": "1"}, "lendingLimit": {"cpu": "2"}}],
                series("x", "a"),
            )
        )


def test_a_borrower_never_holds_more_than_the_lender_lends() -> None:
    # 16 cpu, all of it the lender's nominal; it lends 4 and runs nothing itself.
    parsed = parse_scenario(
        scenario(
            [
                {"name": "lender", "nominal": {"cpu": "16"}, "lendingLimit": {"cpu": "4"}},
                {"name": "borrower"},
            ],
            series("b", "borrower", count=12, intervalSeconds=1),
        )
    )
    result = replay(parsed, Policy.GANG)
    borrower = result.queue_names.index("borrower")
    assert max(used[borrower] for _, used, _ in result.queue_timeline) == 4000
    assert all(o.start is not None for o in result.gangs)  # slower, but every gang ran


def ordering(half_life: float) -> dict[str, float | None]:
    """One node of 4 cpu: a-busy runs it for 100 s; then a-busy's older gang and b-idle's
    newer one both want the whole node. Start times by gang."""
    whole: dict[str, Any] = {"size": 4, "requests": {"cpu": "1"}}
    raw = {
        "cluster": {"nodes": [{"name": "n", "allocatable": {"cpu": "4"}}]},
        "workload": {
            "gangs": [
                {"name": "early", "queue": "a-busy", "runSeconds": 100, **whole},
                {"name": "busy-next", "queue": "a-busy", "arrivalSeconds": 10,
                 "runSeconds": 10, **whole},
                {"name": "idle-next", "queue": "b-idle", "arrivalSeconds": 20,
                 "runSeconds": 10, **whole},
            ]
        },
        "queues": [{"name": "a-busy"}, {"name": "b-idle"}],
        "usageHalfLifeSeconds": half_life,
    }  # fmt: skip
    result = replay(parse_scenario(raw), Policy.GANG)
    return {o.gang.name: o.start for o in result.gangs}


def test_with_a_usage_half_life_the_tenant_that_ran_lately_goes_second() -> None:
    # Off: a tie at usage 0, broken by name, so a-busy's older gang goes first.
    off = ordering(0)
    assert (off["busy-next"], off["idle-next"]) == (100, 110)
    on = ordering(600)
    assert (on["idle-next"], on["busy-next"]) == (100, 110)
    assert ordering(600) == on  # simulated time: the same on every run


def mean_share(timeline: list[tuple[float, tuple[int, ...], tuple[bool, ...]]], slot: int,
               start: float, end: float) -> float:  # fmt: skip
    """The queue's time-weighted share of the allocated cpu between two times."""
    weighted = total = 0.0
    for before, after in itertools.pairwise(timeline):
        used = before[1]
        span = min(after[0], end) - max(before[0], start)
        allocated = sum(used)
        if span > 0 and allocated:
            weighted += span * used[slot] / allocated
            total += span
    return weighted / total


def test_the_usage_decay_sample_gives_the_newcomer_more_while_the_past_fades() -> None:
    sample = load_scenario(EXAMPLES / "usage-decay.yaml")
    assert sample.usage_half_life_seconds == 600
    shares = {}
    for half_life in (0.0, 600.0):
        result = replay(dataclasses.replace(sample, usage_half_life_seconds=half_life), Policy.GANG)
        late = result.queue_names.index("late")
        # From the first freed room after late arrives, over two half-lives; then later on.
        shares[half_life] = (
            mean_share(result.queue_timeline, late, 1200, 2400),
            mean_share(result.queue_timeline, late, 2400, 3000),
        )
    assert shares[0.0][0] == pytest.approx(0.5, abs=0.03)
    assert shares[600.0][0] > 0.55
    assert shares[0.0][1] == pytest.approx(shares[600.0][1], abs=0.03)  # then both 50/50
