"""The replay on tiny hand-made cases whose answers are known exactly.

Each case says what a person would work out on paper: which gang starts when,
what is held while waiting, what deadlocks. A last test holds the replay to
the core's own queue driven the plain way (a loop written here), on random
workloads.
"""

from __future__ import annotations

import heapq
import random
from typing import Any

import pytest

from coscheduler.api.labels import POD_GROUP_LABEL
from coscheduler.api.pod import PodInfo
from coscheduler.core import GroupPolicy, Scheduler
from coscheduler.sim.model import DEFAULT_NAMESPACE as NAMESPACE
from coscheduler.sim.model import Scenario, parse_scenario
from coscheduler.sim.replay import Policy, replay
from coscheduler.sim.report import percentile, summarize


def scenario(nodes: list[dict[str, Any]], gangs: list[dict[str, Any]]) -> Scenario:
    return parse_scenario({"cluster": {"nodes": nodes}, "workload": {"gangs": gangs}})


def cpu_nodes(count: int, cpu: str) -> list[dict[str, Any]]:
    return [{"name": "n", "count": count, "allocatable": {"cpu": cpu}}]


def gang(name: str, size: int, cpu: str = "1", **fields: Any) -> dict[str, Any]:
    return {"name": name, "size": size, "requests": {"cpu": cpu}, "runSeconds": 100, **fields}


def starts(result: Any) -> dict[str, float | None]:
    return {o.gang.name: o.start for o in result.gangs}


# Ten 1-cpu nodes; two gangs of six 1-cpu pods (60% of the cluster each), both at t=0.
TWO_AT_SIXTY = scenario(cpu_nodes(10, "1"), [gang("a", 6), gang("b", 6)])


def test_gang_policy_runs_two_sixty_percent_gangs_one_after_the_other() -> None:
    result = replay(TWO_AT_SIXTY, Policy.GANG)
    assert starts(result) == {"a": 0.0, "b": 100.0}
    summary = summarize(result)
    assert summary.makespan_seconds == 200.0
    assert summary.wait_mean_seconds == 50.0
    assert summary.wait_p99_seconds == 100.0
    assert summary.partial_gangs == 0
    assert summary.partial_cpu_seconds == 0.0
    assert summary.deadlocked == ()
    # 6 cpu for 200 s out of 10 cpu for 200 s.
    assert summary.utilization == pytest.approx(0.6)
    assert summary.allocated == pytest.approx(0.6)


def test_baseline_holds_four_pods_of_the_second_gang_while_the_first_runs() -> None:
    result = replay(TWO_AT_SIXTY, Policy.BASELINE)
    assert starts(result) == {"a": 0.0, "b": 100.0}
    summary = summarize(result)
    assert summary.partial_gangs == 1
    # b's 4 pods (1 cpu each) wait bound from 0 to 100 s for its last 2.
    assert summary.partial_cpu_seconds == 400.0
    assert summary.utilization == pytest.approx(0.6)
    assert summary.allocated == pytest.approx((1200 + 400) / 2000)
    assert summary.deadlocked == ()


# 32 cpu. batch (16 cpu) runs 0-300 s; train (24 cpu, priority 0) comes at 10 s,
# serve (24 cpu, priority 100) at 20 s.
PRIORITY_DEADLOCK = scenario(
    cpu_nodes(4, "8"),
    [
        gang("batch", 4, "4", runSeconds=300),
        gang("train", 6, "4", arrivalSeconds=10, runSeconds=600),
        gang("serve", 6, "4", priority=100, arrivalSeconds=20, runSeconds=600),
    ],
)


def test_gang_policy_places_the_higher_priority_gang_first_and_never_deadlocks() -> None:
    result = replay(PRIORITY_DEADLOCK, Policy.GANG)
    assert starts(result) == {"batch": 0.0, "serve": 300.0, "train": 900.0}
    summary = summarize(result)
    assert summary.makespan_seconds == 1500.0
    assert summary.partial_cpu_seconds == 0.0
    assert summary.deadlocked == ()


