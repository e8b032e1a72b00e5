"""runtime/preemption.py: budgets judged before the first eviction; a refusal releases the room.

The real evictions, budgets and events are tested on the real control plane
(e2e/tests/test_preemption.py); these are the faults it cannot be made to
produce on demand: a budget that changed after the plan, an eviction refused
halfway.
"""

from __future__ import annotations

import dataclasses

from coscheduler.core import GroupKey, Scheduler, SchedulerSettings
from coscheduler.core.preemption import Mode, PreemptionSettings
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.preemption import Preempter
from coscheduler.runtime.reporter import Reporter
from tests.builders import Clock, gang, group, node
from tests.runtime.apiserver import FakeApiServer, RecordedRequest, Reply, status_error

URGENT = GroupKey("default", "urgent")
LOW = GroupKey("default", "low")
BUDGETS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"


def full_cluster() -> Scheduler:
    """Two nodes of 8 cpu full with gang ``low`` (priority 1); ``urgent`` (100) needs both."""
    settings = SchedulerSettings(preemption=PreemptionSettings(mode=Mode.ON))
    scheduler = Scheduler(Clock(), settings)
    for i in range(2):
        scheduler.upsert_node(node(f"n{i}", cpu="8"))
    scheduler.upsert_group(group("low", 4, priority=1))
    for i, member in enumerate(gang("low", 4, cpu="4", priority=1)):
        scheduler.upsert_pod(dataclasses.replace(member, node_name=f"n{i // 2}", phase="Running"))
    scheduler.upsert_group(group("urgent", 2, priority=100))
    for member in gang("urgent", 2, cpu="8", priority=100):
        scheduler.upsert_pod(member)
    return scheduler


def preempter(scheduler: Scheduler, kube: KubeClient) -> tuple[Preempter, Metrics]:
    metrics = Metrics()
    return (
        Preempter(
            scheduler=scheduler,
            client=kube,
            reporter=Reporter(kube, metrics=metrics, is_waiting=scheduler.is_waiting),
            group_ref=lambda key: None,
            wake=lambda: None,
        ),
        metrics,
    )


def ok(request: RecordedRequest) -> Reply:
    return Reply(201, {"kind": "Status", "status": "Success"})


async def test_a_plan_is_carried_out_pod_by_pod_through_the_eviction_api(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", BUDGETS, Reply(200, {"items": []}))
    apiserver.on("PATCH", "/api/v1/namespaces/default/pods/*/status", ok)
    apiserver.on("POST", "/api/v1/namespaces/default/pods/*/eviction", ok)
    scheduler = full_cluster()
    runner, metrics = preempter(scheduler, kube)
    decision = scheduler.next_decision()
    assert decision is not None
    assert "Preempting: default/low (4 pods, priority 1" in decision.status.message
    runner.take(decision)
    await runner.drain()
    evictions = apiserver.requests_to("POST")
    assert sorted(r.path.split("/")[-2] for r in evictions) == [f"low-{i}" for i in range(4)]
    assert evictions[0].body["deleteOptions"] == {"preconditions": {"uid": "uid-default-low-0"}}
    conditions = [
        r.body["status"]["conditions"][0]
        for r in apiserver.requests_to("PATCH")
        if "conditions" in r.body.get("status", {})
    ]
    assert {c["type"] for c in conditions} == {"DisruptionTarget"}
    assert "PodGroup default/urgent (priority 100)" in conditions[0]["message"]
    nominated = [
        r.body["status"]["nominatedNodeName"]
        for r in apiserver.requests_to("PATCH")
        if "nominatedNodeName" in r.body.get("status", {})
    ]
    assert sorted(nominated) == ["n0", "n1"]
    assert metrics.preemption_evicted_pods._value.get() == 4
    assert scheduler.preemptions.hold(URGENT) is not None


async def test_a_budget_that_changed_since_the_plan_stops_it_before_any_eviction(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    budget = {
        "metadata": {"name": "keep", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"scheduling.sigs.k8s.io/pod-group": "low"}}},
        "status": {"disruptionsAllowed": 1},
    }
    apiserver.on("GET", BUDGETS, Reply(200, {"items": [budget]}))
    apiserver.on("PATCH", "/api/v1/namespaces/default/pods/*/status", ok)
    scheduler = full_cluster()
    runner, _ = preempter(scheduler, kube)
    decision = scheduler.next_decision()
    assert decision is not None
    runner.take(decision)
    await runner.drain()
    assert apiserver.requests_to("POST") == []
    assert scheduler.preemptions.hold(URGENT) is None
    again = scheduler.next_decision()  # retried at once, the budget's group spared
    assert again is not None
    assert again.group == URGENT
    order = again.preemption
    assert order is not None
    assert not order.plan.found


async def test_an_eviction_refused_halfway_releases_the_room(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", BUDGETS, Reply(200, {"items": []}))
    apiserver.on("PATCH", "/api/v1/namespaces/default/pods/*/status", ok)
    apiserver.on("POST", "/api/v1/namespaces/default/pods/low-[012]/eviction", ok)
    apiserver.on(
        "POST",
        "/api/v1/namespaces/default/pods/low-3/eviction",
        status_error(429, "TooManyRequests", "Cannot evict pod as it would violate the budget"),
    )
    scheduler = full_cluster()
    runner, metrics = preempter(scheduler, kube)
    decision = scheduler.next_decision()
    assert decision is not None
    runner.take(decision)
    await runner.drain()
    assert len(apiserver.requests_to("POST")) == 4
    assert metrics.preemption_evicted_pods._value.get() == 3
    assert scheduler.preemptions.hold(URGENT) is None
    assert scheduler.preemptions.nominated_node("uid-default-urgent-0") is None
    nominations = [
        r.body["status"]["nominatedNodeName"]
        for r in apiserver.requests_to("PATCH")
        if "nominatedNodeName" in r.body.get("status", {})
    ]
    assert sorted(nominations, key=str) == [None, None, "n0", "n1"]  # set, then cleared
