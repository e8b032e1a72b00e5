"""Pod fields kube-scheduler 1.37 reads, read alike: pod-level requests, resizes, sidecar ports.

The request cases follow ``k8s.io/component-helpers/resource.PodRequests``
with the 1.37 defaults (pod-level resources on, in-place resize of containers
and of the pod level on); the properties compare the parser with a
per-resource reference of the same rules written out plainly.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coscheduler.api.fields import FieldReader
from coscheduler.api.pod import PodInfo, PodParseError
from coscheduler.api.pod_requests import resize_inputs
from tests.builders import container

GI = 2**30


def named(name: str, requests: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
    return {**container(requests, **kw), "name": name}


def pod(
    spec: dict[str, Any], status: dict[str, Any] | None = None, *, node: str | None = None
) -> PodInfo:
    if node is not None:
        spec = {**spec, "nodeName": node}
    return PodInfo.from_object(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": spec,
            "status": {"phase": "Running" if node else "Pending", **(status or {})},
        }
    )


def infeasible() -> dict[str, Any]:
    return {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}


# --- pod-level requests (spec.resources) ----------------------------------------------


def test_pod_level_requests_replace_the_containers_aggregate() -> None:
    spec = {
        "containers": [named("a"), named("b", {"cpu": "1", "nvidia.com/gpu": "1"})],
        "resources": {"requests": {"cpu": "8", "memory": "4Gi"}},
    }
    assert dict(pod(spec).requests) == {
        "cpu": 8000,
        "memory": 4 * GI,
        "nvidia.com/gpu": 1,
        "pods": 1,
    }


def test_pod_level_request_of_one_resource_leaves_the_others_to_the_containers() -> None:
    spec = {
        "containers": [named("a", {"cpu": "1", "memory": "1Gi"})],
        "initContainers": [named("i", {"memory": "3Gi"})],
        "resources": {"requests": {"cpu": "500m"}},
    }
    assert dict(pod(spec).requests) == {"cpu": 500, "memory": 3 * GI, "pods": 1}


def test_overhead_is_added_after_the_pod_level_requests() -> None:
    spec = {
        "containers": [named("a", {"cpu": "1"})],
        "resources": {"requests": {"cpu": "2", "hugepages-2Mi": "4Mi"}},
        "overhead": {"cpu": "250m"},
    }
    assert dict(pod(spec).requests) == {"cpu": 2250, "hugepages-2Mi": 4 * 2**20, "pods": 1}


def test_pod_level_limits_alone_are_left_to_the_api_servers_defaulting() -> None:
    # The API server writes the defaulted pod-level requests into the pod; like
    # kube-scheduler, only spec.resources.requests is read.
    spec = {"containers": [named("a", {"cpu": "1"})], "resources": {"limits": {"cpu": "4"}}}
    assert dict(pod(spec).requests) == {"cpu": 1000, "pods": 1}


def test_only_pod_level_resources_are_replaced() -> None:
    # Validation refuses other names there; were one to pass, it would not count.
    spec = {
        "containers": [named("a", {"cpu": "1", "nvidia.com/gpu": "2"})],
        "resources": {"requests": {"nvidia.com/gpu": "8"}},
    }
    assert dict(pod(spec).requests) == {"cpu": 1000, "nvidia.com/gpu": 2, "pods": 1}


def test_pods_with_different_pod_level_requests_have_different_shapes() -> None:
    small = pod({"containers": [named("a")], "resources": {"requests": {"cpu": "1"}}})
    large = pod({"containers": [named("a")], "resources": {"requests": {"cpu": "8"}}})
    assert small.shape != large.shape


@pytest.mark.parametrize(
    ("spec", "status", "quoted"),
    [
        pytest.param(
            {"containers": [], "resources": {"requests": {"cpu": "lots"}}},
            {},
            "spec.resources.requests['cpu'] = 'lots'",
            id="pod-level-quantity",
        ),
        pytest.param(
            {"containers": [], "resources": "big"},
            {},
            "spec.resources must be an object",
            id="pod-level-not-an-object",
        ),
        pytest.param(
            {"containers": [], "resources": {"requests": {"memory": "-1Gi"}}},
            {},
            "spec.resources.requests['memory'] = '-1Gi' must not be negative",
            id="pod-level-negative",
        ),
        pytest.param(
            {"containers": [named("a")], "nodeName": "n1"},
            {"containerStatuses": [{"name": "a", "allocatedResources": {"cpu": "x"}}]},
            "status.containerStatuses[0].allocatedResources['cpu'] = 'x'",
            id="allocated-quantity",
        ),
        pytest.param(
            {"containers": [named("a")], "nodeName": "n1"},
            {"containerStatuses": [{"name": "a", "resources": {"requests": {"cpu": "y"}}}]},
            "status.containerStatuses[0].resources.requests['cpu'] = 'y'",
            id="actuated-quantity",
        ),
        pytest.param(
            {"containers": [named("a")], "nodeName": "n1"},
            {"resources": {"requests": {"memory": "z"}}, "allocatedResources": {}},
            "status.resources.requests['memory'] = 'z'",
            id="pod-actuated-quantity",
        ),
        pytest.param(
            {"containers": [named("a")], "nodeName": "n1"},
            {"conditions": [{"type": "Ready"}, {"type": "PodResizePending", "reason": 7}]},
            "status.conditions[1].reason must be a string",
            id="resize-condition-reason",
        ),
    ],
)
def test_bad_fields_are_named(spec: dict[str, Any], status: dict[str, Any], quoted: str) -> None:
    with pytest.raises(PodParseError, match="ns/p") as error:
        PodInfo.from_object(
            {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec, "status": status}
        )
    assert quoted in str(error.value)


# --- in-place resize of bound pods -------------------------------------------------------


def resized(
    cpu_spec: str, allocated: str | None, actuated: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    status: dict[str, Any] = {"name": "a"}
    if allocated is not None:
        status["allocatedResources"] = {"cpu": allocated}
    if actuated is not None:
        status["resources"] = {"requests": {"cpu": actuated}}
    return {"containers": [named("a", {"cpu": cpu_spec})]}, {"containerStatuses": [status]}


@pytest.mark.parametrize(
    ("spec_cpu", "allocated", "actuated", "conditions", "held"),
    [
        pytest.param("2", "1", "1", [], 2000, id="grow-asked-counts-at-once"),
        pytest.param("1", "2", "2", [], 2000, id="shrink-asked-counts-once-applied"),
        pytest.param("1", "1", "2", [], 2000, id="shrink-allocated-not-yet-actuated"),
        pytest.param("4", "1", "1", [infeasible()], 1000, id="infeasible-grow-not-counted"),
        pytest.param("4", "1", None, [infeasible()], 1000, id="infeasible-allocated-only"),
        pytest.param(
            "4",
            "1",
            "1",
            [{"type": "PodResizePending", "reason": "Deferred"}],
            4000,
            id="deferred-grow-counted",
        ),
        pytest.param("3", None, None, [], 3000, id="nothing-reported"),
    ],
)
def test_a_bound_pod_holds_the_most_of_spec_allocated_and_actuated(
    spec_cpu: str,
    allocated: str | None,
    actuated: str | None,
    conditions: list[dict[str, Any]],
    held: int,
) -> None:
    spec, status = resized(spec_cpu, allocated, actuated)
    assert pod(spec, {**status, "conditions": conditions}, node="n1").requests["cpu"] == held


def test_a_pending_pod_asks_its_spec_whatever_its_status_says() -> None:
    spec, status = resized("1", "4", "4")
    assert pod(spec, status).requests["cpu"] == 1000


def test_an_infeasible_resize_with_nothing_reported_counts_nothing_of_the_containers() -> None:
    # As kube-scheduler: the spec is set aside and no status stands in for it.
    spec = {"containers": [named("a", {"cpu": "2"})], "overhead": {"cpu": "100m"}}
    assert dict(pod(spec, {"conditions": [infeasible()]}, node="n1").requests) == {
        "cpu": 100,
        "pods": 1,
    }


def test_init_container_statuses_count_for_sidecars() -> None:
    spec = {
        "containers": [named("a", {"cpu": "1"})],
        "initContainers": [named("side", {"cpu": "1"}, restart="Always")],
    }
    status = {
        "initContainerStatuses": [{"name": "side", "allocatedResources": {"cpu": "3"}}],
    }
    assert pod(spec, status, node="n1").requests["cpu"] == 4000


def test_pod_level_status_maps_stand_for_the_containers_when_both_are_reported() -> None:
    spec = {"containers": [named("a", {"cpu": "1", "memory": "1Gi"})]}
    status = {
        "containerStatuses": [{"name": "a", "allocatedResources": {"cpu": "8"}}],
        "allocatedResources": {"cpu": "2"},
        "resources": {"requests": {"cpu": "1500m", "memory": "2Gi"}},
    }
    assert dict(pod(spec, status, node="n1").requests) == {
        "cpu": 2000,
        "memory": 2 * GI,
        "pods": 1,
    }


def test_pod_level_requests_of_a_bound_pod_count_its_pod_level_resize() -> None:
    spec = {"containers": [named("a")], "resources": {"requests": {"cpu": "2"}}}
    grown = {"allocatedResources": {"cpu": "4"}, "resources": {"requests": {"cpu": "4"}}}
    assert pod(spec, grown, node="n1").requests["cpu"] == 4000
    asked_more = {
        "allocatedResources": {"cpu": "1"},
        "resources": {"requests": {"cpu": "1"}},
        "conditions": [infeasible()],
    }
    spec_more = {"containers": [named("a")], "resources": {"requests": {"cpu": "16"}}}
    assert pod(spec_more, asked_more, node="n1").requests["cpu"] == 1000


# --- properties against a plain per-resource reference ------------------------------------

RESOURCES = ("cpu", "memory", "hugepages-2Mi", "example.com/dev")


def quantity(resource: str, amount: int) -> str:
    return f"{amount}m" if resource == "cpu" else str(amount)


amounts = st.dictionaries(st.sampled_from(RESOURCES), st.integers(0, 5000), max_size=3)
maybe_amounts = st.none() | amounts


def as_list(values: dict[str, int]) -> dict[str, str]:
    return {resource: quantity(resource, amount) for resource, amount in values.items()}


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    """A pod's requests, pod-level requests, overhead, and (bound) what the kubelet reports."""
    return {
        "containers": draw(st.lists(amounts, max_size=2)),
        "init": draw(st.lists(st.tuples(amounts, st.booleans()), max_size=2)),
        "pod_level": draw(maybe_amounts),
        "overhead": draw(amounts),
        "bound": draw(st.booleans()),
        "infeasible": draw(st.booleans()),
        # Per container (regular then init): allocated, actuated, or no status at all.
        "statuses": draw(st.lists(st.none() | st.tuples(maybe_amounts, maybe_amounts), max_size=4)),
        "pod_allocated": draw(maybe_amounts),
        "pod_actuated": draw(maybe_amounts),
    }


