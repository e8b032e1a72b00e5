"""Node parsing: allocatable in integers, taints, cordon, typed errors."""

from __future__ import annotations

from typing import Any

import pytest

from coscheduler.api.node import NodeInfo, NodeParseError, Taint


def raw_node(**parts: Any) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "labels": {"zone": "a"}}, **parts}


def test_fields() -> None:
    node = NodeInfo.from_object(
        raw_node(
            spec={
                "unschedulable": True,
                "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
            },
            status={
                "allocatable": {
                    "cpu": "3900m",
                    "memory": "15Gi",
                    "pods": "110",
                    "nvidia.com/gpu": "4",
                },
                "capacity": {"cpu": "4"},
            },
        )
    )
    assert node.allocatable == {"cpu": 3900, "memory": 15 * 2**30, "pods": 110, "nvidia.com/gpu": 4}
    assert node.taints == (Taint("gpu", "true", "NoSchedule"),)
    assert node.unschedulable
    assert node.labels == {"zone": "a"}


def test_capacity_stands_in_for_missing_allocatable() -> None:
    node = NodeInfo.from_object(raw_node(status={"capacity": {"cpu": "2"}}))
    assert node.allocatable == {"cpu": 2000}


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(raw_node(status={"allocatable": {"cpu": "two"}}), id="bad-quantity"),
        pytest.param(raw_node(spec={"taints": [{"key": "k", "effect": "Sometimes"}]}), id="effect"),
        pytest.param(raw_node(spec={"unschedulable": "yes"}), id="unschedulable"),
    ],
)
def test_malformed_nodes_name_the_node(raw: dict[str, Any]) -> None:
    with pytest.raises(NodeParseError, match="node n1"):
        NodeInfo.from_object(raw)


def test_nameless_node() -> None:
    with pytest.raises(NodeParseError):
        NodeInfo.from_object({"metadata": {}})
