"""Queues in the core: gates, max, borrowing, parents, fair order (unit tests)."""

from __future__ import annotations

from coscheduler.api.pod_topology import LabelRequirement, LabelSelector
from coscheduler.api.quantity import parse_resource_list
from coscheduler.api.queue import QUEUE_LABEL
from coscheduler.api.reasons import Reason
from coscheduler.core import Code, GroupKey, QueuePolicy, Quotas, Scheduler
from tests.builders import Clock, decided, gang, group, node, pod


def queue(name: str, *, nominal: str = "", cap: str = "", **fields: object) -> QueuePolicy:
    """``queue("a", nominal="cpu=8", cap="cpu=12")``."""

    def amounts(text: str) -> dict[str, int]:
        pairs = dict(item.split("=") for item in text.split() if item)
        return parse_resource_list(dict(pairs))

    return QueuePolicy(name, nominal=amounts(nominal), max=amounts(cap), **fields)  # type: ignore[arg-type]


def cluster(*nodes_cpu: str, clock: Clock | None = None) -> Scheduler:
    scheduler = Scheduler(clock or Clock())
    for i, cpu in enumerate(nodes_cpu):
        scheduler.upsert_node(node(f"n{i}", cpu=cpu))
    return scheduler


def submit(scheduler: Scheduler, name: str, size: int, q: str, **fields: object) -> None:
    namespace = str(fields.pop("namespace", "default"))
    scheduler.upsert_group(group(name, size, queue=q, namespace=namespace))
    for member in gang(name, size, namespace=namespace, **fields):
        scheduler.upsert_pod(member)


def test_without_queue_objects_every_group_uses_the_open_default_and_nothing_is_counted() -> None:
    scheduler = cluster("8")
    submit(scheduler, "train", 4, "default")
    submit(scheduler, "waits", 8, "default", created=1)
    assert decided(scheduler).ok
    assert decided(scheduler).status.reason is Reason.NOT_ENOUGH_RESOURCES
    assert scheduler.quotas.usage("default") == {}
    # The first Queue object counts what is already bound and waiting.
    scheduler.upsert_queue(queue("team", nominal="cpu=8", namespaces=frozenset({"default"})))
    assert scheduler.quotas.usage("default")["cpu"] == 4000
    assert scheduler.quotas.report("default").allocated["cpu"] == 4000


def test_a_missing_queue_holds_the_group_until_it_is_created() -> None:
    scheduler = cluster("8")
    submit(scheduler, "train", 2, "research")
    decision = decided(scheduler)
    assert decision.status.code is Code.WAITING
    assert decision.status.reason is Reason.QUEUE_NOT_FOUND
    assert "queue research does not exist" in decision.status.message
    assert scheduler.next_decision() is None
    scheduler.upsert_queue(queue("research", namespaces=frozenset({"default"})))
    assert decided(scheduler).ok


def test_a_closed_queue_admits_nothing_new_and_running_groups_stay() -> None:
    scheduler = cluster("8")
    scheduler.upsert_queue(queue("team-b", namespaces=frozenset({"default"})))
    submit(scheduler, "first", 2, "team-b")
    assert decided(scheduler).ok
    scheduler.upsert_queue(queue("team-b", namespaces=frozenset({"default"}), open=False))
    submit(scheduler, "second", 2, "team-b")
    decision = decided(scheduler)
    assert decision.status.reason is Reason.QUEUE_CLOSED
    assert decision.status.message == "queue team-b is Closed: it admits no new group"
    assert scheduler.quotas.usage("team-b")["cpu"] == 2000
    scheduler.upsert_queue(queue("team-b", namespaces=frozenset({"default"})))
    assert decided(scheduler).ok


def test_a_namespace_outside_the_queue_cannot_spend_its_quota() -> None:
    scheduler = cluster("8")
    scheduler.upsert_queue(queue("team-a", namespaces=frozenset({"team-a"})))
    submit(scheduler, "sneaky", 1, "team-a", namespace="ml-dev")
    decision = decided(scheduler)
    assert decision.status.reason is Reason.QUEUE_NOT_ALLOWED
    assert decision.status.message.startswith("namespace ml-dev may not use queue team-a")
    assert scheduler.quotas.usage("team-a") == {}


def test_a_namespace_selector_admits_by_namespace_labels_and_follows_their_changes() -> None:
    scheduler = cluster("8")
    selector = LabelSelector((LabelRequirement("team", "In", frozenset({"a"})),))
    scheduler.upsert_queue(queue("team-a", selector=selector))
    scheduler.upsert_namespace("ml", {"team": "b"})
    submit(scheduler, "train", 1, "team-a", namespace="ml")
    assert decided(scheduler).status.reason is Reason.QUEUE_NOT_ALLOWED
    scheduler.upsert_namespace("ml", {"team": "a"})
    assert decided(scheduler).ok


