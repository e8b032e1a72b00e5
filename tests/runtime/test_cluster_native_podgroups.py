"""The handlers with Kubernetes' own PodGroups, fed by hand: the real core decides.

A pod joins with ``spec.schedulingGroup.podGroupName``; the group's policy
comes from the native PodGroup (``minCount``, topology, priority, disruption
mode, preemption policy); bad input waits with a reason, never a crash.
"""

from __future__ import annotations

from typing import Any

import pytest

from coscheduler.api.adapters import native
from coscheduler.api.devices import (
    DeviceClassInfo,
    ResourceClaimInfo,
    ResourceClaimTemplateInfo,
    ResourceSliceInfo,
)
from coscheduler.api.reasons import Reason
from coscheduler.core.group import KIND_NATIVE_POD_GROUP, GroupKey
from coscheduler.core.planner import Decision
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.device_writer import claim_status
from coscheduler.runtime.handlers.base import InvalidObject
from tests import dra
from tests.builders import (
    TOLD_AT_ONCE,
    native_podgroup_object,
    node_object,
    pod_object,
    scheduling_group,
)
from tests.fed import Fed

BETA = native.ADAPTERS[0]


def make_state() -> tuple[Fed, list[InvalidObject]]:
    invalid: list[InvalidObject] = []
    return Fed(Scheduler(lambda: 0.0, TOLD_AT_ONCE), on_invalid=invalid.append), invalid


def member(name: str, group: str = "train", **pod: Any) -> dict[str, Any]:
    return pod_object(name, spec_extra=scheduling_group(group), **pod)


def decisions(state: Fed) -> list[Decision]:
    made = []
    while (decision := state.scheduler.next_decision()) is not None:
        made.append(decision)
    return made


def key(name: str = "train") -> GroupKey:
    return GroupKey("default", name, KIND_NATIVE_POD_GROUP)


def test_a_gang_waits_for_its_podgroup_then_is_placed_whole() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(4)])
    state.handlers.pods.replace([member(f"w-{i}") for i in range(4)])

    [waiting] = decisions(state)
    assert waiting.status.reason is Reason.GROUP_NOT_FOUND
    assert "PodGroup default/train (scheduling.k8s.io) does not exist" in waiting.status.message

    assert state.handlers.podgroups[BETA.api].upsert(native_podgroup_object("train", 4)) == key()
    [placed] = decisions(state)
    assert placed.group == key()
    assert len(placed.bindings) == 4
    assert state.handlers.groups.podgroups[key()].spec.min_member == 4


def test_a_gang_that_does_not_fit_places_none() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(3)])
    state.handlers.podgroups[BETA.api].upsert(native_podgroup_object("train", 4))
    state.handlers.pods.replace([member(f"w-{i}") for i in range(4)])
    [refused] = decisions(state)
    assert refused.status.reason is Reason.NOT_ENOUGH_RESOURCES
    assert not refused.bindings


def test_basic_places_members_one_by_one() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(3)])
    state.handlers.podgroups[BETA.api].upsert(native_podgroup_object("train", None))
    state.handlers.pods.replace([member(f"w-{i}") for i in range(4)])
    placed = [binding for decision in decisions(state) for binding in decision.bindings]
    assert len(placed) == 3  # as many as fit; the fourth waits


def test_the_topology_key_keeps_the_gang_in_one_domain() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace(
        [node_object(f"a{i}", cpu="1", labels={"rack": "a"}) for i in range(2)]
        + [node_object(f"b{i}", cpu="1", labels={"rack": "b"}) for i in range(3)]
    )
    raw = native_podgroup_object("train", 3, schedulingConstraints={"topology": [{"key": "rack"}]})
    state.handlers.podgroups[BETA.api].upsert(raw)
    state.handlers.pods.replace([member(f"w-{i}") for i in range(3)])
    [placed] = decisions(state)
    assert sorted(binding.node for binding in placed.bindings) == ["b0", "b1", "b2"]


def test_a_podgroup_of_ours_and_a_native_one_of_the_same_name_are_two_groups() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="1") for i in range(4)])
    state.handlers.podgroups[BETA.api].upsert(native_podgroup_object("train", 2))
    state.handlers.pods.replace([member("w-0"), member("w-1"), pod_object("ours-0", group="train")])
    made = decisions(state)
    native_decision = next(d for d in made if d.group == key())
    assert len(native_decision.bindings) == 2
    ours = next(d for d in made if d.group == GroupKey("default", "train"))
    assert ours.status.reason is Reason.GROUP_NOT_FOUND


