from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.devices import (
    DeviceClassInfo,
    DeviceParseError,
    ResourceClaimInfo,
    ResourceClaimTemplateInfo,
    ResourceSliceInfo,
    Version,
    read_pod_claims,
)
from coscheduler.api.fields import FieldReader
from tests.dra import DRIVER, claim, device_class, exactly, gpu_slice


def test_slice_reads_pool_devices_attributes_and_capacity() -> None:
    slice_ = ResourceSliceInfo.from_object(gpu_slice("n1", 2, domain="d7"))
    assert (slice_.driver, slice_.pool, slice_.generation, slice_.slice_count) == (
        DRIVER,
        "n1",
        1,
        1,
    )
    assert slice_.node_name == "n1"
    assert not slice_.all_nodes
    assert slice_.node_selector is None
    device = slice_.devices[1]
    assert device.attributes[DRIVER] == {
        "model": "H100",
        "index": 1,
        "nvlink": "d7",
        "driverVersion": Version("1.2.3"),
    }
    assert device.capacity[DRIVER]["memory"] == Fraction(80 * 2**30)
    assert device.attribute(f"{DRIVER}/nvlink", DRIVER) == "d7"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"sharedCounters": [{"name": "c"}]}, "spec.sharedCounters"),
        ({"perDeviceNodeSelection": True, "nodeName": None}, "spec.perDeviceNodeSelection"),
        ({"allNodes": True}, "exactly one of spec.nodeName"),
        ({"pool": {"name": "p", "generation": 1, "resourceSliceCount": 0}}, "resourceSliceCount"),
        ({"driver": 3}, "spec.driver"),
    ],
)
def test_slice_refusals_name_the_field(change: dict[str, object], field: str) -> None:
    raw = gpu_slice("n1", 1)
    raw["spec"].update(change)
    with pytest.raises(DeviceParseError, match=field.replace(".", r"\.")):
        ResourceSliceInfo.from_object(raw)


@pytest.mark.parametrize(
    ("device_change", "field"),
    [
        ({"consumesCounters": [{"counterSet": "x"}]}, "devices[0].consumesCounters"),
        ({"bindingConditions": ["ready"]}, "devices[0].bindingConditions"),
        ({"allowMultipleAllocations": True}, "allowMultipleAllocations"),
        ({"attributes": {"x": {"ints": [1]}}}, "list-typed"),
        ({"attributes": {"x": {"int": "1"}}}, "attributes['x'].int"),
        ({"capacity": {"m": {"value": "lots"}}}, "capacity['m'].value"),
        ({"taints": [{"key": "k", "effect": "Bad"}]}, "taints[0].effect"),
    ],
)
def test_device_refusals_name_the_field(device_change: dict[str, object], field: str) -> None:
    raw = gpu_slice("n1", 1)
    raw["spec"]["devices"][0].update(device_change)
    with pytest.raises(DeviceParseError) as caught:
        ResourceSliceInfo.from_object(raw)
    assert field in str(caught.value)


def test_class_reads_its_selectors() -> None:
    cls = DeviceClassInfo.from_object(device_class("gpu", "a", "b"))
    assert cls.selectors == ("a", "b")


def test_claim_reads_requests_constraints_and_status() -> None:
    raw = claim(
        "c",
        {"name": "gpus", "exactly": exactly(2, selectors=[{"cel": {"expression": "true"}}])},
        {
            "name": "any",
            "firstAvailable": [
                {"name": "big", "deviceClassName": "gpu", "allocationMode": "All"},
                {
                    "name": "small",
                    "deviceClassName": "gpu",
                    "tolerations": [{"operator": "Exists"}],
                },
            ],
        },
        constraints=[{"requests": ["gpus"], "matchAttribute": f"{DRIVER}/nvlink"}],
        status={
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpus", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
        },
    )
    info = ResourceClaimInfo.from_object(raw)
    gpus, alternatives = info.spec.requests
    assert gpus.choices[0].count == 2
    assert gpus.choices[0].selectors == ("true",)
    assert [c.name for c in alternatives.choices] == ["any/big", "any/small"]
    assert alternatives.choices[0].all
    assert alternatives.choices[1].tolerations[0].operator == "Exists"
    assert info.spec.constraints[0].covers("gpus")
    assert not info.spec.constraints[0].covers("any")
    assert info.allocation is not None
    assert info.allocation[0].key == (DRIVER, "n1", "gpu-0")
    assert info.allocation_nodes is not None
    assert info.reserved_for == ("u1",)


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        ({"name": "r", "exactly": exactly(adminAccess=True)}, "exactly.adminAccess"),
        ({"name": "r", "exactly": exactly(capacity={"requests": {}})}, "exactly.capacity"),
        ({"name": "r", "exactly": exactly(allocationMode="Some")}, "exactly.allocationMode"),
        ({"name": "r", "exactly": exactly(0)}, "exactly.count"),
        ({"name": "r", "exactly": {"count": 1}}, "exactly.deviceClassName"),
        ({"name": "r"}, "exactly one of exactly and firstAvailable"),
        ({"name": "r", "firstAvailable": [{"deviceClassName": "gpu"}]}, "firstAvailable[0].name"),
    ],
)
def test_claim_refusals_name_the_field(request_: dict[str, object], field: str) -> None:
    with pytest.raises(DeviceParseError) as caught:
        ResourceClaimInfo.from_object(claim("c", request_))
    assert field in str(caught.value)
    assert "ResourceClaim default/c" in str(caught.value)