def test_a_queue_without_namespaces_admits_none_but_default_admits_all() -> None:
    scheduler = cluster("8")
    scheduler.upsert_queue(queue("locked"))
    scheduler.upsert_queue(queue("default", nominal="cpu=2"))
    submit(scheduler, "a", 1, "locked")
    submit(scheduler, "b", 1, "default", namespace="anywhere")
    reasons = {decided(scheduler).status.reason, decided(scheduler).status.reason}
    assert reasons == {Reason.QUEUE_NOT_ALLOWED, Reason.MIN_MEMBER_SCHEDULED}


def test_max_is_checked_for_the_whole_gang_at_once() -> None:
    scheduler = cluster("16")
    scheduler.upsert_queue(queue("research", cap="cpu=5", namespaces=frozenset({"default"})))
    submit(scheduler, "small", 2, "research", cpu="2")
    assert decided(scheduler).ok
    submit(scheduler, "big", 2, "research", cpu="2")
    decision = decided(scheduler)
    assert decision.status.reason is Reason.QUEUE_MAX_REACHED
    assert (
        decision.status.message == "queue research: cpu 4 of max 5 in use, this group needs 4 more"
    )
    assert decision.bindings == ()
    assert scheduler.quotas.usage("research")["cpu"] == 4000
    # Nothing of the refused gang stays assumed in the snapshot.
    assert all(scheduler.snapshot.node_of(p.uid) is None for p in gang("big", 2))


def test_without_room_and_over_its_max_a_gang_is_told_the_max() -> None:
    # The cluster is full too, but room freeing up would not let it in: the max is the reason.
    scheduler = cluster("4")
    scheduler.upsert_queue(queue("research", cap="cpu=5", namespaces=frozenset({"default"})))
    submit(scheduler, "small", 2, "research", cpu="2")
    assert decided(scheduler).ok
    submit(scheduler, "big", 2, "research", cpu="2")
    decision = decided(scheduler)
    assert decision.status.reason is Reason.QUEUE_MAX_REACHED
    assert "cpu 4 of max 5 in use" in decision.status.message
    # Within its max, a gang without room is told about room.
    scheduler.upsert_queue(queue("research", cap="cpu=8", namespaces=frozenset({"default"})))
    decision = decided(scheduler)
    assert decision.status.reason is Reason.NOT_ENOUGH_RESOURCES


def test_min_resources_count_when_larger_than_the_members() -> None:
    scheduler = cluster("16")
    scheduler.upsert_queue(queue("research", cap="cpu=5", namespaces=frozenset({"default"})))
    policy = group("train", 1, queue="research", min_resources={"cpu": "6"})
    scheduler.upsert_group(policy)
    scheduler.upsert_pod(pod("train-0", group="train", cpu="1"))
    decision = decided(scheduler)
    assert decision.status.reason is Reason.QUEUE_MAX_REACHED
    assert "needs 6 more" in decision.status.message


def test_extra_members_beyond_min_member_are_admitted_one_by_one() -> None:
    scheduler = cluster("16")
    scheduler.upsert_queue(queue("research", cap="cpu=3", namespaces=frozenset({"default"})))
    scheduler.upsert_group(group("elastic", 2, queue="research"))
    for member in gang("elastic", 5):
        scheduler.upsert_pod(member)
    decision = decided(scheduler)
    assert decision.ok
    assert len(decision.bindings) == 3
    assert len(decision.pending) == 2
    assert decision.unplaced is not None
    assert decision.unplaced.reason is Reason.QUEUE_MAX_REACHED


def test_a_parent_max_caps_its_children() -> None:
    scheduler = cluster("16")
    scheduler.upsert_queue(queue("org", cap="cpu=4"))
    scheduler.upsert_queue(queue("a", parent="org", namespaces=frozenset({"default"})))
    scheduler.upsert_queue(queue("b", parent="org", namespaces=frozenset({"default"})))
    submit(scheduler, "one", 3, "a")
    assert decided(scheduler).ok
    submit(scheduler, "two", 2, "b")
    decision = decided(scheduler)
    assert decision.status.reason is Reason.QUEUE_MAX_REACHED
    assert decision.status.message.startswith("queue org (parent of queue b): cpu 3 of max 4")


