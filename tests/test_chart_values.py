"""The Helm chart's values restate coscheduler's settings: same defaults, same bounds.

``values.yaml`` gives each setting of ``coscheduler run`` that the chart
exposes its default, and ``values.schema.json`` its bounds and choices; both
are written by hand, so this test holds them to ``runtime/settings.py``. (The
chart's rendering is tested against helm itself in ``e2e/tests/test_chart.py``.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import annotated_types
import pytest
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from coscheduler.runtime.settings import SettingDoc, Settings, documented_settings

CHART = Path(__file__).resolve().parents[1] / "charts" / "coscheduler"

SET_BY_THE_CHART: dict[tuple[str, ...], str] = {
    ("kubeconfig",): "in-cluster credentials",
    ("leader_election", "lease_name"): "the release's full name",
    ("leader_election", "lease_namespace"): "the release's namespace",
    ("leader_election", "identity"): "the pod's name",
    ("serving", "address"): "all addresses, the default",
    ("webhook", "address"): "all addresses, the default",
    ("webhook", "cert_dir"): "the mounted certificate, with webhook.enabled",
}
"""Settings that are not values: the chart sets them from the release."""

RENAMED: dict[tuple[str, ...], tuple[str, ...]] = {("serving", "port"): ("metrics", "port")}

SCHEMA_STRICTER: dict[tuple[str, ...], dict[str, Any]] = {
    # Port 0 ("pick a free one") cannot be probed or scraped in a pod.
    ("serving", "port"): {"minimum": 1},
    # Nor can it be reached by kubectl port-forward.
    ("dashboard", "port"): {"minimum": 1},
}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _values_path(doc: SettingDoc) -> tuple[str, ...]:
    return RENAMED.get(doc.path) or tuple(_camel(part) for part in doc.path)


def _field(path: tuple[str, ...]) -> FieldInfo:
    model: type[BaseModel] = Settings
    for part in path[:-1]:
        annotation = model.model_fields[part].annotation
        assert isinstance(annotation, type)
        assert issubclass(annotation, BaseModel)
        model = annotation
    return model.model_fields[path[-1]]


def _bounds(field: FieldInfo) -> dict[str, Any]:
    words = {
        annotated_types.Gt: ("exclusiveMinimum", "gt"),
        annotated_types.Ge: ("minimum", "ge"),
        annotated_types.Lt: ("exclusiveMaximum", "lt"),
        annotated_types.Le: ("maximum", "le"),
    }
    bounds: dict[str, Any] = {}
    for item in field.metadata:
        for kind, (word, attribute) in words.items():
            if isinstance(item, kind):
                bounds[word] = getattr(item, attribute)
    return bounds


def _schema_at(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    node = schema
    for part in path:
        node = node["properties"][part]
    while "$ref" in node:
        node = {
            **{k: v for k, v in node.items() if k != "$ref"},
            **schema["definitions"][node["$ref"].rsplit("/", 1)[1]],
        }
    return node


def _value_at(values: dict[str, Any], path: tuple[str, ...]) -> Any:
    for part in path:
        values = values[part]
    return values


VALUES: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
SCHEMA: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
EXPOSED = [doc for doc in documented_settings() if doc.path not in SET_BY_THE_CHART]


def test_every_setting_is_a_value_or_set_by_the_chart() -> None:
    paths = {doc.path for doc in documented_settings()}
    assert set(SET_BY_THE_CHART) <= paths
    assert len(EXPOSED) + len(SET_BY_THE_CHART) == len(paths)


@pytest.mark.parametrize("doc", EXPOSED, ids=lambda doc: doc.flag)
def test_value_default_and_bounds_are_the_settings(doc: SettingDoc) -> None:
    path = _values_path(doc)
    field = _field(doc.path)
    default = field.get_default(call_default_factory=True)
    value = _value_at(VALUES, path)
    if isinstance(default, tuple):
        assert tuple(value) == default
    else:
        assert value == default, f"values.yaml {'.'.join(path)}: {value!r}, {doc.flag}: {default!r}"

    schema = _schema_at(SCHEMA, path)
    if doc.choices is not None:
        assert schema["enum"] == list(doc.choices)
    constraints = {**_bounds(field), **SCHEMA_STRICTER.get(doc.path, {})}
    shown = {key: schema[key] for key in schema if key in _BOUND_WORDS}
    assert shown == constraints, f"values.schema.json {'.'.join(path)}"
    expected_type = {bool: "boolean", int: "integer", float: "number", str: None}[doc.kind]
    if expected_type and not doc.repeatable:
        assert schema["type"] == expected_type


_BOUND_WORDS = {"exclusiveMinimum", "minimum", "exclusiveMaximum", "maximum"}