def to_raw(case: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [named(f"c{i}", as_list(a)) for i, a in enumerate(case["containers"])],
        "initContainers": [
            named(f"i{i}", as_list(a), restart="Always" if sidecar else None)
            for i, (a, sidecar) in enumerate(case["init"])
        ],
        "overhead": as_list(case["overhead"]),
    }
    if case["pod_level"] is not None:
        spec["resources"] = {"requests": as_list(case["pod_level"])}
    status: dict[str, Any] = {}
    if case["bound"]:
        spec["nodeName"] = "n1"
    # A pending pod's status is written too: it must not count.
    names = [f"c{i}" for i in range(len(case["containers"]))]
    init_names = [f"i{i}" for i in range(len(case["init"]))]
    reports: dict[str, list[dict[str, Any]]] = {
        "containerStatuses": [],
        "initContainerStatuses": [],
    }
    for name, report in zip(names + init_names, case["statuses"], strict=False):
        if report is None:
            continue
        entry: dict[str, Any] = {"name": name}
        if report[0] is not None:
            entry["allocatedResources"] = as_list(report[0])
        if report[1] is not None:
            entry["resources"] = {"requests": as_list(report[1])}
        field = "containerStatuses" if name in names else "initContainerStatuses"
        reports[field].append(entry)
    status.update(reports)
    if case["pod_allocated"] is not None:
        status["allocatedResources"] = as_list(case["pod_allocated"])
    if case["pod_actuated"] is not None:
        status["resources"] = {"requests": as_list(case["pod_actuated"])}
    if case["infeasible"]:
        status["conditions"] = [infeasible()]
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec, "status": status}


