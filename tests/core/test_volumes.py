"""Pods with persistent volumes: placed where their volumes are, or held with a reason."""

from __future__ import annotations

from typing import Any

from coscheduler.api.pod import PodInfo
from coscheduler.api.reasons import Reason
from coscheduler.api.volumes import ClaimInfo, StorageClassInfo, VolumeInfo
from coscheduler.core import Scheduler
from coscheduler.core.planner import Decision
from tests.builders import Clock, group, node, pod

HOST = "kubernetes.io/hostname"


def claim(name: str, volume: str | None = None, **spec: Any) -> ClaimInfo:
    body: dict[str, Any] = {"accessModes": spec.pop("modes", ["ReadWriteOnce"]), **spec}
    if volume is not None:
        body["volumeName"] = volume
    return ClaimInfo.from_object({"metadata": {"name": name, "namespace": "default"}, "spec": body})


def volume(name: str, on_node: str | None = None) -> VolumeInfo:
    spec: dict[str, Any] = {}
    if on_node is not None:
        term = {"matchExpressions": [{"key": HOST, "operator": "In", "values": [on_node]}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    return VolumeInfo.from_object({"metadata": {"name": name}, "spec": spec})


def with_claim(name: str, claim_name: str, **fields: Any) -> PodInfo:
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]
    return pod(name, spec_extra={"volumes": volumes}, **fields)


def scheduler(*cpus: str) -> Scheduler:
    made = Scheduler(Clock())
    for index, cpu in enumerate(cpus):
        made.upsert_node(node(f"n{index}", cpu=cpu))
    return made


def decide(made: Scheduler) -> Decision:
    decision = made.next_decision()
    assert decision is not None
    return decision


def test_each_member_goes_where_its_local_volume_is() -> None:
    made = scheduler("8", "8", "8")
    for index, where in ((0, "n2"), (1, "n0")):
        made.volumes.upsert_volume(volume(f"pv-{index}", where))
        made.volumes.upsert_claim(claim(f"data-{index}", f"pv-{index}", storageClassName=""))
    made.upsert_group(group("g", 2))
    for index in range(2):
        made.upsert_pod(with_claim(f"w-{index}", f"data-{index}", group="g"))
    placed = {b.name: b.node for b in decide(made).bindings}
    assert placed == {"w-0": "n2", "w-1": "n0"}


def test_a_volume_on_a_full_node_holds_the_gang_with_kube_schedulers_words() -> None:
    made = scheduler("1", "8")
    made.volumes.upsert_volume(volume("pv", "n0"))
    made.volumes.upsert_claim(claim("data", "pv"))
    made.upsert_group(group("g", 2))
    made.upsert_pod(pod("w-0", group="g", cpu="1"))
    made.upsert_pod(with_claim("w-1", "data", group="g", cpu="2"))
    decision = decide(made)
    assert not decision.bindings
    assert decision.status.reason == Reason.NOT_ENOUGH_RESOURCES
    assert "1 node(s) had volume node affinity conflict" in decision.status.message
    assert "1 Insufficient cpu" in decision.status.message


def test_a_shared_volume_without_node_affinity_costs_nothing() -> None:
    made = scheduler("8", "8")
    made.volumes.upsert_volume(volume("nfs"))
    made.volumes.upsert_claim(claim("shared", "nfs", modes=["ReadWriteMany"]))
    made.upsert_group(group("g", 4))
    for index in range(4):
        made.upsert_pod(with_claim(f"w-{index}", "shared", group="g"))
    assert len(decide(made).bindings) == 4


def test_a_missing_claim_holds_the_gang_until_it_exists_and_is_bound() -> None:
    made = scheduler("8")
    made.upsert_group(group("g", 1))
    made.upsert_pod(with_claim("w-0", "data", group="g"))
    decision = decide(made)
    assert (decision.status.reason, decision.status.message) == (
        Reason.VOLUME_NOT_READY,
        'pod default/w-0: persistentvolumeclaim "data" not found',
    )
    assert not decision.status.room_would_help
    made.volumes.upsert_claim(claim("data"))  # created, not bound yet, no class: Immediate
    made.volumes_changed()
    decision = decide(made)
    assert "pod has unbound immediate PersistentVolumeClaims" in decision.status.message
    made.volumes.upsert_volume(volume("pv"))
    made.volumes.upsert_claim(claim("data", "pv"))
    made.volumes_changed()
    assert [b.node for b in decide(made).bindings] == ["n0"]


def test_an_unbound_claim_of_a_first_consumer_class_is_named_as_unsupported() -> None:
    made = scheduler("8")
    made.volumes.upsert_class(
        StorageClassInfo.from_object(
            {"metadata": {"name": "local"}, "volumeBindingMode": "WaitForFirstConsumer"}
        )
    )
    made.volumes.upsert_claim(claim("data", storageClassName="local"))
    made.upsert_group(group("g", 1))
    made.upsert_pod(with_claim("w-0", "data", group="g"))
    decision = decide(made)
    assert decision.status.reason == Reason.UNSUPPORTED_FIELD
    assert 'claim "data" (unbound, its class binds on first consumer' in decision.status.message


def test_a_read_write_once_pod_claim_in_use_holds_the_next_pod() -> None:
    made = scheduler("8", "8")
    made.volumes.upsert_volume(volume("pv"))
    made.volumes.upsert_claim(claim("data", "pv", modes=["ReadWriteOncePod"]))
    made.upsert_pod(with_claim("old", "data", node="n0", phase="Running"))
    made.upsert_pod(with_claim("new", "data"))
    decision = decide(made)
    assert decision.status.reason == Reason.VOLUME_NOT_READY
    assert "ReadWriteOncePod access mode already in-use by another pod" in decision.status.message