def test_idle_capacity_is_borrowed_unless_a_queue_under_nominal_waits_for_it() -> None:
    scheduler = cluster("10")
    scheduler.upsert_queue(queue("a", nominal="cpu=8", namespaces=frozenset({"default"})))
    scheduler.upsert_queue(queue("b", namespaces=frozenset({"default"})))
    submit(scheduler, "b-first", 4, "b")
    assert decided(scheduler).ok  # nobody claims the idle capacity: work-conserving
    submit(scheduler, "a-big", 8, "a")
    assert decided(scheduler).status.reason is Reason.NOT_ENOUGH_RESOURCES
    submit(scheduler, "b-second", 2, "b")
    decision = decided(scheduler)
    assert decision.status.reason is Reason.QUEUE_CANNOT_BORROW
    assert decision.status.message == (
        "queue b needs cpu 2 beyond its nominal quota; of cpu 6 idle, cpu 8 is held for "
        "queues under their nominal with groups waiting: a (cpu 8)"
    )


def test_children_borrow_from_idle_siblings_first() -> None:
    scheduler = cluster("20")
    scheduler.upsert_queue(queue("org", nominal="cpu=8"))
    for name in ("a", "b"):
        scheduler.upsert_queue(
            queue(name, nominal="cpu=4", parent="org", namespaces=frozenset({"default"}))
        )
    scheduler.upsert_queue(queue("other", nominal="cpu=12", namespaces=frozenset({"default"})))
    submit(scheduler, "other-wants", 12, "other", cpu="2")  # 24 cpu: never fits, claims 12
    assert decided(scheduler).status.reason is Reason.NOT_ENOUGH_RESOURCES
    submit(scheduler, "a-wide", 6, "a")
    assert decided(scheduler).ok  # 4 of its own and 2 of b's unused nominal, within org's 8
    submit(scheduler, "a-wider", 3, "a")
    assert decided(scheduler).status.reason is Reason.QUEUE_CANNOT_BORROW


def test_groups_cannot_draw_from_a_parent_or_a_broken_tree() -> None:
    scheduler = cluster("8")
    scheduler.upsert_queue(queue("org"))
    scheduler.upsert_queue(queue("a", parent="org", namespaces=frozenset({"default"})))
    scheduler.upsert_queue(queue("x", parent="y", namespaces=frozenset({"default"})))
    scheduler.upsert_queue(queue("y", parent="x", namespaces=frozenset({"default"})))
    scheduler.upsert_queue(queue("orphan", parent="gone", namespaces=frozenset({"default"})))
    submit(scheduler, "on-parent", 1, "org")
    submit(scheduler, "in-cycle", 1, "x")
    submit(scheduler, "orphaned", 1, "orphan")
    messages = {}
    for _ in range(3):
        decision = decided(scheduler)
        assert decision.status.reason is Reason.QUEUE_INVALID
        messages[decision.group.name] = decision.status.message
    assert messages["on-parent"] == (
        "queue org has child queues (a); groups draw from a queue without children"
    )
    assert messages["in-cycle"] == "queue x: its parents form a cycle (x -> y -> x)"
    assert messages["orphaned"] == "queue orphan: its parent queue gone does not exist"


def test_a_lone_pod_draws_from_the_queue_its_label_names() -> None:
    scheduler = cluster("8")
    scheduler.upsert_queue(queue("batch", cap="cpu=1", namespaces=frozenset({"default"})))
    scheduler.upsert_pod(pod("one", labels={QUEUE_LABEL: "batch"}))
    scheduler.upsert_pod(pod("two", labels={QUEUE_LABEL: "batch"}, created=1))
    assert decided(scheduler).ok
    assert decided(scheduler).status.reason is Reason.QUEUE_MAX_REACHED
    assert scheduler.quotas.usage("batch") == {"cpu": 1000, "pods": 1}


def test_moving_a_group_to_another_queue_moves_its_usage() -> None:
    scheduler = cluster("8")
    scheduler.upsert_queue(queue("a", namespaces=frozenset({"default"})))
    scheduler.upsert_queue(queue("b", namespaces=frozenset({"default"})))
    submit(scheduler, "train", 2, "a")
    assert decided(scheduler).ok
    scheduler.upsert_group(group("train", 2, queue="b"))
    assert scheduler.quotas.usage("a") == {}
    assert scheduler.quotas.usage("b")["cpu"] == 2000


def test_finished_pods_give_their_quota_back() -> None:
    scheduler = cluster("8")
    scheduler.upsert_queue(queue("a", cap="cpu=2", namespaces=frozenset({"default"})))
    submit(scheduler, "first", 2, "a")
    first = decided(scheduler)
    for binding in first.bindings:
        scheduler.upsert_pod(pod(binding.name, group="first", node=binding.node))
    submit(scheduler, "second", 2, "a")
    assert decided(scheduler).status.reason is Reason.QUEUE_MAX_REACHED
    for binding in first.bindings:
        name = binding.name
        scheduler.upsert_pod(pod(name, group="first", node=binding.node, phase="Succeeded"))
    assert decided(scheduler).ok