def _gpu_nodes(state: Fed, count: int, gpus: int = 4) -> None:
    state.handlers.nodes.replace([node_object(f"n{i}", cpu="8") for i in range(count)])
    for index in range(count):
        slice_ = ResourceSliceInfo.from_object(dra.gpu_slice(f"n{index}", gpus))
        state.scheduler.upsert_resource_slice(slice_)
    state.scheduler.upsert_device_class(DeviceClassInfo.from_object(dra.device_class()))


def _group_claim(
    count: int, *, owned: bool = True, status: dict[str, Any] | None = None
) -> ResourceClaimInfo:
    request = {"name": "gpus", "exactly": dra.exactly(count)}
    raw = dra.claim("train-gpus-x1", request, status=status)
    if owned:  # as kube-controller-manager makes it from the group's template
        owner = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup"}
        raw["metadata"]["ownerReferences"] = [
            {**owner, "name": "train", "uid": "uid-npg-train", "controller": True}
        ]
    return ResourceClaimInfo.from_object(raw)


def _claim_member(name: str) -> dict[str, Any]:
    raw = member(name)
    raw["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "four"}]
    raw["status"] = {
        "resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "train-gpus-x1"}]
    }
    return raw


SHARED = [{"name": "gpus", "resourceClaimTemplateName": "four"}]


def test_a_podgroup_claim_is_allocated_once_and_reserved_for_the_group() -> None:
    state, _ = make_state()
    _gpu_nodes(state, 2)
    state.scheduler.upsert_resource_claim(_group_claim(4))
    state.handlers.podgroups[BETA.api].upsert(
        native_podgroup_object("train", 3, resourceClaims=SHARED)
    )
    state.handlers.pods.replace([_claim_member(f"w-{i}") for i in range(3)])
    [placed] = decisions(state)
    assert len(placed.bindings) == 3
    assert len({b.node for b in placed.bindings}) == 1  # where the group's GPUs are
    [write] = placed.device_writes
    assert write.group == ("train", "uid-npg-train")
    assert write.reserve == ()
    assert write.allocation is not None
    assert {r.pool for r in write.allocation.results} == {placed.bindings[0].node}
    status = claim_status(write)
    assert status["reservedFor"] == [
        {
            "apiGroup": "scheduling.k8s.io",
            "resource": "podgroups",
            "name": "train",
            "uid": "uid-npg-train",
        }
    ]


@pytest.mark.parametrize("owned", [True, False])
def test_queues_count_a_group_claim_from_a_template_not_per_member(owned: bool) -> None:
    state, _ = make_state()
    _gpu_nodes(state, 1)
    spec = dra.claim("four", {"name": "gpus", "exactly": dra.exactly(4)})["spec"]
    raw = {"metadata": {"name": "four", "namespace": "default"}, "spec": {"spec": spec}}
    state.scheduler.upsert_claim_template(ResourceClaimTemplateInfo.from_object(raw))
    state.scheduler.upsert_resource_claim(_group_claim(4, owned=owned))
    state.handlers.podgroups[BETA.api].upsert(
        native_podgroup_object("train", 2, resourceClaims=SHARED)
    )
    counted = []
    for name in ("w-0", "w-1"):
        uid = state.handlers.pods.upsert(_claim_member(name))
        assert uid is not None
        pod = state.scheduler.pod(uid)
        assert pod is not None
        counted.append(pod.requests.get("deviceclass.resource.kubernetes.io/gpu", 0))
    # The group's claim is shared: none of its members counts it (a pod's own claim counts).
    assert counted == ([0, 0] if owned else [4, 4])


def test_a_member_whose_entry_differs_from_the_groups_reserves_its_own_claim() -> None:
    state, _ = make_state()
    _gpu_nodes(state, 1)
    state.scheduler.upsert_resource_claim(_group_claim(2))
    other = [{"name": "gpus", "resourceClaimTemplateName": "another"}]
    state.handlers.podgroups[BETA.api].upsert(
        native_podgroup_object("train", 1, resourceClaims=other)
    )
    state.handlers.pods.replace([_claim_member("w-0")])
    [placed] = decisions(state)
    [write] = placed.device_writes
    assert write.group is None
    assert [name for name, _ in write.reserve] == ["w-0"]


def test_a_group_that_cannot_get_its_devices_takes_none() -> None:
    state, _ = make_state()
    _gpu_nodes(state, 2, gpus=2)
    state.scheduler.upsert_resource_claim(_group_claim(4))
    state.handlers.podgroups[BETA.api].upsert(
        native_podgroup_object("train", 2, resourceClaims=SHARED)
    )
    state.handlers.pods.replace([_claim_member(f"w-{i}") for i in range(2)])
    [waiting] = decisions(state)
    assert not waiting.bindings
    assert not waiting.device_writes
    assert "cannot allocate all claims" in waiting.status.message
    assert state.scheduler.snapshot.devices.taken() == {}


def test_a_group_claim_left_allocated_where_no_member_can_go_is_let_go() -> None:
    state, _ = make_state()
    _gpu_nodes(state, 2)
    results = [
        {"request": "gpus", "driver": dra.DRIVER, "pool": "n1", "device": f"gpu-{i}"}
        for i in range(4)
    ]
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    held = {
        "allocation": {
            "devices": {"results": results},
            "nodeSelector": {"nodeSelectorTerms": [term]},
        },
        "reservedFor": [
            {
                "apiGroup": "scheduling.k8s.io",
                "resource": "podgroups",
                "name": "train",
                "uid": "uid-npg-train",
            }
        ],
    }
    state.scheduler.upsert_resource_claim(_group_claim(4, status=held))
    state.handlers.nodes.upsert(node_object("n1", cpu="8", unschedulable=True))
    state.handlers.podgroups[BETA.api].upsert(
        native_podgroup_object("train", 2, resourceClaims=SHARED)
    )
    state.handlers.pods.replace([_claim_member(f"w-{i}") for i in range(2)])
    [waiting] = decisions(state)
    assert not waiting.bindings
    assert [c.key for c in waiting.device_releases] == ["default/train-gpus-x1"]


def test_members_under_two_schedulers_wait_with_a_clear_reason() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object("n0")])
    state.handlers.podgroups[BETA.api].upsert(native_podgroup_object("train", 2))
    state.handlers.pods.replace([member("w-0"), member("w-1", scheduler="default-scheduler")])
    [refused] = decisions(state)
    assert refused.status.reason is Reason.SCHEDULER_CONFLICT
    assert "coscheduler, default-scheduler" in refused.status.message
    # The stray member goes: the group is ours alone again.
    state.handlers.pods.remove(member("w-1", scheduler="default-scheduler"))
    state.handlers.pods.upsert(member("w-2"))
    [placed] = decisions(state)
    assert len(placed.bindings) == 2


