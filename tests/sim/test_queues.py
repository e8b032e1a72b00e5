"""Queues in the simulator: the schema, the replay within quota, and the fairness figures."""

from __future__ import annotations

import heapq
import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.labels import POD_GROUP_LABEL
from coscheduler.api.pod import PodInfo
from coscheduler.cli import main
from coscheduler.core import GroupPolicy, Scheduler
from coscheduler.core.quota import QueuePolicy
from coscheduler.sim.fairness import (
    Entitlement,
    entitlements,
    fair_shares,
    fairness,
    jain_index,
    share_windows,
)
from coscheduler.sim.model import Scenario, ScenarioError, load_scenario, parse_scenario
from coscheduler.sim.replay import Policy, Replay, replay

EXAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "examples" / "simulate"
TEAMS = EXAMPLES / "teams.yaml"


def scenario(queues: list[dict[str, Any]], *gangs: dict[str, Any]) -> dict[str, Any]:
    return {
        "cluster": {"nodes": [{"name": "n", "count": 4, "allocatable": {"cpu": "4"}}]},
        "workload": {"gangs": list(gangs)},
        "queues": queues,
    }


def series(name: str, queue: str, **more: Any) -> dict[str, Any]:
    gang = {"name": name, "queue": queue, "size": 2, "requests": {"cpu": "1"}, "runSeconds": 60}
    return {**gang, **more}


# -- the schema ------------------------------------------------------------------


def test_queues_become_the_cores_policies_and_gangs_carry_queue_and_namespace() -> None:
    parsed = parse_scenario(
        scenario(
            [
                {"name": "a", "weight": 3, "nominal": {"cpu": "2"}, "max": {"cpu": "6"}},
                {"name": "b", "state": "Closed", "namespaces": ["web"]},
            ],
            series("x", "a", count=2),
            series("y", "b", namespace="web"),
            {"name": "z", "size": 1, "runSeconds": 1},
        )
    )
    a, b = parsed.queues
    assert a == QueuePolicy(
        "a", nominal={"cpu": 2000}, max={"cpu": 6000}, weight=3, selector=a.selector
    )
    assert a.allows("anything", {})
    assert not b.open
    assert b.allows("web", {})
    assert not b.allows("sim", {})
    assert [(g.queue, g.namespace) for g in parsed.gangs] == [
        ("a", "sim"),
        ("a", "sim"),
        ("b", "web"),
        ("default", "sim"),
    ]
    assert parsed.queue_names == ("a", "b", "default")