def test_the_queue_furthest_below_its_weighted_share_goes_first() -> None:
    scheduler = cluster("8")
    scheduler.upsert_queue(queue("light", weight=1, namespaces=frozenset({"default"})))
    scheduler.upsert_queue(queue("heavy", weight=3, namespaces=frozenset({"default"})))
    for i in range(8):
        submit(scheduler, f"l{i}", 1, "light", created=i)
        submit(scheduler, f"h{i}", 1, "heavy", created=i)
    placed = {"light": 0, "heavy": 0}
    for _ in range(8):
        decision = decided(scheduler)
        assert decision.ok
        placed["light" if decision.group.name.startswith("l") else "heavy"] += 1
    assert placed == {"light": 2, "heavy": 6}


def test_a_group_that_does_not_fit_never_blocks_other_queues() -> None:
    scheduler = cluster("4")
    scheduler.upsert_queue(queue("a", namespaces=frozenset({"default"})))
    scheduler.upsert_queue(queue("b", namespaces=frozenset({"default"})))
    submit(scheduler, "huge", 8, "a")
    submit(scheduler, "small", 2, "b", created=5)
    outcomes = {decided(scheduler).group: None for _ in range(2)}
    assert GroupKey("default", "small") in outcomes
    assert scheduler.quotas.usage("b")["cpu"] == 2000


def test_a_group_waiting_for_members_claims_no_nominal_of_its_queue() -> None:
    clock = Clock()
    scheduler = cluster("10", clock=clock)
    scheduler.upsert_queue(queue("a", nominal="cpu=8", namespaces=frozenset({"default"})))
    scheduler.upsert_queue(queue("b", namespaces=frozenset({"default"})))
    scheduler.upsert_group(group("a-short", 4, queue="a"))
    for member in gang("a-short", 2):  # 2 of 4 members exist
        scheduler.upsert_pod(member)
    assert scheduler.next_decision() is None  # gathering its members
    clock.advance(1.0)
    assert decided(scheduler).status.reason is Reason.NOT_ENOUGH_MEMBERS
    submit(scheduler, "b-borrows", 8, "b")
    assert decided(scheduler).ok


def test_idle_capacity_goes_to_borrowers_by_weight_up_to_their_max() -> None:
    # 128 cpu: ops is entitled to 32 (max 48); research and product only borrow, 1:3.
    scheduler = cluster(*["16"] * 8)
    everyone = frozenset({"default"})
    scheduler.upsert_queue(queue("ops", nominal="cpu=32", cap="cpu=48", namespaces=everyone))
    scheduler.upsert_queue(queue("research", weight=1, namespaces=everyone))
    scheduler.upsert_queue(queue("product", weight=3, namespaces=everyone))
    for name in ("ops", "research", "product"):
        for i in range(130):
            submit(scheduler, f"{name}-{i}", 1, name, created=i)
    while scheduler.next_decision() is not None:
        pass
    cpu = {
        name: scheduler.quotas.usage(name)["cpu"] // 1000 for name in ("ops", "research", "product")
    }
    # ops: its 32, then borrows like a weight-1 queue until its max; the rest 1:3.
    assert cpu == {"ops": 48, "research": 20, "product": 60}


def test_reclaim_takes_back_only_what_was_borrowed_and_never_below_the_lenders_nominal() -> None:
    quotas = Quotas()
    everyone = frozenset({"default"})
    quotas.upsert_queue(queue("a", nominal="cpu=8", namespaces=everyone))
    quotas.upsert_queue(queue("b", nominal="cpu=4", namespaces=everyone))
    quotas.upsert_queue(queue("c", namespaces=everyone))
    quotas.charge("b", {"cpu": 10_000})  # 6 above its nominal
    quotas.charge("a", {"cpu": 2_000})  # under its nominal
    assert quotas.may_reclaim("a", "b", {"cpu": 6_000})
    assert not quotas.may_reclaim("a", "b", {"cpu": 7_000})  # b would go below its 4
    assert not quotas.may_reclaim("b", "a", {"cpu": 1_000})  # b is over its nominal: no claim
    assert not quotas.may_reclaim("c", "b", {"cpu": 1_000})  # c has no nominal to claim
    assert not quotas.may_reclaim("a", "a", {"cpu": 1_000})
    quotas.charge("a", {"cpu": 6_000})  # a at its nominal: nothing to take back
    assert not quotas.may_reclaim("a", "b", {"cpu": 1_000})


def test_a_queue_that_is_not_reclaimable_keeps_even_what_it_borrowed() -> None:
    quotas = Quotas()
    everyone = frozenset({"default"})
    quotas.upsert_queue(queue("a", nominal="cpu=8", namespaces=everyone))
    quotas.upsert_queue(queue("b", nominal="cpu=4", namespaces=everyone, reclaimable=False))
    quotas.charge("b", {"cpu": 10_000})  # 6 above its nominal
    assert not quotas.may_reclaim("a", "b", {"cpu": 1_000})
