"""Scenario files: what is accepted, how it expands, and every error's wording."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coscheduler.sim.model import ScenarioError, load_scenario, parse_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "examples" / "simulate"


def raw(**changes: Any) -> dict[str, Any]:
    gang = {"name": "g", "size": 2, "requests": {"cpu": "1"}, "runSeconds": 10}
    node = {"name": "n", "allocatable": {"cpu": "4"}}
    gang.update(changes.pop("gang", {}))
    node.update(changes.pop("node", {}))
    return {"cluster": {"nodes": [node]}, "workload": {"gangs": [gang]}, **changes}


def test_counts_expand_into_numbered_nodes_and_a_series_of_gangs() -> None:
    scenario = parse_scenario(
        raw(
            node={"count": 12, "allocatable": {"cpu": "500m", "memory": "1Gi"}},
            gang={"count": 3, "arrivalSeconds": 5, "intervalSeconds": 10, "minMember": 1},
        )
    )
    assert [n.name for n in scenario.nodes[:2]] == ["n-00", "n-01"]
    assert scenario.nodes[0].allocatable == {"pods": 110, "cpu": 500, "memory": 2**30}
    assert [(g.name, g.arrival, g.min_member) for g in scenario.gangs] == [
        ("g-0", 5.0, 1),
        ("g-1", 15.0, 1),
        ("g-2", 25.0, 1),
    ]
    assert scenario.cpu_capacity == 6000
    assert scenario.pods == 6


def test_min_member_defaults_to_the_size_and_numbers_are_quantities() -> None:
    scenario = parse_scenario(raw(gang={"requests": {"cpu": 0.25, "nvidia.com/gpu": 1}}))
    assert scenario.gangs[0].min_member == 2
    assert scenario.gangs[0].requests == {"cpu": 250, "nvidia.com/gpu": 1}


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            {"gang": {"minMember": 3}},
            "workload.gangs[0]: minMember 3 is larger than size 2: the gang could never start",
            id="min-member-above-size",
        ),
        pytest.param(
            {"gang": {"minMembers": 1}},
            "workload.gangs[0].minMembers: Extra inputs are not permitted",
            id="typo",
        ),
        pytest.param(
            {"gang": {"requests": {"cpu": "two"}}},
            "workload.gangs[0].requests: cpu: invalid quantity 'two'",
            id="bad-quantity",
        ),
        pytest.param(
            {"gang": {"requests": {"cpu": "-1"}}},
            "workload.gangs[0].requests: cpu: '-1' must not be negative",
            id="negative-quantity",
        ),
        pytest.param(
            {"gang": {"runSeconds": 0}},
            "workload.gangs[0].runSeconds: Input should be greater than 0",
            id="zero-run",
        ),
        pytest.param(
            {"node": {"taints": [{"key": "gpu", "effect": "NoRun"}]}},
            "cluster.nodes[0].taints[0].effect: Input should be 'NoSchedule', "
            "'PreferNoSchedule' or 'NoExecute'",
            id="taint-effect",
        ),
        pytest.param(
            {"node": {"count": 0}},
            "cluster.nodes[0].count: Input should be greater than or equal to 1",
            id="no-nodes-in-pool",
        ),
    ],
)
def test_each_mistake_is_named_by_its_path(changes: dict[str, Any], expected: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(raw(**changes), "case.yaml")
    assert str(caught.value).startswith("case.yaml: invalid scenario:\n")
    assert expected in str(caught.value)


def test_missing_fields_and_sections_are_all_listed_at_once() -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario({"cluster": {"nodes": [{"name": "n"}]}, "workload": {"gangs": [{}]}})
    message = str(caught.value)
    for line in (
        "  cluster.nodes[0].allocatable: Field required",
        "  workload.gangs[0].name: Field required",
        "  workload.gangs[0].size: Field required",
        "  workload.gangs[0].runSeconds: Field required",
    ):
        assert line in message


def test_names_must_be_unique_after_expanding_counts() -> None:
    scenario = raw()
    scenario["workload"]["gangs"] = [
        {"name": "g", "count": 2, "size": 1, "runSeconds": 1},
        {"name": "g-1", "size": 1, "runSeconds": 1},
    ]
    with pytest.raises(ScenarioError, match=r"two gangs are named 'g-1' \(after expanding count\)"):
        parse_scenario(scenario)


def test_a_file_that_is_not_yaml_or_not_a_map_is_refused(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("cluster: [\n")
    with pytest.raises(ScenarioError, match=r"broken.yaml: not valid YAML"):
        load_scenario(broken)
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    with pytest.raises(ScenarioError, match=r"expected a map with 'cluster' and 'workload'"):
        load_scenario(listed)
    with pytest.raises(ScenarioError, match=r"missing.yaml: No such file"):
        load_scenario(tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    "name", ["contention.yaml", "mixed.yaml", "racks.yaml", "teams.yaml", "usage-decay.yaml"]
)
def test_the_shipped_samples_are_valid(name: str) -> None:
    scenario = load_scenario(EXAMPLES / name)
    assert scenario.gangs
