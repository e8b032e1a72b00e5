"""The device allocator: what a claim is given on a node, and that nothing is given twice."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coscheduler.api.devices import DeviceClassInfo, ResourceClaimInfo, ResourceSliceInfo
from coscheduler.api.pod import PodInfo
from coscheduler.api.reasons import Reason
from coscheduler.core.devices import (
    CANNOT_ALLOCATE,
    NOT_ON_NODE,
    DeviceIndex,
    DeviceRefusalError,
    PodDevices,
)
from coscheduler.core.quota import QueuePolicy
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.scoring import Scoring
from coscheduler.core.snapshot import Snapshot
from coscheduler.core.statement import Statement
from coscheduler.core.trial import greedy_trial
from tests.builders import Clock, decided, group, node, pod, pod_object
from tests.dra import DRIVER, claim, device_class, exactly, gpu, gpu_slice

NVLINK = f"{DRIVER}/nvlink"


def index_with(*slices: dict[str, Any], classes: Any = None) -> DeviceIndex:
    index = DeviceIndex()
    for raw in slices:
        index.upsert_slice(ResourceSliceInfo.from_object(raw))
    for raw in classes or (device_class(),):
        index.upsert_class(DeviceClassInfo.from_object(raw))
    return index


def add_claim(index: DeviceIndex, name: str, *requests: dict[str, Any], **more: Any) -> str:
    info = ResourceClaimInfo.from_object(claim(name, *requests, **more))
    index.upsert_claim(info)
    return info.key


def gpus(count: int, **more: Any) -> dict[str, Any]:
    return {"name": "gpus", "exactly": exactly(count, **more)}


def devices_of(found: PodDevices) -> list[str]:
    return [r.device for a in found.allocations for r in a.results]


def test_members_of_one_trial_get_distinct_devices() -> None:
    index = index_with(gpu_slice("n1", 8))
    first = index.fit("p1", [add_claim(index, "c1", gpus(2))], node("n1"))
    index.assume(first)
    second = index.fit("p2", [add_claim(index, "c2", gpus(2))], node("n1"))
    assert devices_of(first) == ["gpu-0", "gpu-1"]
    assert devices_of(second) == ["gpu-2", "gpu-3"]
    allocation = first.allocations[0]
    assert allocation.nodes is not None
    assert allocation.nodes[0].match_fields[0].values == ("n1",)


def test_devices_run_out_and_come_back_when_forgotten() -> None:
    index = index_with(gpu_slice("n1", 2))
    first = index.fit("p1", [add_claim(index, "c1", gpus(2))], node("n1"))
    index.assume(first)
    c2 = add_claim(index, "c2", gpus(1))
    with pytest.raises(DeviceRefusalError, match=CANNOT_ALLOCATE):
        index.fit("p2", [c2], node("n1"))
    index.forget(first)
    assert devices_of(index.fit("p2", [c2], node("n1"))) == ["gpu-0"]


def test_devices_of_another_node_are_not_reachable() -> None:
    index = index_with(gpu_slice("n1", 8))
    with pytest.raises(DeviceRefusalError, match=CANNOT_ALLOCATE):
        index.fit("p1", [add_claim(index, "c1", gpus(1))], node("n2"))


def test_written_allocations_are_taken_and_release_the_assumption() -> None:
    index = index_with(gpu_slice("n1", 2))
    found = index.fit("p1", [add_claim(index, "c1", gpus(1))], node("n1"))
    index.assume(found)
    results = [
        {"request": "gpus", "driver": DRIVER, "pool": "n1", "device": r.device}
        for r in found.allocations[0].results
    ]
    add_claim(index, "c1", gpus(1), status={"allocation": {"devices": {"results": results}}})
    assert index.taken() == {(DRIVER, "n1", "gpu-0"): "default/c1"}
    index.forget(found)  # too late: the API holds it
    assert index.taken() == {(DRIVER, "n1", "gpu-0"): "default/c1"}


def test_by_class_counts_each_class_devices_and_those_free_per_node() -> None:
    shared = gpu_slice("", 2, name="shared", pool={"name": "net", "generation": 1,
                       "resourceSliceCount": 1}, nodeName=None, allNodes=True)  # fmt: skip
    classes = [
        device_class(),
        device_class("h100", f'device.attributes["{DRIVER}"].model == "H100"'),
    ]
    index = index_with(gpu_slice("n1", 4), gpu_slice("n2", 2, model="A100"), shared,
                       classes=classes)  # fmt: skip
    written = [{"request": "gpus", "driver": DRIVER, "pool": "n1", "device": "gpu-3"}]
    add_claim(index, "c1", gpus(1), status={"allocation": {"devices": {"results": written}}})
    index.assume(index.fit("p2", [add_claim(index, "c2", gpus(1))], node("n1")))
    assert index.by_class() == {
        "n1": {"gpu": (4, 2), "h100": (4, 2)},
        "n2": {"gpu": (2, 2)},
        None: {"gpu": (2, 2), "h100": (2, 2)},
    }


def test_class_and_request_selectors_filter_devices() -> None:
    a100 = device_class("a100", f'device.attributes["{DRIVER}"].model == "A100"')
    index = index_with(gpu_slice("n1", 4), classes=[device_class(), a100])
    with pytest.raises(DeviceRefusalError, match=CANNOT_ALLOCATE):
        index.fit("p", [add_claim(index, "c", gpus(1, device_class="a100"))], node("n1"))
    odd = [{"cel": {"expression": f'device.attributes["{DRIVER}"].index % 2 == 1'}}]
    found = index.fit("p", [add_claim(index, "d", gpus(2, selectors=odd))], node("n1"))
    assert devices_of(found) == ["gpu-1", "gpu-3"]


def test_capacity_and_semver_helpers() -> None:
    expression = (
        f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0 && '
        f'device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("1.0.0"))'
    )
    index = index_with(gpu_slice("n1", 1), classes=[device_class("gpu", expression)])
    assert devices_of(index.fit("p", [add_claim(index, "c", gpus(1))], node("n1"))) == ["gpu-0"]


def test_all_takes_every_matching_device_or_none() -> None:
    index = index_with(gpu_slice("n1", 3))
    everything = {"name": "gpus", "exactly": exactly(allocationMode="All")}
    found = index.fit("p", [add_claim(index, "all", everything)], node("n1"))
    assert devices_of(found) == ["gpu-0", "gpu-1", "gpu-2"]
    index.assume(index.fit("q", [add_claim(index, "one", gpus(1))], node("n1")))
    with pytest.raises(DeviceRefusalError):
        index.fit("p", ["default/all"], node("n1"))


def test_first_available_takes_the_first_alternative_that_fits() -> None:
    index = index_with(gpu_slice("n1", 4))
    request = {
        "name": "gpus",
        "firstAvailable": [
            {"name": "eight", "deviceClassName": "gpu", "count": 8},
            {"name": "two", "deviceClassName": "gpu", "count": 2},
        ],
    }
    found = index.fit("p", [add_claim(index, "c", request)], node("n1"))
    assert [r.request for r in found.allocations[0].results] == ["gpus/two", "gpus/two"]


def test_match_attribute_keeps_a_claim_in_one_domain() -> None:
    raw = gpu_slice("n1", 0)
    raw["spec"]["devices"] = [gpu(i, domain="a" if i < 3 else "b") for i in range(6)]
    index = index_with(raw)
    same = [{"matchAttribute": NVLINK}]
    with pytest.raises(DeviceRefusalError):
        index.fit("p", [add_claim(index, "four", gpus(4), constraints=same)], node("n1"))
    index.assume(index.fit("q", [add_claim(index, "one", gpus(1))], node("n1")))  # a: 2 left
    found = index.fit("p", [add_claim(index, "three", gpus(3), constraints=same)], node("n1"))
    assert devices_of(found) == ["gpu-3", "gpu-4", "gpu-5"]


def test_tainted_devices_need_a_toleration() -> None:
    raw = gpu_slice("n1", 0)
    raw["spec"]["devices"] = [gpu(0, taints=[{"key": "broken", "effect": "NoSchedule"}])]
    index = index_with(raw)
    with pytest.raises(DeviceRefusalError):
        index.fit("p", [add_claim(index, "c", gpus(1))], node("n1"))
    tolerant = gpus(1, tolerations=[{"key": "broken", "operator": "Exists"}])
    assert devices_of(index.fit("p", [add_claim(index, "d", tolerant)], node("n1"))) == ["gpu-0"]


def test_a_shared_claim_is_allocated_once_and_keeps_its_sharers_near() -> None:
    index = index_with(gpu_slice("n1", 2), gpu_slice("n2", 2))
    shared = add_claim(index, "shared", gpus(2))
    first = index.fit("p1", [shared], node("n1"))
    index.assume(first)
    second = index.fit("p2", [shared], node("n1"))
    assert second.allocations == ()
    assert second.claims == (shared,)
    with pytest.raises(DeviceRefusalError, match=NOT_ON_NODE):
        index.fit("p3", [shared], node("n2"))


def test_an_incomplete_pool_is_not_used() -> None:
    index = index_with(gpu_slice("n1", 2, slice_count=2))
    with pytest.raises(DeviceRefusalError, match=CANNOT_ALLOCATE):
        index.fit("p", [add_claim(index, "c", gpus(1))], node("n1"))
    index.upsert_slice(ResourceSliceInfo.from_object(gpu_slice("n1", 0, slice_count=2, name="b")))
    assert devices_of(index.fit("p", ["default/c"], node("n1"))) == ["gpu-0"]


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        ("missing claim", 'resourceclaim.resource.k8s.io "c" not found'),
        ("missing class", "request gpus: device class nope does not exist"),
        ("bad CEL", f"class gpu: selector #0 on device {DRIVER}/n1/gpu-0: CEL runtime error"),
    ],
)
def test_refusals_in_kube_schedulers_words(setup: str, words: str) -> None:
    bad = device_class("gpu", f'device.attributes["{DRIVER}"].missing == 1')
    index = index_with(gpu_slice("n1", 1), classes=[bad] if setup == "bad CEL" else None)
    if setup == "missing class":
        add_claim(index, "c", gpus(1, device_class="nope"))
    elif setup == "bad CEL":
        add_claim(index, "c", gpus(1))
    with pytest.raises(DeviceRefusalError) as caught:
        index.fit("p", ["default/c"], node("n1"))
    assert words in caught.value.reason
    assert caught.value.anywhere


# -- properties ----------------------------------------------------------------

_NODES = ("n1", "n2", "n3")


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    slices = []
    for name in _NODES:
        domains = draw(st.lists(st.sampled_from("ab"), max_size=6))
        raw = gpu_slice(name, 0)
        raw["spec"]["devices"] = [gpu(i, domain=d) for i, d in enumerate(domains)]
        slices.append(raw)
    return slices


_asks = st.tuples(st.integers(1, 4), st.booleans(), st.sampled_from(_NODES))


def _ask(index: DeviceIndex, name: str, count: int, constrained: bool) -> str:
    constraints = [{"matchAttribute": NVLINK}] if constrained else None
    return add_claim(index, name, gpus(count), constraints=constraints)


def _check_no_device_twice(index: DeviceIndex, assumed: list[PodDevices]) -> None:
    """The naive recount: every device of every live allocation, counted once."""
    seen: dict[tuple[str, str, str], str] = {}
    for found in assumed:
        for allocation in found.allocations:
            for result in allocation.results:
                assert result.key not in seen, f"{result.key} given to {seen[result.key]} too"
                seen[result.key] = allocation.claim
    assert seen == index.taken()


@settings(max_examples=200, deadline=None)
@given(clusters(), st.lists(st.tuples(_asks, st.booleans()), max_size=12))
def test_no_device_is_allocated_twice_at_any_instant(
    slices: list[dict[str, Any]], steps: list[tuple[tuple[int, bool, str], bool]]
) -> None:
    index = index_with(*slices)
    assumed: list[PodDevices] = []
    for number, ((count, constrained, node_name), drop) in enumerate(steps):
        key = _ask(index, f"c{number}", count, constrained)
        try:
            found = index.fit(f"p{number}", [key], node(node_name))
        except DeviceRefusalError:
            found = None
        if found is not None:
            index.assume(found)
            assumed.append(found)
            if constrained:
                values = {index_value(index, r) for r in found.allocations[0].results}
                assert len(values) == 1
        if drop and assumed:
            index.forget(assumed.pop(0))
        _check_no_device_twice(index, assumed)


def index_value(index: DeviceIndex, result: Any) -> object:
    slice_ = next(s for s in index._slices.values() if s.pool == result.pool)
    device = next(d for d in slice_.devices if d.name == result.device)
    return device.attribute(NVLINK, DRIVER)


@settings(max_examples=200, deadline=None)
@given(clusters(), st.lists(_asks, min_size=1, max_size=6))
def test_a_gang_is_allocated_whole_or_leaves_no_trace(
    slices: list[dict[str, Any]], members: list[tuple[int, bool, str]]
) -> None:
    index = index_with(*slices)
    before = index.taken()
    trial: list[PodDevices] = []
    whole = True
    for number, (count, constrained, node_name) in enumerate(members):
        key = _ask(index, f"m{number}", count, constrained)
        try:
            found = index.fit(f"m{number}", [key], node(node_name))
        except DeviceRefusalError:
            whole = False
            break
        index.assume(found)
        trial.append(found)
    if whole:
        assert len(index.taken()) == len(before) + sum(count for count, _, _ in members)
    else:
        for found in reversed(trial):
            index.forget(found)
        assert index.taken() == before


@settings(max_examples=200, deadline=None)
@given(clusters(), _asks, st.lists(st.sampled_from("ab"), min_size=1, max_size=4))
def test_more_devices_never_refuse_a_claim_that_fit(
    slices: list[dict[str, Any]], ask: tuple[int, bool, str], extra: list[str]
) -> None:
    count, constrained, node_name = ask
    index = index_with(*slices)
    fits_before = _fits(index, count, constrained, node_name)
    grown = [
        dict(raw, spec=dict(raw["spec"], devices=list(raw["spec"]["devices"]))) for raw in slices
    ]
    for raw in grown:
        if raw["spec"]["nodeName"] == node_name:
            start = len(raw["spec"]["devices"])
            raw["spec"]["devices"] += [gpu(start + i, domain=d) for i, d in enumerate(extra)]
    if fits_before:
        assert _fits(index_with(*grown), count, constrained, node_name)


def _fits(index: DeviceIndex, count: int, constrained: bool, node_name: str) -> bool:
    key = _ask(index, "c", count, constrained)
    try:
        index.fit("p", [key], node(node_name))
    except DeviceRefusalError:
        return False
    return True


# -- inside the trial ----------------------------------------------------------


def _member(name: str, claim_name: str) -> PodInfo:
    claims = [{"name": "gpus", "resourceClaimName": claim_name}]
    return pod(name, cpu="1", group="train", spec_extra={"resourceClaims": claims})


def _trial_snapshot(*nodes_and_gpus: tuple[str, int]) -> Snapshot:
    snapshot = Snapshot()
    for name, count in nodes_and_gpus:
        snapshot.upsert_node(node(name, cpu="64"))
        snapshot.devices.upsert_slice(ResourceSliceInfo.from_object(gpu_slice(name, count)))
    snapshot.devices.upsert_class(DeviceClassInfo.from_object(device_class()))
    return snapshot


def test_a_gang_takes_its_devices_in_one_trial_or_none() -> None:
    snapshot = _trial_snapshot(("n1", 4), ("n2", 4))
    members = []
    for number in range(4):
        add_claim(snapshot.devices, f"c{number}", gpus(2))
        members.append(_member(f"m{number}", f"c{number}"))
    statement = Statement(snapshot)
    trial = greedy_trial(statement, members, {}, 4, Scoring())
    assert trial.placed == 4
    taken = snapshot.devices.taken()
    assert len(taken) == 8  # every GPU of both nodes, each once
    writes = snapshot.devices.writes_for([(m.name, m.uid) for m in members])
    assert len(writes) == 4
    for write, member in zip(writes, members, strict=True):
        assert write.reserve == ((member.name, member.uid),)
        assert write.allocation is not None
        node_name = snapshot.node_of(member.uid)
        assert all(r.pool == node_name for r in write.allocation.results)
    statement.discard()
    assert snapshot.devices.taken() == {}

    # A fifth member finds no devices: the trial falls short and is discarded whole.
    add_claim(snapshot.devices, "c4", gpus(2))
    statement = Statement(snapshot)
    trial = greedy_trial(statement, [*members, _member("m4", "c4")], {}, 5, Scoring())
    assert trial.placed == 4
    assert trial.failure is not None
    assert trial.failure.diagnosis.reasons == {CANNOT_ALLOCATE: 2}
    statement.discard()
    assert snapshot.devices.taken() == {}
    assert all(snapshot.node_of(m.uid) is None for m in members)


def test_members_sharing_a_claim_land_where_its_devices_are() -> None:
    snapshot = _trial_snapshot(("n1", 2), ("n2", 2))
    add_claim(snapshot.devices, "shared", gpus(2))
    members = [_member(f"m{n}", "shared") for n in range(3)]
    statement = Statement(snapshot)
    assert greedy_trial(statement, members, {}, 3, Scoring()).placed == 3
    assert {snapshot.node_of(m.uid) for m in members} == {"n1"}
    assert len(snapshot.devices.taken()) == 2
    (write,) = snapshot.devices.writes_for([(m.name, m.uid) for m in members])
    assert write.allocation is not None
    assert [uid for _, uid in write.reserve] == [m.uid for m in members]
    snapshot.forget(members[0].uid)  # the allocating member's binding failed
    assert snapshot.devices.taken() == {}


def test_a_claim_left_allocated_for_pods_that_wait_is_stale() -> None:
    index = index_with(gpu_slice("n1", 2))
    results = [{"request": "gpus", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]
    allocation = {"devices": {"results": results}}
    mine = {
        "allocation": allocation,
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "p"}],
    }
    shared = {
        "allocation": allocation,
        "reservedFor": [
            {"resource": "pods", "name": "p", "uid": "p"},
            {"resource": "pods", "name": "q", "uid": "q"},
        ],
    }
    a = add_claim(index, "a", gpus(1), status=mine)
    b = add_claim(index, "b", gpus(1), status=shared)
    c = add_claim(index, "c", gpus(1))
    stale = index.stale([("p", [a, b, c])])
    assert [claim.key for claim in stale] == [a]


# -- through the facade: queues count devices per DeviceClass -------------------

GPU_RESOURCE = "deviceclass.resource.kubernetes.io/gpu"


def _gpu_cluster(nodes: int) -> Scheduler:
    from coscheduler.api.devices import ResourceClaimTemplateInfo

    scheduler = Scheduler(Clock())
    for index in range(nodes):
        scheduler.upsert_node(node(f"n{index}", cpu="64"))
        scheduler.upsert_resource_slice(ResourceSliceInfo.from_object(gpu_slice(f"n{index}", 8)))
    scheduler.upsert_device_class(DeviceClassInfo.from_object(device_class()))
    template = claim("pair", gpus(2))
    raw = {"metadata": {"name": "pair", "namespace": "default"}, "spec": {"spec": template["spec"]}}
    scheduler.upsert_claim_template(ResourceClaimTemplateInfo.from_object(raw))
    return scheduler


def _submit_gpu_gang(scheduler: Scheduler, name: str, size: int, queue_name: str) -> list[PodInfo]:
    scheduler.upsert_group(group(name, size, queue=queue_name))
    members = []
    for index in range(size):
        member = f"{name}-{index}"
        raw = pod_object(
            member,
            group=name,
            spec_extra={"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "pair"}]},
        )
        raw["status"] = {"resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": member}]}
        scheduler.upsert_resource_claim(ResourceClaimInfo.from_object(claim(member, gpus(2))))
        info = PodInfo.from_object(raw)
        scheduler.upsert_pod(info)
        members.append(info)
    return members


def test_a_queue_capped_in_gpus_admits_a_gang_only_within_its_cap() -> None:
    scheduler = _gpu_cluster(2)
    everyone = frozenset({"default"})
    scheduler.upsert_queue(QueuePolicy("team", max={GPU_RESOURCE: 8}, namespaces=everyone))
    _submit_gpu_gang(scheduler, "first", 4, "team")
    first = scheduler.next_decision()
    assert first is not None
    assert first.ok
    assert len(first.device_writes) == 4
    assert scheduler.quotas.usage("team").get(GPU_RESOURCE, 0) in (0, 8)
    _submit_gpu_gang(scheduler, "second", 2, "team")
    for binding in first.bindings:  # the first gang runs
        bound = scheduler.pod(binding.uid)
        assert bound is not None
        scheduler.upsert_pod(dataclasses.replace(bound, node_name=binding.node, phase="Running"))
    assert scheduler.quotas.usage("team")[GPU_RESOURCE] == 8
    second = scheduler.next_decision()
    assert second is not None
    assert second.status.reason is Reason.QUEUE_MAX_REACHED
    assert not second.bindings
    # Nothing of the refused gang holds a device.
    assert len(scheduler.snapshot.devices.taken()) == 8


def test_preemption_frees_a_victim_gangs_gpus_in_its_plan() -> None:
    from coscheduler.core import SchedulerSettings
    from coscheduler.core.preemption import Mode, PreemptionSettings

    settings = SchedulerSettings(preemption=PreemptionSettings(mode=Mode.ON))
    scheduler = Scheduler(Clock(), settings)
    scheduler.upsert_node(node("n0", cpu="64"))
    scheduler.upsert_resource_slice(ResourceSliceInfo.from_object(gpu_slice("n0", 4)))
    scheduler.upsert_device_class(DeviceClassInfo.from_object(device_class()))
    # ``low`` runs with all 4 GPUs, its claims allocated and reserved by the API.
    scheduler.upsert_group(group("low", 2, priority=1))
    for index in range(2):
        name = f"low-{index}"
        raw = pod_object(
            name,
            group="low",
            priority=1,
            node="n0",
            phase="Running",
            spec_extra={"resourceClaims": [{"name": "gpus", "resourceClaimName": name}]},
        )
        member = PodInfo.from_object(raw)
        results = [
            {"request": "gpus", "driver": DRIVER, "pool": "n0", "device": f"gpu-{2 * index + i}"}
            for i in range(2)
        ]
        status = {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "name": name, "uid": member.uid}],
        }
        scheduler.upsert_resource_claim(
            ResourceClaimInfo.from_object(claim(name, gpus(2), status=status))
        )
        scheduler.upsert_pod(member)
    scheduler.upsert_group(group("urgent", 2, priority=100))
    for index in range(2):
        name = f"urgent-{index}"
        raw = pod_object(
            name,
            group="urgent",
            priority=100,
            spec_extra={"resourceClaims": [{"name": "gpus", "resourceClaimName": name}]},
        )
        scheduler.upsert_resource_claim(ResourceClaimInfo.from_object(claim(name, gpus(2))))
        scheduler.upsert_pod(PodInfo.from_object(raw))
    decision = scheduler.next_decision()
    assert decision is not None
    assert not decision.bindings
    assert CANNOT_ALLOCATE in decision.status.message
    order = decision.preemption
    assert order is not None
    assert order.evict
    assert {pod.name for pod in order.plan.pods} == {"low-0", "low-1"}
    # The trial gave nothing away: the victims' GPUs are theirs until their claims are freed.
    assert len(scheduler.snapshot.devices.taken()) == 4
    assert scheduler.snapshot.devices._freed == set()


def test_a_claim_taking_devices_wakes_no_gang_and_one_giving_them_back_does() -> None:
    scheduler = _gpu_cluster(1)  # 8 GPUs
    running = _submit_gpu_gang(scheduler, "running", 4, "default")
    decision = scheduler.next_decision()
    assert decision is not None
    assert len(decision.bindings) == 4
    waiting = _submit_gpu_gang(scheduler, "waiting", 2, "default")
    refused = scheduler.next_decision()
    assert refused is not None
    assert refused.group.name == "waiting"
    assert not refused.bindings
    waiting_key = refused.group
    assert scheduler.queue.pool(waiting_key) == "unschedulable"

    def status(member: PodInfo, devices: list[str] | None) -> dict[str, Any]:
        reserved = [{"resource": "pods", "name": member.name, "uid": member.uid}]
        if devices is None:
            return {}
        results = [
            {"request": "gpus", "driver": DRIVER, "pool": "n0", "device": d} for d in devices
        ]
        return {"allocation": {"devices": {"results": results}}, "reservedFor": reserved}

    # The running gang's allocations echo back: they take devices, and wake nobody.
    for number, member in enumerate(running):
        devices = [f"gpu-{2 * number}", f"gpu-{2 * number + 1}"]
        raw = claim(member.name, gpus(2), status=status(member, devices))
        scheduler.upsert_resource_claim(ResourceClaimInfo.from_object(raw))
    assert scheduler.queue.pool(waiting_key) == "unschedulable"
    assert scheduler.next_decision() is None

    # One claim given back (deallocated as its pod ended): the waiting gang is tried.
    raw = claim(running[0].name, gpus(2))
    scheduler.upsert_resource_claim(ResourceClaimInfo.from_object(raw))
    assert scheduler.queue.pool(waiting_key) == "active"
    tried = scheduler.next_decision()
    assert tried is not None
    assert tried.group == waiting_key
    assert len(tried.pending) == len(waiting)


def test_a_new_claim_wakes_only_the_gang_whose_pod_names_it() -> None:
    scheduler = _gpu_cluster(1)  # 8 GPUs
    _submit_gpu_gang(scheduler, "running", 4, "default")
    assert len(decided(scheduler).bindings) == 4
    _submit_gpu_gang(scheduler, "waiting", 2, "default")  # no GPU left for it
    waiting = decided(scheduler).group
    scheduler.upsert_group(group("late", 1))
    raw = pod_object(
        "late-0",
        group="late",
        spec_extra={"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "pair"}]},
    )
    raw["status"] = {"resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "late-0"}]}
    scheduler.upsert_pod(PodInfo.from_object(raw))  # its claim is not made yet
    late = decided(scheduler)
    assert 'resourceclaim.resource.k8s.io "late-0" not found' in late.status.message
    assert scheduler.next_decision() is None

    scheduler.upsert_resource_claim(ResourceClaimInfo.from_object(claim("late-0", gpus(2))))
    assert scheduler.queue.pool(late.group) == "active"
    assert scheduler.queue.pool(waiting) == "unschedulable"
    assert decided(scheduler).group == late.group
