"""The CRD's schema and the pydantic models must describe the same object.

The API server validates with the CRD; the scheduler reads with the models.
Any field, bound, enum or requirement that one has and the other lacks is a
place where a valid object could be unreadable, or an invalid one accepted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from coscheduler.api import labels
from coscheduler.api.podgroup import PodGroupPhase, PodGroupSpec, PodGroupStatus
from coscheduler.api.reasons import Reason

CRD_PATH = Path(__file__).parents[2] / "crds" / "podgroups.yaml"
# Keywords whose values must be equal wherever either side states them.
COMPARED_KEYWORDS = (
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "maxItems",
    "maxProperties",
    "enum",
)


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(CRD_PATH.read_text())
    return document


@pytest.fixture(scope="module")
def crd_schema(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Follow $ref and drop pydantic's ``anyOf [X, null]`` wrapper for optionals."""
    if "$ref" in node:
        node = {
            **defs[node["$ref"].rsplit("/", 1)[1]],
            **{k: v for k, v in node.items() if k != "$ref"},
        }
    if "anyOf" in node:
        non_null = [branch for branch in node["anyOf"] if branch.get("type") != "null"]
        if len(non_null) == 1:
            merged = {k: v for k, v in node.items() if k != "anyOf"}
            return _resolve({**merged, **non_null[0]}, defs)
    return node


def _is_int_or_string(node: dict[str, Any]) -> bool:
    if node.get("x-kubernetes-int-or-string"):
        return True
    types = {branch.get("type") for branch in node.get("anyOf", [])}
    return types == {"integer", "string"}


def _compare(
    crd: dict[str, Any], model: dict[str, Any], defs: dict[str, Any], path: str
) -> list[str]:
    model = _resolve(model, defs)
    problems: list[str] = []
    if _is_int_or_string(crd) or _is_int_or_string(model):
        if not (_is_int_or_string(crd) and _is_int_or_string(model)):
            problems.append(f"{path}: int-or-string on one side only")
        return problems
    if crd.get("type") != model.get("type"):
        problems.append(f"{path}: type {crd.get('type')!r} in CRD, {model.get('type')!r} in model")
        return problems
    if crd.get("format") == "date-time" and model.get("format") != "date-time":
        problems.append(f"{path}: date-time in CRD, not in model")
    for keyword in COMPARED_KEYWORDS:
        crd_value, model_value = crd.get(keyword), model.get(keyword)
        if keyword == "enum" and crd_value is not None and model_value is not None:
            crd_value, model_value = sorted(crd_value), sorted(model_value)
        if crd_value != model_value:
            problems.append(f"{path}: {keyword} {crd_value!r} in CRD, {model_value!r} in model")
    if "default" in crd and crd["default"] != model.get("default"):
        problems.append(
            f"{path}: default {crd['default']!r} in CRD, {model.get('default')!r} in model"
        )
    if crd.get("type") == "object":
        if "additionalProperties" in crd:
            if "additionalProperties" not in model:
                problems.append(f"{path}: a map in CRD, not in model")
            else:
                problems += _compare(
                    crd["additionalProperties"], model["additionalProperties"], defs, f"{path}.*"
                )
            return problems
        crd_props, model_props = crd.get("properties", {}), model.get("properties", {})
        for name in sorted(set(crd_props) ^ set(model_props)):
            side = "CRD" if name in crd_props else "model"
            problems.append(f"{path}.{name}: only in the {side}")
        if sorted(crd.get("required", [])) != sorted(model.get("required", [])):
            problems.append(
                f"{path}: required {crd.get('required')} in CRD, {model.get('required')} in model"
            )
        for name in sorted(set(crd_props) & set(model_props)):
            problems += _compare(crd_props[name], model_props[name], defs, f"{path}.{name}")
    if crd.get("type") == "array":
        problems += _compare(crd["items"], model["items"], defs, f"{path}[]")
    return problems


@pytest.mark.parametrize(
    ("field", "model"),
    [("spec", PodGroupSpec), ("status", PodGroupStatus)],
    ids=["spec", "status"],
)
def test_model_matches_crd_schema(
    crd_schema: dict[str, Any], field: str, model: type[BaseModel]
) -> None:
    model_schema = model.model_json_schema(by_alias=True)
    problems = _compare(
        crd_schema["properties"][field], model_schema, model_schema.get("$defs", {}), field
    )
    assert problems == []


