"""What a pod asks for that coscheduler does not honour yet is named, never ignored."""

from __future__ import annotations

from typing import Any

import pytest

from coscheduler.api.asks import NO_ASKS, Asks, read_asks
from coscheduler.api.pod import PodInfo
from tests.builders import pod_object

HOSTNAME_TERM = {
    "labelSelector": {"matchLabels": {"app": "w"}},
    "topologyKey": "kubernetes.io/hostname",
}
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

CASES = [
    pytest.param({}, NO_ASKS, id="plain-pod"),
    pytest.param(
        {"affinity": {"podAntiAffinity": {REQUIRED: [HOSTNAME_TERM]}}},
        NO_ASKS,
        id="required-anti-affinity-is-honoured",
    ),
    pytest.param(
        {"affinity": {"podAffinity": {REQUIRED: [{**HOSTNAME_TERM, "namespaceSelector": {}}]}}},
        NO_ASKS,
        id="every-namespace-is-honoured",
    ),
    pytest.param(
        {
            "affinity": {
                "podAffinity": {
                    REQUIRED: [
                        HOSTNAME_TERM,
                        {**HOSTNAME_TERM, "namespaceSelector": {"matchLabels": {"team": "a"}}},
                    ]
                }
            }
        },
        NO_ASKS,
        id="a-namespace-selector-is-honoured",
    ),
    pytest.param(
        {
            "affinity": {
                "podAntiAffinity": {PREFERRED: [{"weight": 10, "podAffinityTerm": HOSTNAME_TERM}]},
                "nodeAffinity": {PREFERRED: [{"weight": 1, "preference": {}}]},
            }
        },
        NO_ASKS,
        id="preferences-are-weighed-not-asked",
    ),
    pytest.param(
        {"affinity": {"podAntiAffinity": {REQUIRED: []}}},
        NO_ASKS,
        id="empty-term-list-asks-nothing",
    ),
    pytest.param(
        {
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"},
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            ]
        },
        NO_ASKS,
        id="spread-constraints",
    ),
    pytest.param(
        {
            "volumes": [
                {"name": "tmp", "emptyDir": {}},
                {"name": "cfg", "configMap": {"name": "c"}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
                {"name": "disk", "awsElasticBlockStore": {"volumeID": "vol-1"}},
            ]
        },
        Asks(unsupported=("spec.volumes[4].awsElasticBlockStore",)),
        id="in-tree-disks-but-not-claims",
    ),
    pytest.param(
        {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]},
        Asks(),
        id="dynamic-resource-allocation-is-honoured",
    ),
    pytest.param(
        {"schedulingGroup": {"podGroupName": "train-workers"}},
        NO_ASKS,
        id="native-podgroup-membership-is-honoured",
    ),
    pytest.param(
        {"hostNetwork": True, "hostUsers": False},
        NO_ASKS,
        id="node-features-are-honoured",
    ),
]


@pytest.mark.parametrize(("extra", "expected"), CASES)
def test_asks(extra: dict[str, Any], expected: Asks) -> None:
    raw = pod_object("w-0")
    raw["spec"].update(extra)
    assert read_asks(raw["spec"]) == expected
    assert PodInfo.from_object(raw).asks == expected


def test_scheduling_gates_mark_the_pod_gated() -> None:
    raw = pod_object("w-0")
    assert not PodInfo.from_object(raw).gated
    raw["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    assert PodInfo.from_object(raw).gated
