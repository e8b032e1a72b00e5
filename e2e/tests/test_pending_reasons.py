"""Every pod of ours left unbound by an attempt says why, and the binding clears it.

The rule, seen from ``kubectl describe pod``: ``PodScheduled=False`` with a
reason and a message, and a ``FailedScheduling`` event, for members of a gang
that does not fit, members beyond ``minMember`` (or of a group already
running) that do not fit, lone pods, and pods whose group is missing or
short of members; ``PodScheduled=True`` once bound.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from e2e import workloads as w
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests.helpers import (
    PROMPT_EVENTS,
    pod_scheduled,
    unbound_names,
    wait_not_scheduled,
    wait_pod_bound,
)
from e2e.waiting import wait_for

pytestmark = pytest.mark.e2e


def test_members_beyond_min_member_and_of_a_running_group_say_why(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="6")
    start_scheduler()
    # minMember 2, four members of 2 cpu, 6 cpu: three are bound, the fourth says why.
    w.create_podgroup(cluster.api, namespace, "elastic", 2)
    for index in range(4):
        w.create_pod(
            cluster.api, namespace, f"elastic-{index}", pool=pool, cpu="2", group="elastic"
        )
    wait_for(
        lambda: unbound_names(cluster, namespace),
        lambda names: len(names) == 1,
        describe="three of four members bound",
    )
    (left,) = unbound_names(cluster, namespace)
    pod = wait_not_scheduled(cluster, namespace, left, "Unschedulable")
    message = pod_scheduled(pod)["message"]
    assert message.startswith(f"0/1 nodes are available for 1 pod of group {namespace}/elastic")
    assert "Insufficient cpu" in message

    add_nodes(1, cpu="2")
    wait_pod_bound(cluster, namespace, left)

    # A new member of a group already running that does not fit says why too.
    w.create_pod(cluster.api, namespace, "elastic-late", pool=pool, cpu="4", group="elastic")
    pod = wait_not_scheduled(cluster, namespace, "elastic-late", "Unschedulable")
    assert "Insufficient cpu" in pod_scheduled(pod)["message"]


def test_lone_pod_that_does_not_fit_says_why_until_bound(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="2")
    start_scheduler()
    w.create_pod(cluster.api, namespace, "lone", pool=pool, cpu="3")
    pod = wait_not_scheduled(cluster, namespace, "lone", "Unschedulable")
    assert pod_scheduled(pod)["message"] == (
        f"0/1 nodes are available for pod {namespace}/lone: 1 Insufficient cpu."
    )
    add_nodes(1, cpu="4")
    wait_pod_bound(cluster, namespace, "lone")


def test_missing_group_and_missing_members_say_what_they_wait_for_then_it_schedules(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="8")
    start_scheduler(*PROMPT_EVENTS)
    w.create_pod(cluster.api, namespace, "team-0", pool=pool, cpu="1", group="team")
    pod = wait_not_scheduled(cluster, namespace, "team-0", "GroupNotFound")
    assert pod_scheduled(pod)["message"].startswith(f"PodGroup {namespace}/team does not exist")

    # Room would not help these pods: they say what they wait for, not Unschedulable.
    w.create_podgroup(cluster.api, namespace, "team", 2)
    pod = wait_not_scheduled(cluster, namespace, "team-0", "NotEnoughMembers")
    assert "waiting for more members of PodGroup" in pod_scheduled(pod)["message"]

    w.create_pod(cluster.api, namespace, "team-1", pool=pool, cpu="1", group="team")
    for name in ("team-0", "team-1"):
        wait_pod_bound(cluster, namespace, name)
