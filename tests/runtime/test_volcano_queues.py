"""runtime/handlers/volcano_queues.py: Volcano's Queues fed to the core as ours, ours
winning a name both hold, bad input reported and never fatal."""

from __future__ import annotations

from typing import Any

from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import InvalidObject
from tests.fed import Fed


def their_queue(name: str, state: str | None = None, **spec: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": spec,
    }
    if state is not None:
        raw["status"] = {"state": state}
    return raw


def our_queue(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "Queue",
        "metadata": {"name": name, "uid": f"uid-ours-{name}"},
        "spec": spec,
    }


def make_state() -> tuple[Fed, list[InvalidObject]]:
    invalid: list[InvalidObject] = []
    return Fed(Scheduler(lambda: 0.0), on_invalid=invalid.append), invalid


def test_their_queues_are_the_core_s_and_root_is_the_top_not_a_queue() -> None:
    state, invalid = make_state()
    state.handlers.volcano_queues.replace(
        [
            their_queue("root"),
            their_queue("research", parent="root", capability={"cpu": "16"}),
            their_queue("vision", parent="research", deserved={"cpu": "4"}, weight=3),
        ]
    )
    quotas = state.scheduler.quotas
    assert quotas.names() == ["research", "vision"]
    vision = quotas.policy("vision")
    assert vision is not None
    assert (vision.parent, vision.nominal, vision.weight) == ("research", {"cpu": 4000}, 3)
    assert vision.allows("any-namespace", {}), "every namespace may use a Volcano queue"
    research = quotas.policy("research")
    assert research is not None
    assert (research.parent, research.max) == (None, {"cpu": 16000})
    assert invalid == []


def test_a_closed_queue_admits_no_group_and_says_so() -> None:
    state, _ = make_state()
    state.handlers.volcano_queues.replace([their_queue("q", state="Closed")])
    gate = state.scheduler.quotas.gate("q", "default")
    assert gate is not None
    assert gate.reason == "QueueClosed"


def test_ours_wins_a_name_both_hold_and_theirs_stands_again_when_ours_goes() -> None:
    state, _ = make_state()
    state.handlers.queues.replace([our_queue("shared", weight=5, namespaces=["default"])])
    state.handlers.volcano_queues.replace([their_queue("shared", weight=2)])
    policy = state.scheduler.quotas.policy("shared")
    assert policy is not None
    assert policy.weight == 5
    assert state.handlers.volcano_queues.shadowed("shared")
    state.handlers.queues.replace([])
    policy = state.scheduler.quotas.policy("shared")
    assert policy is not None
    assert policy.weight == 2
    state.handlers.volcano_queues.replace([])
    assert state.scheduler.quotas.names() == []


def test_ours_arriving_after_theirs_still_wins_and_theirs_going_leaves_ours() -> None:
    state, _ = make_state()
    state.handlers.volcano_queues.replace([their_queue("shared", weight=2)])
    state.handlers.queues.replace([our_queue("shared", weight=5)])
    state.handlers.volcano_queues.replace([])
    policy = state.scheduler.quotas.policy("shared")
    assert policy is not None
    assert policy.weight == 5


def test_a_contradictory_queue_is_reported_and_the_others_still_read() -> None:
    state, invalid = make_state()
    state.handlers.volcano_queues.replace(
        [
            their_queue("bad", deserved={"cpu": "8"}, capability={"cpu": "4"}),
            their_queue("worse", weight=0),
            their_queue("good"),
        ]
    )
    assert state.scheduler.quotas.names() == ["good"]
    assert sorted((i.name, i.api_version) for i in invalid) == [
        ("bad", "scheduling.volcano.sh/v1beta1"),
        ("worse", "scheduling.volcano.sh/v1beta1"),
    ]
    assert "spec.capability is below spec.deserved for cpu" in invalid[0].message
