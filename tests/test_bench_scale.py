"""The scale suite's pieces that need no cluster: the mix, the histogram quantiles,
the planner's members label and KWOK's configuration for many nodes."""

from __future__ import annotations

import pytest
import yaml

from bench import histograms, runner
from bench import workloads as wl
from coscheduler.runtime.metrics import members_class
from e2e import kwok_stages


def test_scale_mix_has_an_equal_share_per_size_and_the_exact_pod_count() -> None:
    workload = wl.scale(50_000, (1, 8, 64, 512), 5_000)
    sizes = [g.size for g in workload.gangs]
    assert workload.total_pods == 50_000
    assert sizes.count(512) == 24
    assert sizes.count(64) == 195
    assert sizes.count(8) == 1_562
    # Interleaved: the first gangs are one of each size.
    assert sizes[:4] == [1, 8, 64, 512]
    assert all(g.min_member == g.size for g in workload.gangs)


def test_scale_suite_runs_the_ceiling_and_default_beside_the_gang_peers() -> None:
    suite = runner.build_suite(
        "scale", ["ceiling", "ours", "default", "native"], ["high"], "full",
        (1, 8, 64, 512), (5_000,), None, 10, 50_000,
    )  # fmt: skip
    assert [t.peer for t in suite.trials] == ["ceiling", "ours", "default", "native"]
    assert suite.trials[0].workload.timeout_seconds == 1_000  # one second per 50 pods


def test_quantile_interpolates_within_the_bucket_and_filters_labels() -> None:
    name = "coscheduler_planner_duration_seconds"
    samples = {
        f'{name}_bucket{{members="65-512",le="0.01"}}': 0.0,
        f'{name}_bucket{{members="65-512",le="0.05"}}': 100.0,
        f'{name}_bucket{{members="65-512",le="+Inf"}}': 100.0,
        f'{name}_bucket{{members="1",le="0.01"}}': 50.0,
        f'{name}_bucket{{members="1",le="0.05"}}': 50.0,
        f'{name}_bucket{{members="1",le="+Inf"}}': 50.0,
    }
    assert histograms.quantile(samples, name, 0.5, 'members="65-512"') == pytest.approx(0.03)
    assert histograms.count(samples, name, 'members="65-512"') == 100
    assert histograms.count(samples, name) == 150
    assert histograms.quantile(samples, "absent", 0.99) is None


def test_members_class_bounds() -> None:
    assert [members_class(n) for n in (1, 2, 8, 9, 64, 65, 512, 513)] == [
        "1", "2-8", "2-8", "9-64", "9-64", "65-512", "65-512", "513+",
    ]  # fmt: skip


def test_many_nodes_kwok_config_sets_leases_workers_and_our_node_stages() -> None:
    documents = list(
        yaml.safe_load_all(kwok_stages.config_yaml(job_duration_seconds=1, node_lease_seconds=240))
    )
    options = documents[0]["options"]
    assert documents[0]["kind"] == "KwokConfiguration"
    assert options["nodeLeaseDurationSeconds"] == 240
    names = [d["metadata"]["name"] for d in documents[1:]]
    assert names[:2] == ["node-ready", "node-heartbeat-slow"]
    default = list(yaml.safe_load_all(kwok_stages.config_yaml(job_duration_seconds=1)))
    assert all(d["kind"] == "Stage" and d["spec"]["resourceRef"]["kind"] == "Pod" for d in default)


def test_writes_table_divides_each_kind_by_the_request_window() -> None:
    from bench import scale_report

    figures: dict[str, object] = {
        "requests_window_s": 97.0,
        "stopped": "only 10/50000 pods bound after 600s",
    }
    trial = {
        "workload": "scale", "peer": "ceiling", "ok": True,
        "params": {"nodes": 5_000, "pods": 50_000},
        "figures": figures,
        "requests": {"POST pods/binding": 5_000.0, "PATCH pods/status": 1_000.0,
                     "PUT leases": 500.0, "POST podgroups/status": 100.0, "GET nodes": 9.0},
    }  # fmt: skip
    document = {"started": "2026-11-26T07:00:00+00:00", "trials": [trial]}
    lines = scale_report.write_rows([document])
    # 100 s (97 + the settle): Bindings, pod status, node status, Leases, events, other, all.
    assert lines[-1] == "| 5,000 | ceiling | 100 s | 50.0 | 10.0 | 0.0 | 5.0 | 0.0 | 1.0 | 66.0 |"
    # Without the window figure, a stopped trial spans its time limit.
    del figures["requests_window_s"]
    assert "| 603 s |" in scale_report.write_rows([document])[-1]


def test_node_lease_grows_with_the_nodes_so_their_health_writes_stay_bounded() -> None:
    assert runner.node_lease_seconds(1_000) is None
    assert runner.node_lease_seconds(2_000) == 500
    lease = runner.node_lease_seconds(5_000)
    assert lease == 1_250
    # 4 Lease renewals and about one status heartbeat per node per Lease.
    assert 5 * 5_000 / lease == runner.NODE_HEALTH_WRITES_PER_S


def test_scale_table_sets_cpu_to_the_last_binding_per_pod_against_the_ceiling() -> None:
    from bench import scale_report

    def trial(peer: str, bound: int, cost: dict[str, float], partial: int) -> dict[str, object]:
        figures = {"pods_bound": bound, "pods_per_s_from_start": 100.0,
                   "gangs_partial_beyond_burst": partial}  # fmt: skip
        return {"workload": "scale", "peer": peer, "ok": True, "figures": figures,
                "params": {"nodes": 5_000, "pods": 50_000}, "cost": cost}  # fmt: skip

    document = {
        "started": "2026-11-29T00:00:00+00:00",
        "trials": [
            # The ceiling bound everything: its CPU to the last Binding (not the settle's) counts.
            trial("ceiling", 50_000, {"cpu_s": 30.0, "cpu_s_to_all_bound": 20.0}, 0),
            # Ours stopped at half: its whole trial's CPU, per pod bound.
            trial("ours", 25_000, {"cpu_s": 15.0}, 2),
        ],
    }
    ceiling, ours = scale_report.rows([document])[2:]
    assert ceiling.endswith("| 20.0 | 1.00 | 0 |")
    assert ours.endswith("| 15.0 | 1.50 | 2 |")


def test_cost_keeps_the_cpu_at_the_last_binding_beside_the_whole_trial() -> None:
    from types import SimpleNamespace
    from typing import cast

    from bench import trial
    from bench.observe import Recorder, Sampler
    from bench.workloads import ALL_BOUND

    sampler = Sampler({})
    reading = {"cpu_s": 1.5, "peak_rss_bytes": 2**20, "rss_bytes": 2**20}
    sampler.marks[ALL_BOUND] = {"ours": reading}
    sampler.last = {"ours": {**reading, "cpu_s": 2.0}}
    cost = trial._cost(sampler, cast(Recorder, SimpleNamespace(bound_count=100)), {})
    assert (cost["cpu_s"], cost["cpu_s_to_all_bound"]) == (2.0, 1.5)
    assert cost["processes"]["ours"]["cpu_s_to_all_bound"] == 1.5
    sampler.marks.clear()  # not every pod bound: no such reading
    assert "cpu_s_to_all_bound" not in trial._cost(
        sampler, cast(Recorder, SimpleNamespace(bound_count=100)), {}
    )
