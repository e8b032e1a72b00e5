"""The Queue CRD and its models describe the same object; reading Queues for the core."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from coscheduler.api.labels import GROUP, VERSION
from coscheduler.api.queue import (
    PLURAL,
    QUEUE_LABEL,
    Queue,
    QueueSpec,
    QueueStatus,
    pod_queue_name,
)
from coscheduler.runtime.handlers.queues import queue_policy
from tests.api.test_crd_agreement import _compare, cel_rules

CRD_PATH = Path(__file__).parents[2] / "crds" / "queues.yaml"


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(CRD_PATH.read_text())
    return document


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


@pytest.mark.parametrize(("field", "model"), [("spec", QueueSpec), ("status", QueueStatus)])
def test_model_matches_crd_schema(crd: dict[str, Any], field: str, model: type[BaseModel]) -> None:
    model_schema = model.model_json_schema(by_alias=True)
    crd_field = dict(_schema(crd)["properties"][field])
    crd_field.pop("default", None)  # spec: {} is defaulted by the server; the model defaults too
    problems = _compare(crd_field, model_schema, model_schema.get("$defs", {}), field)
    assert problems == []


def test_crd_names_and_columns(crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{PLURAL}.{GROUP}"
    assert spec["scope"] == "Cluster"
    assert spec["names"]["kind"] == "Queue"
    # Volcano's Queue is "q"; Kueue's are "cq", "lq" and "queue".
    assert not set(spec["names"]["shortNames"]) & {"q", "cq", "lq", "queue", "queues"}
    (version,) = spec["versions"]
    assert version["name"] == VERSION
    assert version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == ["State", "Weight", "Parent", "Share", "Pending", "Running", "Age"]


def test_every_cel_rule_has_a_human_message(crd: dict[str, Any]) -> None:
    rules = cel_rules(_schema(crd))
    assert len(rules) >= 4
    for rule in rules:
        assert rule.get("message"), rule["rule"]


def queue(name: str = "team-a", **spec: Any) -> Queue:
    return Queue.model_validate({"metadata": {"name": name}, "spec": spec})


def test_the_model_refuses_what_the_schema_refuses() -> None:
    with pytest.raises(ValidationError, match=r"spec\.max is below spec\.nominal for cpu"):
        queue(nominal={"cpu": "8"}, max={"cpu": "4"})
    with pytest.raises(ValidationError, match="own parent"):
        queue(parent="team-a")
    with pytest.raises(ValidationError, match=r"1\.5\.5"):
        queue(nominal={"cpu": "1.5.5"})


def test_a_queue_reads_as_the_cores_policy() -> None:
    policy = queue_policy(
        queue(
            nominal={"cpu": "8", "nvidia.com/gpu": 2},
            max={"cpu": "12"},
            weight=3,
            state="Closed",
            parent="org",
            namespaces=["ml"],
            namespaceSelector={
                "matchLabels": {"team": "a"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["dev"]}],
            },
        )
    )
    assert policy.nominal == {"cpu": 8000, "nvidia.com/gpu": 2}
    assert policy.max == {"cpu": 12000}
    assert (policy.weight, policy.open, policy.parent) == (3, False, "org")
    assert policy.allows("ml", {})
    assert policy.allows("other", {"team": "a", "tier": "prod"})
    assert not policy.allows("other", {"team": "a", "tier": "dev"})


def test_an_empty_selector_admits_every_namespace_and_none_admits_none() -> None:
    assert queue_policy(queue(namespaceSelector={})).allows("any", {})
    assert not queue_policy(queue()).allows("any", {})
    assert queue_policy(queue("default")).allows("any", {})


def test_a_lone_pod_names_its_queue_by_label() -> None:
    assert pod_queue_name({QUEUE_LABEL: "batch"}) == "batch"
    assert pod_queue_name({}) == "default"
    assert pod_queue_name(None) == "default"
    assert pod_queue_name({}, "volcano-q") == "volcano-q", "Volcano's queue-name annotation"
    assert pod_queue_name({QUEUE_LABEL: "batch"}, "volcano-q") == "batch"


def test_a_queue_lends_at_most_its_nominal() -> None:
    with pytest.raises(ValidationError, match=r"spec\.lendingLimit is above spec\.nominal for cpu"):
        queue(nominal={"cpu": "8"}, lendingLimit={"cpu": "9"})
    with pytest.raises(ValidationError, match=r"for nvidia\.com/gpu"):
        queue(nominal={"cpu": "8"}, lendingLimit={"nvidia.com/gpu": 1})
    lends = queue_policy(queue(nominal={"cpu": "8"}, lendingLimit={"cpu": "2", "memory": 0}))
    assert lends.lending_limit == {"cpu": 2000, "memory": 0}
    assert (lends.kept("cpu"), lends.kept("memory"), lends.kept("pods")) == (6000, 0, 0)
