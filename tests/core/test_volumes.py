"""Pods with persistent volumes: placed where their volumes are, or held with a reason."""

from __future__ import annotations

from typing import Any

from coscheduler.api.pod import PodInfo
from coscheduler.api.reasons import Reason
from coscheduler.api.volumes import ClaimInfo, StorageClassInfo, VolumeInfo
from coscheduler.core import Scheduler
from tests.builders import Clock, decided, group, node, pod

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


def test_each_member_goes_where_its_local_volume_is() -> None:
    made = scheduler("8", "8", "8")
    for index, where in ((0, "n2"), (1, "n0")):
        made.volumes.upsert_volume(volume(f"pv-{index}", where))
        made.volumes.upsert_claim(claim(f"data-{index}", f"pv-{index}", storageClassName=""))
    made.upsert_group(group("g", 2))
    for index in range(2):
        made.upsert_pod(with_claim(f"w-{index}", f"data-{index}", group="g"))
    placed = {b.name: b.node for b in decided(made).bindings}
    assert placed == {"w-0": "n2", "w-1": "n0"}


def test_a_volume_on_a_full_node_holds_the_gang_with_kube_schedulers_words() -> None:
    made = scheduler("1", "8")
    made.volumes.upsert_volume(volume("pv", "n0"))
    made.volumes.upsert_claim(claim("data", "pv"))
    made.upsert_group(group("g", 2))
    made.upsert_pod(pod("w-0", group="g", cpu="1"))
    made.upsert_pod(with_claim("w-1", "data", group="g", cpu="2"))
    decision = decided(made)
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
    assert len(decided(made).bindings) == 4


def test_a_missing_claim_holds_the_gang_until_it_exists_and_is_bound() -> None:
    made = scheduler("8")
    made.upsert_group(group("g", 1))
    made.upsert_pod(with_claim("w-0", "data", group="g"))
    decision = decided(made)
    assert (decision.status.reason, decision.status.message) == (
        Reason.VOLUME_NOT_READY,
        'pod default/w-0: persistentvolumeclaim "data" not found',
    )
    assert not decision.status.room_would_help
    made.volumes.upsert_claim(claim("data"))  # created, not bound yet, no class: Immediate
    made.volumes_changed()
    decision = decided(made)
    assert "pod has unbound immediate PersistentVolumeClaims" in decision.status.message
    made.volumes.upsert_volume(volume("pv"))
    made.volumes.upsert_claim(claim("data", "pv"))
    made.volumes_changed()
    assert [b.node for b in decided(made).bindings] == ["n0"]


def first_consumer_class(
    name: str, provisioner: str = "kubernetes.io/no-provisioner"
) -> StorageClassInfo:
    return StorageClassInfo.from_object(
        {
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )


def local_volume(name: str, on_node: str, storage: str = "10Gi") -> VolumeInfo:
    term = {"matchExpressions": [{"key": HOST, "operator": "In", "values": [on_node]}]}
    return VolumeInfo.from_object(
        {
            "metadata": {"name": name},
            "spec": {
                "storageClassName": "local",
                "capacity": {"storage": storage},
                "accessModes": ["ReadWriteOnce"],
                "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
            },
        }
    )


def waiting_claim(name: str, storage: str = "5Gi", klass: str = "local") -> ClaimInfo:
    return claim(name, storageClassName=klass, resources={"requests": {"storage": storage}})


def test_first_consumer_claims_get_the_smallest_volume_reachable_from_their_members_node() -> None:
    made = scheduler("8", "8", "1")
    made.volumes.upsert_class(first_consumer_class("local"))
    for name, where, size in (
        ("big-n0", "n0", "100Gi"),
        ("small-n0", "n0", "6Gi"),
        ("n1", "n1", "10Gi"),
        ("tiny-n2", "n2", "1Gi"),
    ):
        made.volumes.upsert_volume(local_volume(name, where, size))
    made.upsert_group(group("g", 2))
    for index in range(2):
        made.volumes.upsert_claim(waiting_claim(f"data-{index}"))
        made.upsert_pod(with_claim(f"w-{index}", f"data-{index}", group="g", cpu="5"))
    decision = decided(made)
    nodes = {b.name: b.node for b in decision.bindings}
    assert sorted(nodes.values()) == ["n0", "n1"]  # n2 has no volume big enough, nor cpu
    chosen = {a.claim: (a.node, a.volume) for a in decision.volume_actions}
    assert chosen[f"data-{0 if nodes['w-0'] == 'n0' else 1}"] == ("n0", "small-n0")
    assert sorted(str(volume) for _, volume in chosen.values()) == ["n1", "small-n0"]


def test_a_first_consumer_claim_with_no_volume_and_no_provisioner_waits() -> None:
    made = scheduler("8")
    made.volumes.upsert_class(first_consumer_class("local"))
    made.volumes.upsert_claim(waiting_claim("data"))
    made.upsert_pod(with_claim("w-0", "data"))
    decision = decided(made)
    assert decision.status.reason == Reason.VOLUME_NOT_READY
    assert "node(s) didn't find available persistent volumes to bind" in decision.status.message


def test_a_provisioning_class_has_its_claim_provisioned_near_the_chosen_node() -> None:
    made = scheduler("8")
    made.volumes.upsert_class(first_consumer_class("fast", "ebs.csi.aws.com"))
    made.volumes.upsert_claim(waiting_claim("data", klass="fast"))
    made.upsert_pod(with_claim("w-0", "data"))
    decision = decided(made)
    assert [(a.claim, a.node, a.volume) for a in decision.volume_actions] == [("data", "n0", None)]


def test_a_read_write_once_pod_claim_in_use_holds_the_next_pod() -> None:
    made = scheduler("8", "8")
    made.volumes.upsert_volume(volume("pv"))
    made.volumes.upsert_claim(claim("data", "pv", modes=["ReadWriteOncePod"]))
    made.upsert_pod(with_claim("old", "data", node="n0", phase="Running"))
    made.upsert_pod(with_claim("new", "data"))
    decision = decided(made)
    assert decision.status.reason == Reason.VOLUME_NOT_READY
    assert "ReadWriteOncePod access mode already in-use by another pod" in decision.status.message


def csi_volume(name: str) -> VolumeInfo:
    return VolumeInfo.from_object(
        {
            "metadata": {"name": name},
            "spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": name}},
        }
    )


def test_attach_limits_count_running_pods_and_members_of_the_same_trial() -> None:
    made = scheduler("8", "8", "8")
    for name in ("n0", "n1", "n2"):
        made.set_attach_limits(name, {"ebs.csi.aws.com": 1})
    for index in range(4):
        made.volumes.upsert_volume(csi_volume(f"vol-{index}"))
        made.volumes.upsert_claim(claim(f"disk-{index}", f"vol-{index}"))
    made.upsert_pod(with_claim("old", "disk-0", node="n0", phase="Running"))
    made.upsert_group(group("g", 2))
    for index in (1, 2):
        made.upsert_pod(with_claim(f"w-{index}", f"disk-{index}", group="g"))
    nodes = sorted(b.node for b in decided(made).bindings)
    assert nodes == ["n1", "n2"]  # one more volume per node; n0 has its one
    made.upsert_pod(with_claim("late", "disk-3"))
    decision = decided(made)
    assert not decision.bindings
    assert "3 node(s) exceed max volume count" in decision.status.message