def test_baseline_deadlocks_when_two_gangs_each_hold_half_the_cluster() -> None:
    result = replay(PRIORITY_DEADLOCK, Policy.BASELINE)
    assert starts(result) == {"batch": 0.0, "train": None, "serve": None}
    summary = summarize(result)
    assert summary.makespan_seconds is None
    assert summary.finished == 1
    assert [(d.name, d.bound, d.min_member) for d in summary.deadlocked] == [
        ("train", 4, 6),
        ("serve", 4, 6),
    ]
    # train holds 16 cpu from 10 s until the last event (batch's end at 300 s).
    assert summary.partial_cpu_seconds == 16 * 290
    assert result.end == 300.0
    assert summary.partial_gangs == 2


def test_elastic_members_follow_once_min_member_run() -> None:
    # 8 cpu; a gang of 8 needing 6, behind a 4-cpu job that runs 0-50.
    case = scenario(
        cpu_nodes(1, "8"),
        [gang("job", 4, runSeconds=50), gang("etl", 8, minMember=6, arrivalSeconds=1)],
    )
    gang_result = replay(case, Policy.GANG)
    # At 1 s only 4 cpu are free: fewer than 6, so nothing is bound.
    assert starts(gang_result) == {"job": 0.0, "etl": 50.0}
    assert summarize(gang_result).partial_cpu_seconds == 0.0
    etl = gang_result.gangs[1]
    assert etl.bound == 8  # all 8 fit at 50 s, bound in the same decision
    baseline = replay(case, Policy.BASELINE)
    # The baseline binds 4 at once and waits with them until job ends.
    assert starts(baseline) == {"job": 0.0, "etl": 50.0}
    assert summarize(baseline).partial_cpu_seconds == 4 * 49


def test_a_gang_larger_than_the_cluster_never_starts_and_only_the_baseline_holds_pods() -> None:
    case = scenario(cpu_nodes(2, "2"), [gang("huge", 5), gang("small", 1, arrivalSeconds=1)])
    gang_summary = summarize(replay(case, Policy.GANG))
    assert gang_summary.never_started == ("huge",)
    assert gang_summary.deadlocked == ()
    assert gang_summary.finished == 1
    baseline = summarize(replay(case, Policy.BASELINE))
    assert [(d.name, d.bound) for d in baseline.deadlocked] == [("huge", 4)]
    assert baseline.never_started == ("small",)


def test_taints_and_selectors_keep_gangs_on_their_pool() -> None:
    case = scenario(
        [
            {"name": "cpu", "count": 2, "allocatable": {"cpu": "4"}, "labels": {"pool": "cpu"}},
            {
                "name": "gpu",
                "count": 1,
                "allocatable": {"cpu": "4", "nvidia.com/gpu": 4},
                "labels": {"pool": "gpu"},
                "taints": [{"key": "gpu", "effect": "NoSchedule"}],
            },
        ],
        [
            # 12 cpu exist, but the gpu node is tainted: 8 usable without a toleration.
            gang("wide", 9, arrivalSeconds=0),
            {
                "name": "train",
                "size": 2,
                "requests": {"cpu": "2", "nvidia.com/gpu": 2},
                "runSeconds": 100,
                "nodeSelector": {"pool": "gpu"},
                "tolerations": [{"key": "gpu", "operator": "Exists"}],
            },
        ],
    )
    result = replay(case, Policy.GANG)
    assert starts(result) == {"wide": None, "train": 0.0}


def test_wait_percentile_is_nearest_rank() -> None:
    assert percentile([0.0, 100.0], 0.99) == 100.0
    assert percentile(list(range(1, 101)), 0.99) == 99
    assert percentile([5.0], 0.99) == 5.0


# -- the replay against the core's own queue, driven the plain way ----------------------


