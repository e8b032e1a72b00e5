"""Membership by owner: a Job's pods join the group named after it, or wait for the Job."""

from __future__ import annotations

import dataclasses
from typing import Any

from coscheduler.api.adapters.volcano_owners import volcano_owner
from coscheduler.api.owners import GangOwner
from coscheduler.api.pod import PodInfo
from coscheduler.api.reasons import Reason
from coscheduler.core.group import KIND_NATIVE_POD_GROUP, GroupKey
from coscheduler.core.owners import owner_group
from coscheduler.core.scheduler import Scheduler, SchedulerSettings
from tests.builders import job_object, node, pod, pod_object


def owner(name: str, gang: str | None) -> GangOwner:
    read = GangOwner.from_job(job_object(name, gang=gang))
    assert read is not None
    return read


def test_a_job_that_asks_for_a_gang_gives_its_pods_its_group() -> None:
    owners = {"uid-job-train": owner("train", "true")}
    assert owner_group(pod("train-0", owner="train"), owners) == "train"


def test_a_job_that_asks_for_none_leaves_its_pods_alone() -> None:
    owners = {"uid-job-train": owner("train", None)}
    assert owner_group(pod("train-0", owner="train"), owners) is None


def test_an_invalid_annotation_still_holds_the_pods_in_the_jobs_group() -> None:
    owners = {"uid-job-train": owner("train", "lots")}
    assert owner_group(pod("train-0", owner="train"), owners) == "train"


def test_a_pod_whose_job_is_not_known_yet_waits_in_the_jobs_group() -> None:
    assert owner_group(pod("train-0", owner="train"), {}) == "train"


def test_pods_of_other_owner_kinds_are_untouched() -> None:
    assert owner_group(pod("solo"), {}) is None
    raw = pod_object("web-1", owner="web")
    raw["metadata"]["ownerReferences"][0]["kind"] = "ReplicaSet"
    assert owner_group(PodInfo.from_object(raw), {}) is None


def test_under_volcano_s_name_a_replica_set_s_pods_wait_in_the_group_volcano_names() -> None:
    raw = pod_object("web-1", owner="web")
    raw["metadata"]["ownerReferences"][0]["kind"] = "ReplicaSet"
    member = PodInfo.from_object(raw)
    assert member.owner_uid is not None
    group = f"podgroup-{member.owner_uid}"
    assert owner_group(member, {}, volcano=True) == group, "not known yet: it waits"
    metadata: dict[str, Any] = {"namespace": "default", "name": "web", "uid": member.owner_uid}
    metadata["annotations"] = {"scheduling.volcano.sh/group-min-member": "3"}
    replica_set = {
        "metadata": metadata,
        "spec": {"template": {"spec": {"schedulerName": "volcano"}}},
    }
    asks = volcano_owner(replica_set, "ReplicaSet")
    assert asks is not None
    assert asks.spec is not None
    assert (asks.group_name, asks.spec.min_member) == (group, 3)
    assert owner_group(member, {member.owner_uid: asks}, volcano=True) == group
    del metadata["annotations"]
    alone = volcano_owner(replica_set, "ReplicaSet")
    assert alone is not None
    assert owner_group(member, {member.owner_uid: alone}, volcano=True) is None


def test_a_group_label_wins_over_the_owner() -> None:
    member = dataclasses.replace(pod("train-0", owner="train", group="mine"), owner_group="train")
    assert GroupKey.of_pod(member) == GroupKey("default", "mine")


def test_a_job_annotated_for_us_wins_over_the_native_group_its_controller_gave_it() -> None:
    """1.37's ``WorkloadWithJob`` puts every Job's pods in a native group (basic unless
    the Job asked for a gang); the annotation was written for us, so our Job gang wins."""
    member = dataclasses.replace(
        pod("train-0", owner="train"), owner_group="train", scheduling_group="train-pg"
    )
    assert GroupKey.of_pod(member) == GroupKey("default", "train")


def test_a_job_not_annotated_for_us_keeps_its_native_group() -> None:
    member = dataclasses.replace(pod("train-0", owner="train"), scheduling_group="train-pg")
    assert GroupKey.of_pod(member) == GroupKey("default", "train-pg", KIND_NATIVE_POD_GROUP)


def test_a_member_by_owner_waits_for_its_group_even_when_lone_pods_go_ahead() -> None:
    """``lone_when_group_missing`` places labelled pods of a missing group alone; never a Job's."""
    scheduler = Scheduler(lambda: 0.0, SchedulerSettings(lone_when_group_missing=True))
    scheduler.upsert_node(node("n1", cpu="8"))
    member = dataclasses.replace(pod("train-0", owner="train"), owner_group="train")
    scheduler.upsert_pod(member)
    decision = scheduler.next_decision()
    assert decision is not None
    assert decision.group == GroupKey("default", "train")
    assert not decision.bindings
    assert decision.status.reason is Reason.GROUP_NOT_FOUND
