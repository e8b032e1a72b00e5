"""controller/admission.py: what admission refuses, against a read model fed by hand."""

from __future__ import annotations

from coscheduler.api.labels import GROUP, VERSION
from coscheduler.controller.admission import pod_scheduler_name, podgroup_verdict, queue_verdict
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.readmodel import ReadModel
from tests.fed import Fed


def cluster(*queues: dict[str, object]) -> tuple[Fed, ReadModel]:
    state = Fed(Scheduler(lambda: 0.0))
    for name, labels in {"team-a": {"team": "a"}, "team-b": {"team": "b"}}.items():
        state.handlers.namespaces.upsert(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
        )
    for queue in queues:
        state.handlers.queues.upsert({"apiVersion": f"{GROUP}/{VERSION}", "kind": "Queue", **queue})
    return state, ReadModel(state.scheduler, state.handlers)


def queue(name: str, **spec: object) -> dict[str, object]:
    return {"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec}


def test_a_podgroup_of_a_closed_queue_is_refused_with_its_reason() -> None:
    _, view = cluster(queue("research", state="Closed"))
    verdict = podgroup_verdict({"minMember": 2, "queue": "research"}, "team-a", view)
    assert verdict.refusal is not None
    assert verdict.refusal.startswith("QueueClosed: ")


def test_a_podgroup_whose_namespace_the_queue_does_not_admit_is_refused() -> None:
    _, view = cluster(queue("research", namespaceSelector={"matchLabels": {"team": "a"}}))
    allowed = podgroup_verdict({"minMember": 2, "queue": "research"}, "team-a", view)
    refused = podgroup_verdict({"minMember": 2, "queue": "research"}, "team-b", view)
    assert allowed.refusal is None
    assert refused.refusal is not None
    assert refused.refusal.startswith("QueueNotAllowed: ")


def test_a_queue_not_there_yet_is_a_warning_and_the_default_queue_nothing() -> None:
    _, view = cluster()
    missing = podgroup_verdict({"minMember": 2, "queue": "later"}, "team-a", view)
    default = podgroup_verdict({"minMember": 2}, "team-a", view)
    assert missing.refusal is None
    assert [w.split(":")[0] for w in missing.warnings] == ["QueueNotFound"]
    assert default.refusal is None
    assert default.warnings == []


def test_a_queue_closing_a_cycle_of_parents_is_refused() -> None:
    _, view = cluster(queue("org"), queue("team", parent="org"))
    assert queue_verdict("leaf", {"parent": "team"}, view).refusal is None
    refusal = queue_verdict("org", {"parent": "team"}, view).refusal
    assert refusal is not None
    assert refusal == "QueueInvalid: its parents would form a cycle (org -> team -> org)"


def test_a_pod_gets_our_scheduler_name_only_when_it_names_none_or_the_default() -> None:
    assert pod_scheduler_name({}, "coscheduler") == "coscheduler"
    assert (
        pod_scheduler_name({"schedulerName": "default-scheduler"}, "coscheduler") == "coscheduler"
    )
    assert pod_scheduler_name({"schedulerName": "volcano"}, "coscheduler") is None
