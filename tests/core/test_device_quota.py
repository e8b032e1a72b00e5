"""Queues count claimed devices (DRA) per DeviceClass: a shared claim once, a template's per pod."""

from __future__ import annotations

import dataclasses

from coscheduler.api.devices import (
    DeviceClassInfo,
    ResourceClaimInfo,
    ResourceClaimTemplateInfo,
    ResourceSliceInfo,
)
from coscheduler.api.pod import PodInfo
from coscheduler.api.reasons import Reason
from coscheduler.core.quota import QueuePolicy
from coscheduler.core.scheduler import Scheduler
from tests.builders import Clock, group, node, pod_object
from tests.dra import claim, device_class, exactly, gpu_slice

GPU = "deviceclass.resource.kubernetes.io/gpu"
EVERYONE = frozenset({"default"})


def _cluster(max_gpus: int) -> Scheduler:
    scheduler = Scheduler(Clock())
    scheduler.upsert_node(node("n0", cpu="64"))
    scheduler.upsert_resource_slice(ResourceSliceInfo.from_object(gpu_slice("n0", 8)))
    scheduler.upsert_device_class(DeviceClassInfo.from_object(device_class()))
    scheduler.upsert_queue(QueuePolicy("team", max={GPU: max_gpus}, namespaces=EVERYONE))
    return scheduler


def _gpus(count: int) -> dict[str, object]:
    return {"name": "gpus", "exactly": exactly(count)}


def _sharing(scheduler: Scheduler, gang: str, members: int, shared: str) -> list[PodInfo]:
    """A gang whose members all name one claim (``resourceClaimName``)."""
    scheduler.upsert_group(group(gang, members, queue="team"))
    pods = []
    for index in range(members):
        raw = pod_object(
            f"{gang}-{index}",
            group=gang,
            spec_extra={"resourceClaims": [{"name": "gpus", "resourceClaimName": shared}]},
        )
        pod = PodInfo.from_object(raw)
        scheduler.upsert_pod(pod)
        pods.append(pod)
    return pods


def _templated(scheduler: Scheduler, gang: str, members: int, each: int) -> None:
    spec = claim(gang, _gpus(each))["spec"]
    template = {"metadata": {"name": gang, "namespace": "default"}, "spec": {"spec": spec}}
    scheduler.upsert_claim_template(ResourceClaimTemplateInfo.from_object(template))
    scheduler.upsert_group(group(gang, members, queue="team"))
    for index in range(members):
        name = f"{gang}-{index}"
        raw = pod_object(
            name,
            group=gang,
            spec_extra={"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": gang}]},
        )
        raw["status"]["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": name}]
        scheduler.upsert_resource_claim(ResourceClaimInfo.from_object(claim(name, _gpus(each))))
        scheduler.upsert_pod(PodInfo.from_object(raw))


def _counted(scheduler: Scheduler) -> list[int]:
    return sorted(pod.requests.get(GPU, 0) for pod in scheduler.pods())


def _run(scheduler: Scheduler) -> None:
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.ok, decision.status
    for binding in decision.bindings:
        pod = scheduler.pod(binding.uid)
        assert pod is not None
        scheduler.upsert_pod(dataclasses.replace(pod, node_name=binding.node, phase="Running"))


def test_a_claim_shared_by_a_gang_counts_once() -> None:
    scheduler = _cluster(max_gpus=2)
    scheduler.upsert_resource_claim(ResourceClaimInfo.from_object(claim("shared", _gpus(2))))
    _sharing(scheduler, "g", 3, "shared")
    assert _counted(scheduler) == [0, 0, 2]
    _run(scheduler)  # 2 GPUs against a max of 2: admitted, though 3 pods name them
    assert scheduler.quotas.usage("team")[GPU] == 2


def test_a_template_s_claims_count_per_pod() -> None:
    scheduler = _cluster(max_gpus=3)
    _templated(scheduler, "g", 2, 2)
    assert _counted(scheduler) == [2, 2]
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.status.reason is Reason.QUEUE_MAX_REACHED


def test_the_count_moves_to_another_sharer_when_its_pod_goes() -> None:
    scheduler = _cluster(max_gpus=8)
    scheduler.upsert_resource_claim(ResourceClaimInfo.from_object(claim("shared", _gpus(2))))
    pods = _sharing(scheduler, "g", 3, "shared")
    _run(scheduler)
    assert scheduler.quotas.usage("team")[GPU] == 2
    charger = min(pods, key=lambda pod: pod.uid)
    scheduler.remove_pod(charger.uid)
    assert _counted(scheduler) == [0, 2]
    assert scheduler.quotas.usage("team")[GPU] == 2
    for pod in pods:
        if pod.uid != charger.uid:
            live = scheduler.pod(pod.uid)
            assert live is not None
            scheduler.upsert_pod(dataclasses.replace(live, phase="Succeeded"))
    assert scheduler.quotas.usage("team").get(GPU, 0) == 0


def test_a_shared_claim_seen_after_its_pods_counts_from_then() -> None:
    scheduler = _cluster(max_gpus=8)
    _sharing(scheduler, "g", 2, "late")
    assert _counted(scheduler) == [0, 0]
    scheduler.upsert_resource_claim(ResourceClaimInfo.from_object(claim("late", _gpus(3))))
    assert _counted(scheduler) == [0, 3]
