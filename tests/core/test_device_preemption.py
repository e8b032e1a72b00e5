"""Preemption and devices (DRA): the plan counts a victim's devices, and the hold keeps them.

Once a plan is made, its preemptor's nominated members hold their room
(placeholders); the devices the plan's trial gave them are held with it, so
that when the victims' claims let them go no other group takes them first.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from coscheduler.api.devices import (
    DeviceClassInfo,
    ResourceClaimInfo,
    ResourceClaimTemplateInfo,
    ResourceSliceInfo,
)
from coscheduler.api.pod import PodInfo
from coscheduler.core import SchedulerSettings
from coscheduler.core.decision import Decision
from coscheduler.core.preemption import Mode, PreemptionSettings
from coscheduler.core.scheduler import Scheduler
from tests.builders import Clock, group, node, pod_object
from tests.dra import DRIVER, claim, device_class, exactly, gpu_slice


def _cluster(gpus: int) -> Scheduler:
    settings = SchedulerSettings(preemption=PreemptionSettings(mode=Mode.ON))
    scheduler = Scheduler(Clock(), settings)
    scheduler.upsert_node(node("n0", cpu="64"))
    scheduler.upsert_resource_slice(ResourceSliceInfo.from_object(gpu_slice("n0", gpus)))
    scheduler.upsert_device_class(DeviceClassInfo.from_object(device_class()))
    return scheduler


def _member(
    name: str, gang: str, priority: int, templated: bool, node_name: str | None = None
) -> dict[str, Any]:
    """A raw member with one claim: named, or made from the template ``<gang>`` as
    kube-controller-manager makes it (the claim gets the pod's name)."""
    entry = {"name": "gpus", "resourceClaimTemplateName": gang}
    raw = pod_object(
        name,
        group=gang,
        priority=priority,
        node=node_name,
        phase="Pending" if node_name is None else "Running",
        spec_extra={
            "resourceClaims": [entry if templated else {"name": "gpus", "resourceClaimName": name}]
        },
    )
    if templated:
        raw["status"]["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": name}]
    return raw


def _template(scheduler: Scheduler, gang: str, each: int) -> None:
    raw = {
        "metadata": {"name": gang, "namespace": "default"},
        "spec": {"spec": claim(gang, _gpus(each))["spec"]},
    }
    scheduler.upsert_claim_template(ResourceClaimTemplateInfo.from_object(raw))


def _running_gang(
    scheduler: Scheduler,
    name: str,
    members: int,
    each: int,
    *,
    templated: bool = False,
    first: int = 0,
) -> list[PodInfo]:
    """A gang of priority 1 on n0, its claims allocated (GPUs from ``first``) and reserved."""
    scheduler.upsert_group(group(name, members, priority=1))
    if templated:
        _template(scheduler, name, each)
    pods = []
    for index in range(members):
        member = f"{name}-{index}"
        pod = PodInfo.from_object(_member(member, name, 1, templated, "n0"))
        results = [
            {
                "request": "gpus",
                "driver": DRIVER,
                "pool": "n0",
                "device": f"gpu-{first + each * index + i}",
            }
            for i in range(each)
        ]
        status = {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "name": member, "uid": pod.uid}],
        }
        scheduler.upsert_resource_claim(
            ResourceClaimInfo.from_object(claim(member, _gpus(each), status=status))
        )
        scheduler.upsert_pod(pod)
        pods.append(pod)
    return pods


def _waiting_gang(
    scheduler: Scheduler,
    name: str,
    members: int,
    each: int,
    priority: int,
    *,
    templated: bool = False,
) -> None:
    scheduler.upsert_group(group(name, members, priority=priority))
    if templated:
        _template(scheduler, name, each)
    for index in range(members):
        member = f"{name}-{index}"
        scheduler.upsert_resource_claim(ResourceClaimInfo.from_object(claim(member, _gpus(each))))
        scheduler.upsert_pod(PodInfo.from_object(_member(member, name, priority, templated)))


def _gpus(count: int) -> dict[str, object]:
    return {"name": "gpus", "exactly": exactly(count)}


def _victims_go(scheduler: Scheduler, victims: list[PodInfo]) -> None:
    """The evicted pods are deleted; kube-controller-manager deallocates their claims."""
    for pod in victims:
        scheduler.remove_pod(pod.uid)
        scheduler.upsert_resource_claim(
            ResourceClaimInfo.from_object(claim(pod.name, *_claim_requests(scheduler, pod)))
        )


def _claim_requests(scheduler: Scheduler, pod: PodInfo) -> list[dict[str, object]]:
    held = scheduler.resource_claim(f"default/{pod.name}")
    assert held is not None
    return [_gpus(len(held.allocation or ()))]


def _carry_out(scheduler: Scheduler, decision: Decision) -> None:
    """As the runtime and the API would: claims written, then the pods bound."""
    for write in decision.device_writes:
        claim_info = write.claim
        allocation = write.allocation
        scheduler.upsert_resource_claim(
            dataclasses.replace(
                claim_info,
                allocation=claim_info.allocation if allocation is None else allocation.results,
                allocation_nodes=claim_info.allocation_nodes
                if allocation is None
                else allocation.nodes,
                consumers=(
                    *claim_info.consumers,
                    *(("", "pods", name, uid) for name, uid in write.reserve),
                ),
            )
        )
    for binding in decision.bindings:
        pod = scheduler.pod(binding.uid)
        assert pod is not None
        scheduler.upsert_pod(dataclasses.replace(pod, node_name=binding.node, phase="Running"))