def plain_replay(case: Scenario, policy: Policy) -> dict[str, float | None]:
    """Start times with the core's queue deciding alone: every group tried after every event."""
    now = [0.0]
    scheduler = Scheduler(lambda: now[0])
    for node in case.nodes:
        scheduler.upsert_node(node)
    events = [(g.arrival, 1, i) for i, g in enumerate(case.gangs)]
    heapq.heapify(events)
    started: dict[str, float | None] = {g.name: None for g in case.gangs}
    bound: dict[str, int] = {g.name: 0 for g in case.gangs}
    pods: dict[str, list[str]] = {g.name: [] for g in case.gangs}
    index = {g.name: i for i, g in enumerate(case.gangs)}
    while events:
        moment = events[0][0]
        now[0] = moment
        while events and events[0][0] == moment:
            _, kind, number = heapq.heappop(events)
            g = case.gangs[number]
            if kind == 0:
                for uid in pods[g.name]:
                    scheduler.remove_pod(uid)
                continue
            scheduler.upsert_group(
                GroupPolicy(
                    namespace=NAMESPACE,
                    name=g.name,
                    min_member=g.min_member if policy is Policy.GANG else 1,
                    priority=g.priority,
                    created=g.arrival,
                )
            )
            requests = {k: f"{v}m" if k == "cpu" else str(v) for k, v in g.requests.items()}
            for i in range(g.size):
                uid = f"{g.name}-{i}"
                pods[g.name].append(uid)
                scheduler.upsert_pod(
                    PodInfo.from_object(
                        {
                            "metadata": {
                                "name": uid,
                                "namespace": NAMESPACE,
                                "uid": uid,
                                "labels": {POD_GROUP_LABEL: g.name},
                            },
                            "spec": {
                                "schedulerName": "coscheduler",
                                "priority": g.priority,
                                "containers": [{"name": "c", "resources": {"requests": requests}}],
                            },
                        }
                    )
                )
        while (decision := scheduler.next_decision()) is not None:
            name = decision.group.name
            bound[name] += len(decision.bindings)
            if started[name] is None and bound[name] >= case.gangs[index[name]].min_member:
                started[name] = moment
                heapq.heappush(events, (moment + case.gangs[index[name]].run, 0, index[name]))
    return started


def random_case(seed: int) -> Scenario:
    rng = random.Random(seed)
    gangs = []
    for i in range(rng.randint(3, 14)):
        size = rng.randint(1, 6)
        gangs.append(
            {
                "name": f"g{i}",
                "size": size,
                "minMember": rng.randint(1, size),
                "requests": {"cpu": rng.choice(["500m", "1", "2", "3"])},
                "priority": rng.choice([0, 0, 5]),
                "arrivalSeconds": rng.choice([0, 0, 10, 25, 40, 70]),
                "runSeconds": rng.choice([20, 30, 50, 80]),
            }
        )
    nodes = [
        {"name": "a", "count": rng.randint(1, 3), "allocatable": {"cpu": "4"}},
        {"name": "b", "count": rng.randint(0, 2) or 1, "allocatable": {"cpu": "3"}},
    ]
    return scenario(nodes, gangs)


@pytest.mark.parametrize("policy", list(Policy), ids=lambda p: p.value)
@pytest.mark.parametrize("seed", range(40))
def test_replay_starts_gangs_when_the_cores_own_queue_would(policy: Policy, seed: int) -> None:
    case = random_case(seed)
    assert starts(replay(case, policy)) == plain_replay(case, policy)


def test_gangs_arriving_behind_a_running_one_find_their_place_in_line() -> None:
    """The positions status.queuePosition would show: priority first, then age; a gang
    placed at once was first in line; a later arrival of higher priority goes ahead."""
    case = scenario(
        cpu_nodes(1, "4"),
        [
            gang("first", 4, runSeconds=100),
            gang("second", 4, arrivalSeconds=1),
            gang("third", 4, arrivalSeconds=2),
            gang("urgent", 4, priority=100, arrivalSeconds=3),
        ],
    )
    result = replay(case, Policy.GANG)
    places = {o.gang.name: (o.queue_position, o.cluster_position) for o in result.gangs}
    assert places == {"first": (1, 1), "second": (1, 1), "third": (2, 2), "urgent": (1, 1)}
    assert starts(result) == {"first": 0.0, "second": 200.0, "third": 300.0, "urgent": 100.0}
    summary = summarize(result)
    assert (summary.queue_position_median, summary.queue_position_max) == (1.0, 2)