@pytest.mark.parametrize(
    ("queues", "gang", "expected"),
    [
        pytest.param(
            [{"name": "a"}],
            series("g", "nope"),
            "workload.gangs[0].queue: queue nope is not defined (queues: a)",
            id="unknown-queue",
        ),
        pytest.param(
            [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}],
            series("g", "default"),
            "queues[0]: queue a: its parents form a cycle (a -> b -> a)",
            id="cycle",
        ),
        pytest.param(
            [{"name": "a", "parent": "org"}],
            series("g", "a"),
            "queues[0]: queue a: its parent queue org is not defined",
            id="missing-parent",
        ),
        pytest.param(
            [{"name": "org"}, {"name": "a", "parent": "org"}],
            series("g", "org"),
            "workload.gangs[0].queue: queue org has child queues; "
            "gangs draw from a queue without children",
            id="not-a-leaf",
        ),
        pytest.param(
            [{"name": "a", "namespaces": ["ml"]}],
            series("g", "a", namespace="web"),
            "workload.gangs[0].queue: queue a does not allow namespace web",
            id="namespace-not-allowed",
        ),
        pytest.param(
            [{"name": "a"}, {"name": "a"}],
            series("g", "a"),
            "queues[1]: two queues are named 'a'",
            id="duplicate",
        ),
        pytest.param(
            [{"name": "a", "nominal": {"cpu": "4"}, "max": {"cpu": "2"}}],
            series("g", "a"),
            "queues[0]: queue a: max is below nominal for cpu",
            id="max-below-nominal",
        ),
        pytest.param(
            [{"name": "a", "weight": 0}],
            series("g", "a"),
            "queues[0].weight: Input should be greater than or equal to 1",
            id="weight",
        ),
        pytest.param(
            [{"name": "a", "state": "Paused"}],
            series("g", "a"),
            "queues[0].state: Input should be 'Open' or 'Closed'",
            id="state",
        ),
        pytest.param(
            [{"name": "a", "namespaces": "ml"}],
            series("g", "a"),
            "queues[0].namespaces: expected a list of namespace names, or all (got 'ml')",
            id="namespaces-not-a-list",
        ),
        pytest.param(
            [{"name": "a", "nominal": {"cpu": "lots"}}],
            series("g", "a"),
            "queues[0].nominal: cpu: invalid quantity 'lots'",
            id="quantity",
        ),
    ],
)
def test_queue_mistakes_are_named_by_their_path(
    queues: list[dict[str, Any]], gang: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(scenario(queues, gang), "q.yaml")
    assert str(caught.value).startswith("q.yaml: invalid scenario:\n")
    assert expected in str(caught.value)


# -- the replay ------------------------------------------------------------------


def test_no_queue_goes_above_its_max_and_a_closed_queue_starts_nothing() -> None:
    # 16 cpu; "capped" may hold 4 and has work for all of it; "free" backfills.
    parsed = parse_scenario(
        scenario(
            [
                {"name": "capped", "weight": 10, "max": {"cpu": "4"}},
                {"name": "free"},
                {"name": "shut", "state": "Closed"},
            ],
            series("c", "capped", count=20, intervalSeconds=1),
            series("f", "free", count=20, intervalSeconds=1),
            series("s", "shut", count=2),
        )
    )
    result = replay(parsed, Policy.GANG)
    names = result.queue_names
    assert names == ("capped", "free", "shut")
    assert max(used[0] for _, used, _ in result.queue_timeline) == 4000
    assert all(sum(used) <= 16000 for _, used, _ in result.queue_timeline)
    assert all(used[2] == 0 and not backlogged[2] for _, used, backlogged in result.queue_timeline)
    outcomes = {o.gang.name: o for o in result.gangs}
    assert all(outcomes[f"c-{i:02d}"].start is not None for i in range(20))
    assert outcomes["s-0"].start is None
    assert outcomes["s-1"].start is None
    assert not any(o.partial for o in result.gangs)
    # Work conserving: the cap does not leave the cluster idle while "free" waits.
    figures = fairness(result)
    assert figures is not None
    capped, free, _ = figures.queues
    assert capped.fair_share == pytest.approx(0.25)
    assert capped.backlogged_share == pytest.approx(0.25)
    assert free.backlogged_share == pytest.approx(free.fair_share, abs=0.05)


def test_children_stay_within_their_parents_max() -> None:
    parsed = parse_scenario(
        scenario(
            [
                {"name": "org", "max": {"cpu": "8"}},
                {"name": "a", "parent": "org"},
                {"name": "b", "parent": "org", "weight": 2},
                {"name": "other"},
            ],
            series("a", "a", count=10, intervalSeconds=1),
            series("b", "b", count=10, intervalSeconds=1),
            series("o", "other", count=10, intervalSeconds=1),
        )
    )
    result = replay(parsed, Policy.GANG)
    assert result.queue_names == ("a", "b", "other")
    assert max(used[0] + used[1] for _, used, _ in result.queue_timeline) == 8000
    assert all(o.start is not None for o in result.gangs)
    figures = fairness(result)
    assert figures is not None
    assert [q.entitlement.max for q in figures.queues] == [0.5, 0.5, 1.0]


def test_weights_one_to_three_converge_to_a_quarter_and_three_quarters() -> None:
    parsed = parse_scenario(
        scenario(
            [{"name": "a", "weight": 1}, {"name": "b", "weight": 3}],
            series("a", "a", count=60, size=1),
            series("b", "b", count=60, size=1),
        )
    )
    result = replay(parsed, Policy.GANG)
    # Once the first gangs finish (60 s), the freed cpu goes 1:3 while both wait.
    steady = [
        used for time, used, backlogged in result.queue_timeline if time >= 120 and all(backlogged)
    ]
    assert steady
    assert all(used == (4000, 12000) for used in steady)


def test_without_queues_nothing_is_sampled_per_queue() -> None:
    parsed = parse_scenario(
        {
            "cluster": {"nodes": [{"name": "n", "allocatable": {"cpu": "4"}}]},
            "workload": {"gangs": [series("g", "default")]},
        }
    )
    result = replay(parsed, Policy.GANG)
    assert result.queue_names == ()
    assert result.queue_timeline == []
    assert fairness(result) is None


# -- the figures -----------------------------------------------------------------


def test_fair_shares_by_weight_nominal_and_max() -> None:
    weights = [Entitlement(1), Entitlement(3)]
    assert fair_shares(weights, [True, True], [0.0, 0.0]) == [0.25, 0.75]
    # A queue that waits for nothing keeps what it holds; the rest is shared.
    assert fair_shares([*weights, Entitlement(1)], [True, True, False], [0.0, 0.0, 0.2]) == [
        pytest.approx(0.2),
        pytest.approx(0.6),
        None,
    ]
    # Nominal first, then the rest by weight; a capped queue's excess goes to the others.
    mixed = [Entitlement(1, nominal=0.25, max=0.375), Entitlement(1), Entitlement(3)]
    assert fair_shares(mixed, [True, True, True], [0, 0, 0]) == pytest.approx(
        [0.375, 0.15625, 0.46875]
    )
    # Nominals beyond the room are scaled down to it.
    over = [Entitlement(1, nominal=0.5), Entitlement(1, nominal=0.5)]
    assert fair_shares(over, [True, True], [0.0, 0.0]) == [0.5, 0.5]
    assert fair_shares([*over, Entitlement(1)], [True, True, False], [0, 0, 0.5]) == [
        0.25,
        0.25,
        None,
    ]


@given(
    st.lists(
        st.tuples(
            st.integers(1, 10),
            st.floats(0, 1),
            st.floats(0, 1),
            st.booleans(),
            st.floats(0, 0.3),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_fair_shares_fill_the_room_within_every_max(
    rows: list[tuple[int, float, float, bool, float]],
) -> None:
    terms = [Entitlement(w, nominal=min(n, m), max=m) for w, n, m, _, _ in rows]
    backlogged = [b for *_, b, _ in rows]
    held = [h / len(rows) for *_, h in rows]
    due = fair_shares(terms, backlogged, held)
    room = max(0.0, 1 - sum(h for h, b in zip(held, backlogged, strict=True) if not b))
    given_out = [d for d in due if d is not None]
    assert [d is not None for d in due] == backlogged
    assert sum(given_out) <= room + 1e-9
    assert all(d <= t.max + 1e-9 for d, t in zip(due, terms, strict=True) if d is not None)
    # Work conserving: the room is used up unless every backlogged queue is at its max.
    if any(d < t.max - 1e-9 for d, t in zip(due, terms, strict=True) if d is not None):
        assert sum(given_out) == pytest.approx(room)


def test_jain_index() -> None:
    assert jain_index([1.0, 1.0, 1.0]) == pytest.approx(1.0)
    assert jain_index([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)
    assert jain_index([1.0, 0.5]) == pytest.approx(1.5**2 / (2 * 1.25))
    assert jain_index([]) is None


def test_figures_on_a_hand_made_timeline() -> None:
    # 10 cpu; a (weight 1) and b (weight 3).
    #   0-100 s: both backlogged, a holds 5, b 5 (fair: 2.5 and 7.5);
    #   100-200 s: only a backlogged, a 4 and b 6 (b keeps 6: a's fair share is 4).
    result = Replay(
        policy=Policy.GANG,
        gangs=[],
        cpu_capacity=10_000,
        begin=0.0,
        end=200.0,
        useful_cpu_ms=0.0,
        partial_cpu_ms=0.0,
        queues=(QueuePolicy("a", weight=1), QueuePolicy("b", weight=3)),
        queue_names=("a", "b"),
        queue_timeline=[
            (0.0, (5000, 5000), (True, True)),
            (100.0, (4000, 6000), (True, False)),
            (200.0, (0, 0), (False, False)),
        ],
    )
    figures = fairness(result)
    assert figures is not None
    a, b = figures.queues
    assert a.backlogged_seconds == 200
    assert b.backlogged_seconds == 100
    assert a.mean_share == pytest.approx(0.45)
    assert b.mean_share == pytest.approx(0.55)
    assert a.backlogged_share == pytest.approx(0.45)
    assert a.fair_share == pytest.approx((0.25 + 0.4) / 2)
    assert a.deviation == pytest.approx(0.45 - 0.325)
    assert b.backlogged_share == pytest.approx(0.5)
    assert b.fair_share == pytest.approx(0.75)
    assert figures.max_deviation == pytest.approx(0.25)
    assert figures.jain == pytest.approx(jain_index([0.45 / 0.325, 0.5 / 0.75]))
    (first, half, early), (middle, end, late) = share_windows(result, 2)
    assert (first, half, middle, end) == (0.0, 100.0, 100.0, 200.0)
    assert early == pytest.approx([0.5, 0.5])
    assert late == pytest.approx([0.4, 0.6])


def test_entitlements_take_the_tightest_max_up_the_parents() -> None:
    queues = [
        QueuePolicy("org", max={"cpu": 6000}),
        QueuePolicy("a", nominal={"cpu": 8000}, parent="org", weight=2),
    ]
    assert entitlements(queues, ["a", "default"], 10_000) == [
        Entitlement(2, nominal=0.6, max=0.6),
        Entitlement(1, nominal=0.0, max=1.0),
    ]


# -- the shipped sample ----------------------------------------------------------


# Simulates the whole teams sample twice through the facade the scheduler uses, and plots
# it (a few seconds; tens before waiting groups slept until a change could help them).
@pytest.mark.slow
def test_the_teams_sample_runs_end_to_end(tmp_path: Path) -> None:
    plot = tmp_path / "teams.png"
    result = CliRunner().invoke(main, ["simulate", str(TEAMS), "--json", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["scenario"]["queues"] == ["research", "product", "ops"]
    gang = document["policies"]["gang"]
    assert gang["partialGangs"] == 0
    assert gang["finished"] == gang["gangs"]
    assert {q["name"] for q in gang["queues"]} == {"ops", "product", "research"}
    assert 0 < gang["jainIndex"] <= 1
    deviations = {q["name"]: q["deviation"] for q in gang["queues"]}
    assert gang["maxShareDeviation"] == max(abs(d) for d in deviations.values())
    # ops is served up to its nominal first, then capped at its max: while it waits it
    # holds exactly its fair share. research and product share the rest 1:3 but for the
    # fragments their different gang sizes leave (3.3 points, README): within 5 points,
    # where first come first served is 25 points off.
    assert deviations["ops"] == pytest.approx(0.0, abs=1e-9)
    assert gang["maxShareDeviation"] <= 0.05
    assert document["policies"]["baseline"]["maxShareDeviation"] >= 0.2
    ops = next(q for q in gang["queues"] if q["name"] == "ops")
    assert ops["maxShare"] == 0.375
    assert all(window["shares"]["ops"] <= 0.375 + 1e-9 for window in gang["shareOverTime"])
    assert plot.read_bytes().startswith(b"\x89PNG")

    table = CliRunner().invoke(main, ["simulate", str(TEAMS), "--policy", "gang"])
    assert table.exit_code == 0, table.output
    assert "cpu share per queue (of the cluster's cpu):" in table.output
    assert "gang: largest deviation from the fair share" in table.output
    assert "gang: cpu share per queue over time" in table.output


def test_the_teams_sample_never_puts_a_queue_above_its_max() -> None:
    result = replay(load_scenario(TEAMS), Policy.GANG)
    ops = result.queue_names.index("ops")
    assert max(used[ops] for _, used, _ in result.queue_timeline) <= 48_000


# -- parking agrees with the core's own queue ------------------------------------


def core_alone(case: Scenario) -> dict[str, float | None]:
    """Start times when every arrived gang stays in the core's queue (nothing parked)."""
    now = [0.0]
    scheduler = Scheduler(lambda: now[0])
    for node in case.nodes:
        scheduler.upsert_node(node)
    for queue in case.queues:
        scheduler.upsert_queue(queue)
    events = [(g.arrival, 1, i) for i, g in enumerate(case.gangs)]
    heapq.heapify(events)
    started: dict[str, float | None] = {g.name: None for g in case.gangs}
    bound = dict.fromkeys(started, 0)
    number_of = {g.name: i for i, g in enumerate(case.gangs)}
    while events:
        moment = now[0] = events[0][0]
        while events and events[0][0] == moment:
            _, kind, number = heapq.heappop(events)
            gang = case.gangs[number]
            uids = [f"{gang.name}-{i}" for i in range(gang.size)]
            if kind == 0:
                for uid in uids:
                    scheduler.remove_pod(uid)
                continue
            scheduler.upsert_group(
                GroupPolicy(
                    namespace=gang.namespace,
                    name=gang.name,
                    min_member=gang.min_member,
                    priority=gang.priority,
                    created=gang.arrival,
                    queue=gang.queue,
                )
            )
            for uid in uids:
                scheduler.upsert_pod(
                    PodInfo.from_object(
                        {
                            "metadata": {
                                "name": uid,
                                "namespace": gang.namespace,
                                "uid": uid,
                                "labels": {POD_GROUP_LABEL: gang.name},
                            },
                            "spec": {
                                "schedulerName": "coscheduler",
                                "priority": gang.priority,
                                "containers": [
                                    {
                                        "name": "c",
                                        "resources": {"requests": {"cpu": f"{gang.cpu}m"}},
                                    }
                                ],
                            },
                        }
                    )
                )
        while (decision := scheduler.next_decision()) is not None:
            name = decision.group.name
            gang = case.gangs[number_of[name]]
            bound[name] += len(decision.bindings)
            if started[name] is None and bound[name] >= gang.min_member:
                started[name] = moment
                heapq.heappush(events, (moment + gang.run, 0, number_of[name]))
    return started


def random_queued_case(seed: int) -> Scenario:
    rng = random.Random(seed)
    queues: list[dict[str, Any]] = [
        {"name": "a", "weight": rng.randint(1, 4)},
        {"name": "b", "weight": rng.randint(1, 4), "max": {"cpu": str(rng.randint(3, 10))}},
        {"name": "c", "nominal": {"cpu": str(rng.randint(1, 6))}},
    ]
    gangs = []
    for i in range(rng.randint(4, 16)):
        size = rng.randint(1, 4)
        gangs.append(
            series(
                f"g{i}",
                rng.choice(["a", "b", "c", "default"]),
                size=size,
                minMember=rng.randint(1, size),
                requests={"cpu": rng.choice(["500m", "1", "2", "3"])},
                priority=rng.choice([0, 0, 5]),
                arrivalSeconds=rng.choice([0, 0, 10, 25, 40, 70]),
                runSeconds=rng.choice([20, 30, 50, 80]),
            )
        )
    raw = scenario(queues, *gangs)
    raw["cluster"]["nodes"] = [
        {"name": "n", "count": rng.randint(1, 3), "allocatable": {"cpu": "4"}},
        {"name": "m", "allocatable": {"cpu": "3"}},
    ]
    return parse_scenario(raw)


@pytest.mark.parametrize("seed", range(40))
def test_parked_gangs_start_when_the_cores_own_queue_would_start_them(seed: int) -> None:
    case = random_queued_case(seed)
    result = replay(case, Policy.GANG)
    assert {o.gang.name: o.start for o in result.gangs} == core_alone(case)