def test_crd_names_match_api_constants(crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{labels.PLURAL}.{labels.GROUP}"
    assert spec["group"] == labels.GROUP
    assert spec["names"]["kind"] == labels.KIND
    assert spec["names"]["plural"] == labels.PLURAL
    assert spec["names"]["shortNames"] == ["pg"]
    assert spec["scope"] == "Namespaced"
    assert [v["name"] for v in spec["versions"]] == [labels.VERSION]


def test_crd_carries_api_approval_annotation(crd: dict[str, Any]) -> None:
    # The API server refuses a CRD in a *.k8s.io group without this annotation.
    assert crd["metadata"]["annotations"]["api-approved.kubernetes.io"]


def test_crd_has_status_subresource_and_printer_columns(crd: dict[str, Any]) -> None:
    (version,) = crd["spec"]["versions"]
    assert version["subresources"] == {"status": {}}
    columns = [column["name"] for column in version["additionalPrinterColumns"]]
    assert columns == [
        "Phase",
        "MinMember",
        "Scheduled",
        "Running",
        "Succeeded",
        "Failed",
        "Position",
        "Cluster",
        "Age",
    ]


def cel_rules(node: Any) -> list[dict[str, Any]]:
    """Every ``x-kubernetes-validations`` rule anywhere below ``node``."""
    if isinstance(node, dict):
        found = list(node.get("x-kubernetes-validations", []))
        for value in node.values():
            found += cel_rules(value)
        return found
    if isinstance(node, list):
        return [rule for value in node for rule in cel_rules(value)]
    return []


def test_every_cel_rule_has_a_human_message(crd_schema: dict[str, Any]) -> None:
    rules = cel_rules(crd_schema)
    assert len(rules) >= 3
    for rule in rules:
        assert rule.get("message") or rule.get("messageExpression"), rule["rule"]


CONDITION_REASONS = [
    Reason.GROUP_NOT_FOUND,
    Reason.NOT_ENOUGH_MEMBERS,
    Reason.UNSUPPORTED_FIELD,
    Reason.VOLUME_NOT_READY,
    Reason.MIN_RESOURCES_UNAVAILABLE,
    Reason.NOT_ENOUGH_RESOURCES,
    Reason.TIMEOUT,
    Reason.INTERNAL_ERROR,
    Reason.QUEUE_NOT_FOUND,
    Reason.QUEUE_CLOSED,
    Reason.QUEUE_NOT_ALLOWED,
    Reason.QUEUE_INVALID,
    Reason.QUEUE_MAX_REACHED,
    Reason.QUEUE_CANNOT_BORROW,
    Reason.MIN_MEMBER_SCHEDULED,
    Reason.WAITING,
    Reason.SCHEDULABLE,
]


def _status_properties(crd_schema: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = crd_schema["properties"]["status"]["properties"]
    return properties


@pytest.mark.parametrize("phase", list(PodGroupPhase), ids=str)
def test_crd_describes_every_phase(crd_schema: dict[str, Any], phase: PodGroupPhase) -> None:
    assert phase.value in _status_properties(crd_schema)["phase"]["description"]


@pytest.mark.parametrize("reason", CONDITION_REASONS, ids=str)
def test_crd_and_readme_name_every_condition_reason(
    crd_schema: dict[str, Any], reason: Reason
) -> None:
    conditions = _status_properties(crd_schema)["conditions"]
    assert reason.value in conditions["items"]["properties"]["reason"]["description"]
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert f"`{reason.value}`" in readme


# Found by e2e/tests/test_bad_input.py: CEL's isQuantity takes "." and exponents of
# any size, which the models refuse; such a PodGroup was accepted, then unreadable.
QUANTITY_EDGES = [".", "+.", "1e1001", "1e-1001", "1e99999", "1e999", "1.", ".5e3", "1e3", "1Ki"]


@pytest.mark.parametrize("text", QUANTITY_EDGES)
def test_a_min_resources_quantity_the_crd_accepts_the_models_read(
    crd_schema: dict[str, Any], text: str
) -> None:
    quantity = crd_schema["properties"]["spec"]["properties"]["minResources"][
        "additionalProperties"
    ]
    (pattern,) = [
        re.search(r"self\.matches\('(.*)'\)", rule["rule"])
        for rule in quantity["x-kubernetes-validations"]
        if "matches" in rule["rule"]
    ]
    assert pattern is not None
    # The CEL string literal's "\\." is the regular expression's "\.".
    if re.fullmatch(pattern[1].replace("\\\\", "\\"), text):
        PodGroupSpec(min_member=1, min_resources={"cpu": text})
    else:
        with pytest.raises(ValueError, match="invalid quantity"):
            PodGroupSpec(min_member=1, min_resources={"cpu": text})