def reference(case: dict[str, Any]) -> dict[str, int]:
    """The rules of component-helpers' PodRequests, one resource at a time."""
    names = [f"c{i}" for i in range(len(case["containers"]))] + [
        f"i{i}" for i in range(len(case["init"]))
    ]
    reports = dict(zip(names, case["statuses"], strict=False)) if case["bound"] else {}
    infeasible = case["bound"] and case["infeasible"]

    def aggregate(amount_of: Callable[[str, dict[str, int], str], int], resource: str) -> int:
        """Regular containers and sidecars summed, or the costliest init step if more."""
        total = sum(amount_of(f"c{i}", r, resource) for i, r in enumerate(case["containers"]))
        sidecars = peak = 0
        for i, (requests, sidecar) in enumerate(case["init"]):
            value = amount_of(f"i{i}", requests, resource)
            if sidecar:
                total += value
                sidecars += value
            peak = max(peak, sidecars if sidecar else sidecars + value)
        return max(total, peak)

    def spec_amount(_name: str, requests: dict[str, int], resource: str) -> int:
        return requests.get(resource, 0)

    def allocated_amount(name: str, requests: dict[str, int], resource: str) -> int:
        report = reports.get(name)
        if report is not None and report[0] is not None:
            return int(report[0].get(resource, 0))
        return 0 if infeasible else requests.get(resource, 0)

    def actuated_amount(name: str, requests: dict[str, int], resource: str) -> int:
        report = reports.get(name)
        if report is not None and report[1] is not None:
            return int(report[1].get(resource, 0))
        return allocated_amount(name, requests, resource)

    def most(*values: int | None) -> int | None:
        present = [value for value in values if value is not None]
        return max(present) if present else None

    pod_status = case["bound"] and case["pod_allocated"] is not None
    pod_status = pod_status and case["pod_actuated"] is not None
    pod_level_set = case["pod_level"] is not None and any(
        r in ("cpu", "memory", "hugepages-2Mi") for r in case["pod_level"]
    )
    result: dict[str, int] = {}
    for resource in RESOURCES:
        spec_value = aggregate(spec_amount, resource)
        value: int | None
        if not case["bound"]:
            value = spec_value
        elif pod_status:
            value = most(
                None if infeasible else spec_value,
                case["pod_actuated"].get(resource),
                case["pod_allocated"].get(resource),
            )
        else:
            value = most(
                None if infeasible else spec_value,
                aggregate(actuated_amount, resource),
                aggregate(allocated_amount, resource),
            )
        if pod_level_set and resource != "example.com/dev":
            level = case["pod_level"].get(resource)
            if case["bound"] and case["pod_actuated"] is not None:
                level = most(
                    None if infeasible else level,
                    case["pod_actuated"].get(resource),
                    (case["pod_allocated"] or {}).get(resource),
                )
            if level is not None:
                value = level
        extra = case["overhead"].get(resource)
        if extra is not None:
            value = (value or 0) + extra
        if value:
            result[resource] = value
    result["pods"] = 1
    return result


