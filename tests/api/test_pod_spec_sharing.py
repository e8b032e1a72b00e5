"""api/pod.py: pods of one workload share their spec's reading, and read exactly as alone."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api import pod as pod_module
from coscheduler.api.pod import PodInfo, PodParseError
from tests.builders import pod_object

Raw = dict[str, Any]

_SPREAD = {
    "maxSkew": 1,
    "topologyKey": "zone",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "a"}},
    "matchLabelKeys": ["app"],
}
_ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "a"}},
            }
        ]
    }
}
_EPHEMERAL = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]
_CLAIM = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]


@st.composite
def raw_pods(draw: st.DrawFn) -> Raw:
    """A pod from a small space, so that specs repeat: what may differ, and what may be bad."""
    raw = pod_object(
        draw(st.sampled_from(["p-0", "p-1", "p-2"])),
        namespace=draw(st.sampled_from(["a", "b"])),
        cpu=draw(st.sampled_from(["1", "500m", "2", "-1", "lots"])),
        labels=draw(st.sampled_from([{}, {"app": "a"}, {"app": "b", "idx": "1"}])),
        node=draw(st.sampled_from([None, "n1"])),
        phase=draw(st.sampled_from(["Pending", "Running"])),
        priority=draw(st.sampled_from([None, 0, 7])),
    )
    spec, status = raw["spec"], raw["status"]
    extras = draw(
        st.lists(st.sampled_from(["spread", "anti", "ephemeral", "claim", "gate"]), unique=True)
    )
    if "spread" in extras:
        spec["topologySpreadConstraints"] = [_SPREAD]
    if "anti" in extras:
        spec["affinity"] = copy.deepcopy(_ANTI)
    if "ephemeral" in extras:
        spec["volumes"] = copy.deepcopy(_EPHEMERAL)
    if "claim" in extras:
        spec["volumes"] = [*spec.get("volumes", []), *copy.deepcopy(_CLAIM)]
    if "gate" in extras:
        spec["schedulingGates"] = [{"name": "wait"}]
    # What the kubelet reports of a resize (read for a bound pod), or nothing.
    allocated = draw(st.sampled_from([None, "1", "3"]))
    if allocated is not None:
        name = spec["containers"][0]["name"]
        status["containerStatuses"] = [{"name": name, "allocatedResources": {"cpu": allocated}}]
    if draw(st.booleans()):
        status["startTime"] = draw(st.sampled_from(["2026-01-01T00:00:00Z", "yesterday"]))
    return raw


def _read(raw: Raw) -> PodInfo | str:
    try:
        return PodInfo.from_object(raw)
    except PodParseError as error:
        return f"refused: {error}"


@given(st.lists(raw_pods(), min_size=1, max_size=12))
def test_a_pod_reads_the_same_whatever_was_read_before(raws: list[Raw]) -> None:
    """With the spec reads of earlier pods kept, each pod reads as it does alone."""
    pod_module._KNOWN_SPECS.clear()
    shared = [_read(copy.deepcopy(raw)) for raw in raws]
    alone = []
    for raw in raws:
        pod_module._KNOWN_SPECS.clear()
        alone.append(_read(copy.deepcopy(raw)))
    assert shared == alone


def test_pods_of_one_spec_share_its_reading() -> None:
    pod_module._KNOWN_SPECS.clear()
    first = PodInfo.from_object(pod_object("p-0", group="g", node_selector={"zone": "a"}))
    second = PodInfo.from_object(
        pod_object("p-1", group="g", node_selector={"zone": "a"}, node="n1")
    )
    third = PodInfo.from_object(pod_object("p-2", group="g", node_selector={"zone": "a"}))
    assert (first.name, second.name, third.name) == ("p-0", "p-1", "p-2")
    assert third.requests is first.requests  # read once
    assert third.placement is first.placement
    assert second.requests is not first.requests  # bound: read on its own


@pytest.mark.parametrize(
    ("extra", "changed"),
    [
        ({"topologySpreadConstraints": [_SPREAD]}, "labels"),
        ({"volumes": _EPHEMERAL}, "name"),
    ],
)
def test_a_spec_read_by_labels_or_name_is_shared_only_alike(extra: Raw, changed: str) -> None:
    pod_module._KNOWN_SPECS.clear()
    one = PodInfo.from_object(pod_object("p-0", labels={"app": "a"}, spec_extra=extra))
    other = pod_object(
        "p-0" if changed == "labels" else "p-1", labels={"app": "a"}, spec_extra=extra
    )
    if changed == "labels":
        other["metadata"]["labels"] = {"app": "b"}
    two = PodInfo.from_object(other)
    pod_module._KNOWN_SPECS.clear()
    assert two == PodInfo.from_object(other)
    assert two.shape != one.shape if changed == "labels" else two.claims != one.claims
