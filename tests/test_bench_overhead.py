"""The preemption-overhead suite of the bench: its trials, ours' counters, its tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import runner
from bench.overhead_report import OFF, ON, counters_table, overhead_table, summary_row
from bench.peers import ALL_PEERS, PeerContext, make_peer
from bench.trial import _attempts_by_result, _preemption_figures

Json = dict[str, Any]


def _throughput(peer: str, pods_per_s: float, cpu_s: float, size: int = 8) -> Json:
    return {
        "workload": "overhead-throughput",
        "peer": peer,
        "ok": True,
        "params": {"gang_size": size},
        "figures": {"pods_per_s_from_start": pods_per_s, "bind_rate_pods_per_s": pods_per_s},
        "cost": {"processes": {peer: {"cpu_s": cpu_s}}},
    }


def _contention(peer: str, makespan: float, searches: int, not_placed: int) -> Json:
    return {
        "workload": "overhead-contention",
        "peer": peer,
        "ok": True,
        "params": {},
        "figures": {
            "makespan_s": makespan,
            "wait_mean_s": 10.0,
            "planner_seconds": 0.5,
            "attempts_by_result": {"scheduled": 17, "unschedulable": not_placed, "waiting": 9},
            "preemption": {
                "attempts": searches,
                "plans_none": searches,
                "plans_found": 0,
                "evicted_pods": 0,
            },
        },
        "cost": {"processes": {peer: {"cpu_s": 3.0}}},
    }


def test_the_suite_interleaves_off_and_on_and_alternates_which_goes_first() -> None:
    suite = runner.build_suite("preemption-overhead", ["reference"], ["high"], "small", (8, 64),
                               rounds=3)  # fmt: skip
    kinds = [t.workload.kind for t in suite.trials]
    assert kinds.count("overhead-throughput") == 2 * 2 * 3
    assert kinds.count("overhead-contention") == 2 * 3
    peers = [t.peer for t in suite.trials]
    per_round = len(peers) // 3
    rounds = [peers[i * per_round : (i + 1) * per_round] for i in range(3)]
    assert rounds[0][:2] == [OFF, ON]  # --peers is not read: the pair is the suite
    assert rounds[1][:2] == [ON, OFF]
    assert rounds[2] == rounds[0]
    for first, second in zip(suite.trials[::2], suite.trials[1::2], strict=True):
        assert first.workload is second.workload  # each pair runs the same workload


def test_the_off_variant_of_ours_only_adds_the_flag() -> None:
    off, on = make_peer(OFF), make_peer(ON)
    binaries: Any = None  # ours runs this repository's own entry point
    ctx = PeerContext(binaries, Path("peer.kubeconfig"), Path("peer"), 1, 1, Path("logs"))
    argv_off, argv_on = off.argv(ctx)[0], on.argv(ctx)[0]
    assert "--preemption=off" in argv_off
    assert not any(a.startswith("--preemption") for a in argv_on)  # on: the default
    assert OFF not in ALL_PEERS


def test_ours_counters_are_read_from_its_metrics() -> None:
    own = {
        "coscheduler_preemption_attempts_total": 3.0,
        'coscheduler_preemption_plans_total{outcome="none"}': 3.0,
        'coscheduler_scheduling_attempts_total{result="scheduled"}': 20.0,
        'coscheduler_scheduling_attempts_total{result="unschedulable"}': 41.0,
    }
    assert _preemption_figures(own) == {"attempts": 3, "plans_found": 0, "plans_none": 3,
                                        "evicted_pods": 0, "evicted_groups": 0}  # fmt: skip
    assert _attempts_by_result(own) == {"scheduled": 20, "unschedulable": 41}
    assert _preemption_figures({"scheduler_permit_wait_duration_seconds_sum": 1.0}) == {}


def test_a_row_gives_medians_spread_ratios_and_whether_on_is_within_off() -> None:
    cells = summary_row([100.0, 80.0, 120.0], [90.0, 100.0, 110.0])
    assert cells[1] == "100 (80-120)"
    assert cells[3] == "100 (90-110)"
    assert cells[4] == "1.00x"
    assert cells[5] == "0.92x (0.90-1.25)"  # round by round: 0.9, 1.25, 0.917
    assert cells[6] == "yes"
    # Outside the spread: worse, or better, as the figure reads (CPU-s: lower is better).
    assert summary_row([100.0, 101.0], [90.0, 91.0])[6] == "better"
    assert summary_row([100.0, 101.0], [110.0, 111.0])[6] == "**no**"
    assert summary_row([100.0, 101.0], [90.0, 91.0], higher_is_better=True)[6] == "**no**"
    assert summary_row([100.0, 101.0], [110.0, 111.0], higher_is_better=True)[6] == "better"


def test_the_table_pairs_off_and_on_per_workload_and_leaves_failures_out() -> None:
    trials = [
        _throughput(OFF, 100.0, 5.0), _throughput(ON, 98.0, 5.2),
        _throughput(ON, 50.0, 6.0), _throughput(OFF, 60.0, 6.1),
        _throughput(OFF, 70.0, 4.0, size=64), _throughput(ON, 71.0, 4.1, size=64),
        _contention(OFF, 90.0, 0, 40), _contention(ON, 92.0, 6, 41),
        {**_throughput(ON, 1.0, 1.0), "ok": False},
        _throughput("reference", 500.0, 1.0),  # not of the suite
    ]  # fmt: skip
    table = overhead_table(trials)
    rows = table.splitlines()
    pods = next(r for r in rows if r.startswith("| throughput, gangs of 8 | pods/s from start"))
    assert "| 100, 60 | 80 (60-100) | 98, 50 | 74 (50-98) | 0.93x |" in pods
    assert rows.index(pods) < next(i for i, r in enumerate(rows) if "gangs of 64" in r)
    assert any(r.startswith("| contention | makespan, s | 90 | 90 (90-90) | 92 |") for r in rows)
    assert "1 trial(s) failed" in table
    counters = counters_table(trials).splitlines()
    assert "| contention | off | 40 | 0 | 0 | 0 | 0 |" in counters
    assert "| contention | on | 41 | 6 | 6 | 0 | 0 |" in counters
