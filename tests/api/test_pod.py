"""Pod parsing: effective requests as Kubernetes computes them, and typed errors."""

from __future__ import annotations

from typing import Any

import pytest

from coscheduler.api.pod import HostPort, PodInfo, PodParseError, Toleration
from tests.builders import container


def raw_pod(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", **meta},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


# Rules from the Kubernetes documentation (resource management for pods,
# init containers, sidecar containers, pod overhead).
REQUEST_CASES = [
    pytest.param(
        {
            "containers": [
                container({"cpu": "250m", "memory": "64Mi"}),
                container({"cpu": "250m", "memory": "64Mi"}),
            ]
        },
        {"cpu": 500, "memory": 128 * 2**20, "pods": 1},
        id="sum-of-containers",
    ),
    pytest.param(
        {
            "containers": [container({"cpu": "1"})],
            "initContainers": [container({"cpu": "2"}), container({"cpu": "500m"})],
        },
        {"cpu": 2000, "pods": 1},
        id="init-container-max-wins",
    ),
    pytest.param(
        {"containers": [container({"cpu": "3"})], "initContainers": [container({"cpu": "2"})]},
        {"cpu": 3000, "pods": 1},
        id="containers-exceed-init",
    ),
    pytest.param(
        {
            "containers": [container({"cpu": "1"})],
            "initContainers": [container({"cpu": "500m"}, restart="Always")],
        },
        {"cpu": 1500, "pods": 1},
        id="sidecar-added",
    ),
    pytest.param(
        {
            "containers": [container({"cpu": "1"})],
            "initContainers": [container({"cpu": "1"}, restart="Always"), container({"cpu": "2"})],
        },
        {"cpu": 3000, "pods": 1},
        id="init-after-sidecar-adds-sidecar",
    ),
    pytest.param(
        {
            "containers": [container({"cpu": "1"})],
            "initContainers": [container({"cpu": "2"}), container({"cpu": "1"}, restart="Always")],
        },
        {"cpu": 2000, "pods": 1},
        id="init-before-sidecar-alone",
    ),
    pytest.param(
        {"containers": [container({"cpu": "1"})], "overhead": {"cpu": "250m", "memory": "120Mi"}},
        {"cpu": 1250, "memory": 120 * 2**20, "pods": 1},
        id="overhead-added",
    ),
    pytest.param(
        {"containers": [container(limits={"cpu": "2", "memory": "1Gi"})]},
        {"cpu": 2000, "memory": 2**30, "pods": 1},
        id="limits-stand-for-requests",
    ),
    pytest.param(
        {"containers": [container({"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"})]},
        {"cpu": 1000, "memory": 2**30, "pods": 1},
        id="request-kept-limit-fills-gap",
    ),
    pytest.param(
        {"containers": [container({"nvidia.com/gpu": "2"})]},
        {"nvidia.com/gpu": 2, "pods": 1},
        id="extended-resource",
    ),
    pytest.param({"containers": [container()]}, {"pods": 1}, id="best-effort-counts-one-pod"),
]


@pytest.mark.parametrize(("spec", "expected"), REQUEST_CASES)
def test_effective_requests(spec: dict[str, Any], expected: dict[str, int]) -> None:
    assert dict(PodInfo.from_object(raw_pod(spec)).requests) == expected


def test_fields() -> None:
    raw = raw_pod(
        {
            "schedulerName": "coscheduler",
            "nodeName": "n1",
            "priority": 7,
            "containers": [
                {
                    "name": "a",
                    "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81}],
                }
            ],
            "nodeSelector": {"zone": "a"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
        labels={
            "scheduling.sigs.k8s.io/pod-group": "train",
            "scheduling.sigs.k8s.io/role": "worker",
        },
        creationTimestamp="2024-01-01T00:00:10Z",
        deletionTimestamp="2024-01-01T00:01:00Z",
        ownerReferences=[{"uid": "o1", "controller": False}, {"uid": "o2", "controller": True}],
    )
    pod = PodInfo.from_object(raw)
    assert (pod.key, pod.group, pod.role, pod.scheduler_name) == (
        "ns/p",
        "train",
        "worker",
        "coscheduler",
    )
    assert (pod.node_name, pod.priority, pod.deleting, pod.owner_uid) == ("n1", 7, True, "o2")
    assert pod.created == 1704067210.0
    assert pod.host_ports == (HostPort("0.0.0.0", "TCP", 8080),)
    assert pod.tolerations == (Toleration("gpu", "Exists", "", "NoSchedule"),)
    assert pod.required_affinity is None
    assert pod.bound
    assert not pod.terminal


def test_equal_pods_share_a_shape() -> None:
    one = PodInfo.from_object(raw_pod({"containers": [container({"cpu": "1"})]}))
    two = PodInfo.from_object(
        {
            **raw_pod({"containers": [container({"cpu": "1000m"})]}),
            "metadata": {"name": "q", "uid": "u2"},
        }
    )
    assert one.shape == two.shape
    hash(one.shape)


@pytest.mark.parametrize(
    ("raw", "quoted"),
    [
        pytest.param(
            raw_pod({"containers": [container({"cpu": "lots"})]}), "'lots'", id="bad-quantity"
        ),
        pytest.param(raw_pod({"containers": [container({"cpu": "-1"})]}), "'-1'", id="negative"),
        pytest.param(raw_pod({"containers": "nope"}), "'nope'", id="containers-not-a-list"),
        pytest.param(raw_pod({"containers": [], "priority": "high"}), "'high'", id="priority"),
        # Found by tests/api/test_bad_input_properties.py: amounts past int64 crashed the core.
        pytest.param(
            raw_pod({"containers": [container({"cpu": "1e18"})]}),
            "'1e18' is more than coscheduler can count",
            id="cpu-past-int64",
        ),
        pytest.param(
            raw_pod({"containers": [container({"cpu": "1"})], "overhead": {"cpu": "8Ei"}}),
            "'8Ei' is more than coscheduler can count",
            id="overhead-past-int64",
        ),
        pytest.param(
            raw_pod({"containers": [container({"memory": "4Pi"}), container({"memory": "4Pi"})]}),
            "'memory' add up to 9007199254740992",
            id="sum-past-the-ceiling",
        ),
        pytest.param(
            raw_pod({"containers": [], "tolerations": [{"operator": "Maybe"}]}),
            "'Maybe'",
            id="toleration-operator",
        ),
        pytest.param(
            raw_pod(
                {
                    "containers": [],
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {"key": "k", "operator": "Gt", "values": ["x"]}
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                }
            ),
            "'x'",
            id="gt-not-integer",
        ),
        pytest.param(
            raw_pod({"containers": []}, creationTimestamp="yesterday"),
            "'yesterday'",
            id="timestamp",
        ),
    ],
)
def test_malformed_pods_raise_typed_errors_naming_the_pod(raw: dict[str, Any], quoted: str) -> None:
    with pytest.raises(PodParseError, match="ns/p") as error:
        PodInfo.from_object(raw)
    assert quoted in str(error.value)


def test_missing_metadata_is_a_parse_error() -> None:
    with pytest.raises(PodParseError):
        PodInfo.from_object({"spec": {}})
    with pytest.raises(PodParseError):
        PodInfo.from_object({"metadata": {"namespace": "ns"}, "spec": {}})


def test_equal_toleration_lists_read_alike_and_a_bad_one_is_refused_every_time() -> None:
    """Toleration lists are read once per distinct list: the answer is the same, errors too."""
    defaults = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
        {"key": "gpu", "value": "a100", "effect": "NoSchedule", "tolerationSeconds": 30},
    ]
    first = PodInfo.from_object(raw_pod({"containers": [], "tolerations": defaults}, name="a"))
    second = PodInfo.from_object(raw_pod({"containers": [], "tolerations": defaults}, name="b"))
    assert (
        first.tolerations
        == second.tolerations
        == (
            Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"),
            Toleration("gpu", "Equal", "a100", "NoSchedule"),
        )
    )
    bad = [{"key": "gpu", "operator": "Equal", "effect": "Sometimes"}]
    for name in ("c", "d"):
        with pytest.raises(PodParseError, match=f"{name}.*'Sometimes'"):
            PodInfo.from_object(raw_pod({"containers": [], "tolerations": bad}, name=name))
    unhashable = [{"key": ["gpu"]}]
    with pytest.raises(PodParseError, match=r"spec\.tolerations\[0\]\.key must be a string"):
        PodInfo.from_object(raw_pod({"containers": [], "tolerations": unhashable}))