@settings(max_examples=300)  # a costly draw: the same count under every profile
@given(pods())
def test_requests_follow_the_reference(case: dict[str, Any]) -> None:
    """One draw checks three things (the strategy is costly to draw, the parse is not)."""
    requests = PodInfo.from_object(to_raw(case)).requests
    assert {r: a for r, a in requests.items() if a} == reference(case)
    # A pending pod is counted by its spec alone, whatever its status says.
    pending = {**case, "bound": False}
    silent = {**pending, "statuses": [], "pod_allocated": None, "pod_actuated": None}
    asked = PodInfo.from_object(to_raw(pending)).requests
    assert asked == PodInfo.from_object(to_raw(silent)).requests
    # Without an infeasible resize, a bound pod holds at least what its containers
    # ask. (Not always with pod-level requests: as in Kubernetes, a pod-level
    # status map naming a resource the spec's pod level does not replaces it.)
    feasible = {**case, "bound": True, "infeasible": False, "pod_level": None}
    held = PodInfo.from_object(to_raw(feasible)).requests
    asked = PodInfo.from_object(to_raw({**feasible, "bound": False})).requests
    assert all(held.get(r, 0) >= a for r, a in asked.items())


# --- host ports of sidecars -----------------------------------------------------------------


def test_sidecars_host_ports_count_and_plain_init_containers_do_not() -> None:
    spec = {
        "containers": [named("a", host_ports=[80])],
        "initContainers": [
            named("setup", host_ports=[8080]),
            named("proxy", restart="Always", host_ports=[9090]),
        ],
    }
    assert [p.port for p in pod(spec).host_ports] == [80, 9090]


