"""The simulator models devices (DRA): per-node counts by class, pods asking N of a class."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coscheduler.sim.model import Scenario, ScenarioError, load_scenario, parse_scenario
from coscheduler.sim.replay import Policy, replay
from coscheduler.sim.report import summarize


def gpu_nodes(count: int, gpus: int) -> list[dict[str, Any]]:
    return [{"name": "g", "count": count, "allocatable": {"cpu": "64"}, "devices": {"gpu": gpus}}]


def gang(name: str, size: int, gpus: int, **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "size": size,
        "requests": {"cpu": "1"},
        "devices": {"gpu": gpus},
        "runSeconds": 100,
        **fields,
    }


def scenario(nodes: list[dict[str, Any]], gangs: list[dict[str, Any]], **more: Any) -> Scenario:
    return parse_scenario({"cluster": {"nodes": nodes}, "workload": {"gangs": gangs}, **more})


def starts(result: Any) -> dict[str, float | None]:
    return {o.gang.name: o.start for o in result.gangs}


def test_devices_not_cpu_decide_who_runs() -> None:
    # 2 nodes of 8 GPUs and plenty of cpu: a gang taking all 16 GPUs leaves none for the next.
    result = replay(scenario(gpu_nodes(2, 8), [gang("a", 4, 4), gang("b", 1, 1)]), Policy.GANG)
    assert starts(result) == {"a": 0.0, "b": 100.0}
    assert {o.gang.name: len(o.nodes) for o in result.gangs} == {"a": 2, "b": 1}


def test_a_gang_gets_its_devices_whole_or_holds_none() -> None:
    # Three pods of 8 GPUs on two nodes of 8: never all together.
    too_big = scenario(gpu_nodes(2, 8), [gang("big", 3, 8)])
    gang_result = replay(too_big, Policy.GANG)
    (outcome,) = gang_result.gangs
    assert outcome.start is None
    assert outcome.bound == 0
    assert not outcome.partial
    # Pod by pod, two of them take every GPU and wait there for a third that never fits.
    baseline = replay(too_big, Policy.BASELINE)
    (held,) = baseline.gangs
    assert held.start is None
    assert held.bound == 2
    assert [stuck.name for stuck in summarize(baseline).deadlocked] == ["big"]


def test_devices_go_back_when_a_gang_finishes() -> None:
    gangs = [gang(f"t{i}", 2, 8, arrivalSeconds=0) for i in range(3)]
    result = replay(scenario(gpu_nodes(2, 8), gangs), Policy.GANG)
    assert starts(result) == {"t0": 0.0, "t1": 100.0, "t2": 200.0}


def test_a_queue_capped_in_gpus_runs_its_gangs_in_turn() -> None:
    queues = [{"name": "team", "max": {"deviceclass.resource.kubernetes.io/gpu": "8"}}]
    gangs = [gang("a", 2, 4, queue="team"), gang("b", 2, 4, queue="team")]
    result = replay(scenario(gpu_nodes(4, 8), gangs, queues=queues), Policy.GANG)
    assert starts(result) == {"a": 0.0, "b": 100.0}


def test_a_class_no_node_has_is_refused_with_its_path() -> None:
    with pytest.raises(ScenarioError, match=r"workload\.gangs\[0\]\.devices: .* class tpu"):
        scenario(gpu_nodes(1, 8), [{**gang("a", 1, 1), "devices": {"tpu": 1}}])


def test_device_counts_are_validated() -> None:
    with pytest.raises(ScenarioError, match="devices"):
        scenario(gpu_nodes(1, 8), [gang("a", 1, 0)])
    with pytest.raises(ScenarioError, match="devices"):
        scenario(
            [{"name": "g", "allocatable": {"cpu": "1"}, "devices": {"Not_A_Name": 1}}],
            [gang("a", 1, 1)],
        )


def test_the_shipped_gpu_sample_runs_as_its_comments_say() -> None:
    sample = Path(__file__).parents[2] / "manifests/examples/simulate/gpus.yaml"
    loaded = load_scenario(sample)
    assert starts(replay(loaded, Policy.GANG)) == {"pretrain": 0.0, "finetune": 600.0, "eval": 20.0}
    baseline = replay(loaded, Policy.BASELINE)
    assert [o.gang.name for o in baseline.gangs if o.partial] == ["finetune"]
    assert starts(baseline)["eval"] == 600.0