def test_an_unreadable_podgroup_is_reported_and_its_pods_wait() -> None:
    state, invalid = make_state()
    state.handlers.nodes.replace([node_object("n0")])
    bad = native_podgroup_object("train", 1)
    bad["spec"]["schedulingPolicy"] = {"gang": {"minCount": -1}}
    assert state.handlers.podgroups[BETA.api].upsert(bad) is None
    [complaint] = invalid
    assert (complaint.kind, complaint.api_version) == ("PodGroup", "scheduling.k8s.io/v1beta1")
    state.handlers.pods.replace([member("w-0")])
    [waiting] = decisions(state)
    assert waiting.status.reason is Reason.GROUP_NOT_FOUND
    assert state.handlers.groups.unreadable_group(key()) is not None


def test_the_policy_carries_priority_disruption_and_preemption() -> None:
    state, _ = make_state()
    state.handlers.priority_classes.replace(
        [{"metadata": {"name": "high", "uid": "pc-high"}, "value": 1000}]
    )
    raw = native_podgroup_object(
        "train",
        2,
        priorityClassName="high",
        disruptionMode={"all": {}},
        preemptionPolicy="Never",
        labels={"scheduling.sigs.k8s.io/queue": "research"},
    )
    state.handlers.podgroups[BETA.api].upsert(raw)
    policy = state.scheduler.policy(key())
    assert policy is not None
    assert (policy.priority, policy.evict_whole, policy.no_preemption) == (
        1000,
        True,
        "its group's preemptionPolicy is Never",
    )
    assert policy.queue == "research"


def test_a_podgroup_deleted_makes_its_pods_wait_again() -> None:
    state, _ = make_state()
    state.handlers.nodes.replace([node_object("n0", cpu="1")])
    raw = native_podgroup_object("train", 2)
    state.handlers.podgroups[BETA.api].upsert(raw)
    state.handlers.pods.replace([member("w-0"), member("w-1")])
    state.handlers.podgroups[BETA.api].remove(raw)
    assert state.scheduler.policy(key()) is None
    [waiting] = decisions(state)
    assert waiting.status.reason is Reason.GROUP_NOT_FOUND