def test_distinct_attribute_is_refused() -> None:
    raw = claim("c", constraints=[{"distinctAttribute": f"{DRIVER}/index"}])
    with pytest.raises(DeviceParseError, match="distinctAttribute"):
        ResourceClaimInfo.from_object(raw)


def test_template_reads_its_claim_spec() -> None:
    inner = claim("t")
    raw = {"metadata": {"name": "t", "namespace": "ns"}, "spec": {"spec": inner["spec"]}}
    template = ResourceClaimTemplateInfo.from_object(raw)
    assert template.key == "ns/t"
    assert template.spec.requests[0].choices[0].count == 1


def test_pod_claims_resolve_templates_through_status() -> None:
    reader = FieldReader(lambda why: ValueError(why))
    spec = {
        "resourceClaims": [
            {"name": "a", "resourceClaimName": "shared"},
            {"name": "b", "resourceClaimTemplateName": "t"},
            {"name": "c", "resourceClaimTemplateName": "t"},
        ]
    }
    status = {"resourceClaimStatuses": [{"name": "b", "resourceClaimName": "p-b-x"}]}
    claims = read_pod_claims(reader, spec, status)
    assert [(c.name, c.claim, c.template) for c in claims] == [
        ("a", "shared", None),
        ("b", "p-b-x", "t"),
        ("c", None, "t"),
    ]
    with pytest.raises(ValueError, match="exactly one"):
        read_pod_claims(reader, {"resourceClaims": [{"name": "x"}]}, {})


def test_a_pod_carries_its_claims() -> None:
    from tests.builders import pod

    member = pod(
        "p",
        spec_extra={"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "t"}]},
    )
    assert [(c.name, c.claim, c.template) for c in member.device_claims] == [("gpus", None, "t")]
    assert member.asks.unsupported == ()


# -- bad input: every malformed DRA object is refused naming where, never a crash ---

_junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.text(max_size=6),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(0, 2), max_size=2),
)


def _paths(value: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _replace(value: Any, path: tuple[object, ...], junk: object) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = junk


_OBJECTS: dict[str, tuple[Callable[[], dict[str, Any]], Callable[[Any], object]]] = {
    "slice": (lambda: gpu_slice("n1", 2), ResourceSliceInfo.from_object),
    "class": (lambda: device_class("gpu", "true"), DeviceClassInfo.from_object),
    "claim": (
        lambda: claim(
            "c",
            {"name": "gpus", "exactly": exactly(2, tolerations=[{"key": "k"}])},
            constraints=[{"matchAttribute": f"{DRIVER}/nvlink"}],
        ),
        ResourceClaimInfo.from_object,
    ),
}


@given(st.sampled_from(sorted(_OBJECTS)), st.data(), _junk)
def test_a_mangled_dra_object_parses_or_is_refused_with_its_name(
    kind: str, data: st.DataObject, junk: object
) -> None:
    make, parse = _OBJECTS[kind]
    raw = make()
    path = data.draw(st.sampled_from(_paths(raw)))
    _replace(raw, path, junk)
    try:
        parse(raw)
    except DeviceParseError as error:
        message = str(error)
    else:
        return
    assert message.startswith("DRA object ")