def _devices_written(decision: Decision) -> set[tuple[str, str, str]]:
    return {
        r.key
        for w in decision.device_writes
        if w.allocation is not None
        for r in w.allocation.results
    }


def test_the_hold_keeps_the_freed_gpus_for_the_preemptor() -> None:
    scheduler = _cluster(4)
    victims = _running_gang(scheduler, "low", 2, 2)
    _waiting_gang(scheduler, "urgent", 2, 2, priority=100)
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.preemption is not None
    assert decision.preemption.evict
    plan = decision.preemption.plan
    held = {r.key for d in plan.nominated_devices for a in d.allocations for r in a.results}
    assert len(held) == 4
    # Held for urgent's claims while the victims still have them.
    taken = scheduler.snapshot.devices.taken()
    assert {taken[key] for key in held} == {"default/urgent-0", "default/urgent-1"}
    # Allocated to the victims and held at once, each device counts once.
    assert scheduler.snapshot.devices.room_on("n0") == 0

    _victims_go(scheduler, victims)
    assert scheduler.snapshot.devices.room_on("n0") == 0  # held still
    # A group of even higher priority comes: it finds no GPU free while the hold stands.
    _waiting_gang(scheduler, "other", 1, 1, priority=200)
    other = scheduler.next_decision()
    assert other is not None
    assert other.group.name == "other"
    assert not other.bindings
    urgent = scheduler.next_decision()
    assert urgent is not None
    assert urgent.group.name == "urgent"
    assert len(urgent.bindings) == 2
    assert _devices_written(urgent) == held


def test_the_hold_gives_the_devices_back_when_it_is_let_go() -> None:
    scheduler = _cluster(4)
    _running_gang(scheduler, "low", 2, 2)
    _waiting_gang(scheduler, "urgent", 2, 2, priority=100)
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.preemption is not None
    for uid in [p.uid for p in scheduler.pods() if p.name.startswith("urgent")]:
        scheduler.remove_pod(uid)
    scheduler.preemptions.forget(scheduler.snapshot, decision.group)
    taken = scheduler.snapshot.devices.taken()
    assert set(taken.values()) == {"default/low-0", "default/low-1"}
    # Held and allocated at once, a device counts once: none is free, none below.
    assert scheduler.snapshot.devices.room_on("n0") == 0


def test_free_devices_beside_the_victims_count_in_the_plan() -> None:
    # 5 GPUs, the victim holds 2 and 3 are free: the preemptor's 4 need both.
    # Claims from templates count as requests (queues): the plan's sums must not
    # take them for node room, where free devices would count as none.
    scheduler = _cluster(5)
    _running_gang(scheduler, "low", 1, 2, templated=True)
    _waiting_gang(scheduler, "urgent", 1, 4, priority=100, templated=True)
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.preemption is not None
    assert decision.preemption.plan.found
    assert {pod.name for pod in decision.preemption.plan.pods} == {"low-0"}
    (devices,) = decision.preemption.plan.nominated_devices
    assert len(devices.allocations[0].results) == 4


@settings(max_examples=40, deadline=None)
@given(
    st.integers(4, 8),
    st.integers(1, 3),
    st.integers(1, 2),
    st.integers(1, 3),
    st.lists(st.integers(1, 3), max_size=3),
)
def test_no_other_group_takes_what_the_hold_keeps(
    gpus: int, victim_members: int, victim_each: int, urgent_each: int, others: list[int]
) -> None:
    victim_members = min(victim_members, gpus // victim_each)
    scheduler = _cluster(gpus)
    victims = _running_gang(scheduler, "low", victim_members, victim_each)
    free = gpus - victim_members * victim_each
    urgent_members = free // urgent_each + 1  # it does not fit beside the victims
    if urgent_members * urgent_each > gpus:
        return
    _waiting_gang(scheduler, "urgent", urgent_members, urgent_each, priority=100)
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.preemption is not None
    assert decision.preemption.evict
    plan = decision.preemption.plan
    held = {r.key for d in plan.nominated_devices for a in d.allocations for r in a.results}
    assert len(held) == urgent_members * urgent_each
    _victims_go(scheduler, victims)
    for number, each in enumerate(others):
        _waiting_gang(scheduler, f"other{number}", 1, each, priority=200)
    written: dict[tuple[str, str, str], str] = {}
    placed_urgent = False
    while (next_one := scheduler.next_decision()) is not None:
        for key in _devices_written(next_one):
            assert key not in written, f"{key} given twice"
            written[key] = next_one.group.name
        if next_one.group.name == "urgent" and next_one.bindings:
            placed_urgent = True
        elif not placed_urgent:
            assert not _devices_written(next_one) & held
        _carry_out(scheduler, next_one)
    assert placed_urgent