def test_resize_inputs_change_with_every_status_field_held_requests_read() -> None:
    base = {
        "phase": "Running",
        "podIP": "10.0.0.1",
        "containerStatuses": [{"name": "a", "ready": True, "allocatedResources": {"cpu": "1"}}],
    }
    same = {**base, "podIP": "10.0.0.2", "phase": "Succeeded"}
    assert resize_inputs(base) == resize_inputs(same)
    changed = [
        {**base, "containerStatuses": [{"name": "a", "allocatedResources": {"cpu": "2"}}]},
        {**base, "initContainerStatuses": [{"name": "s", "resources": {"requests": {}}}]},
        {**base, "allocatedResources": {"cpu": "1"}},
        {**base, "resources": {"requests": {"cpu": "1"}}},
        {**base, "conditions": [infeasible()]},
    ]
    for status in changed:
        assert resize_inputs(status) != resize_inputs(base), status


def test_resize_inputs_read_other_mappings_as_decoded_json() -> None:
    # The fast path checks for dicts first: any other mapping reads the same.
    status = {
        "containerStatuses": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
        "conditions": [infeasible()],
    }
    proxied = MappingProxyType(
        {
            "containerStatuses": [MappingProxyType(status["containerStatuses"][0])],
            "conditions": [MappingProxyType(status["conditions"][0])],
        }
    )
    assert resize_inputs(proxied) == resize_inputs(status)
    assert resize_inputs("not a status") == resize_inputs(None)


def test_field_reader_takes_any_mapping_and_refuses_what_is_not_text() -> None:
    reader = FieldReader(ValueError)
    assert reader.mapping(MappingProxyType({"a": 1}), "x") == {"a": 1}
    assert reader.mapping({"a": 1}, "x") == {"a": 1}
    assert reader.text("t", "x") == "t"
    with pytest.raises(ValueError, match="x must be a string"):
        reader.text(["t"], "x")
    with pytest.raises(ValueError, match="x must be an object"):
        reader.mapping(["t"], "x")
