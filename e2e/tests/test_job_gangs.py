"""Groups made for you: a Job annotated ``scheduling.sigs.k8s.io/gang`` is placed whole.

The control plane's real Job controller (kube-controller-manager) makes the
pods; they carry no group label. coscheduler makes a PodGroup named after the
Job and owned by it (the real garbage collector deletes it with the Job), and
places the pods as one gang. Each test prints what a person sees (``pytest -s``);
the README quotes it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pytest

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests.helpers import bound, podgroup_path, show
from e2e.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.version_sensitive]

GANG = "scheduling.sigs.k8s.io/gang"


def podgroup_or_none(cluster: Cluster, namespace: str, name: str) -> Json | None:
    return cluster.api.get_or_none(podgroup_path(namespace, name))


def job_events(cluster: Cluster, namespace: str, job: str, reason: str) -> list[Json]:
    path = f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name={job}"
    return [
        e
        for e in cluster.api.get(path)["items"]
        if e["involvedObject"]["kind"] == "Job" and e["reason"] == reason
    ]


def test_an_annotated_job_is_placed_whole_waits_whole_and_its_group_goes_with_it(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="4")  # room for two of the four 3-cpu pods, one per node
    start_scheduler()
    job = w.create_job(
        cluster.api,
        namespace,
        "train",
        parallelism=4,
        pool=pool,
        cpu="3",
        run_seconds=600,
        annotations={GANG: "true"},
    )

    group = wait_for(
        partial(podgroup_or_none, cluster, namespace, "train"),
        describe="the PodGroup made for Job train",
    )
    assert group is not None
    assert group["spec"]["minMember"] == 4, "minMember is the Job's parallelism"
    (owner,) = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Job", "train", job["metadata"]["uid"])
    assert owner["controller"] is True
    wait_for(
        lambda: w.list_pods(cluster.api, namespace),
        lambda pods: len(pods) == 4,
        describe="the Job controller's four pods",
    )
    # The pods carry no group label: their owner decides.
    assert all(
        w.GROUP_LABEL not in p["metadata"]["labels"] for p in w.list_pods(cluster.api, namespace)
    )
    wait_for(
        partial(podgroup_or_none, cluster, namespace, "train"),
        lambda g: any(
            c["type"] == "Unschedulable"
            and c["status"] == "True"
            and c["reason"] == "NotEnoughResources"
            for c in (g or {}).get("status", {}).get("conditions", [])
        ),
        describe="PodGroup train Unschedulable for want of room",
    )
    assert bound(cluster, namespace) == [], "no member placed while the gang cannot fit"
    # `pg`: where Kubernetes serves its own PodGroup (1.36 on), `podgroup` names that one.
    show(cluster, namespace, "get", "pg")
    show(cluster, namespace, "describe", "pg", "train")

    add_nodes(2, cpu="4")  # now every pod has a node
    wait_for(
        partial(podgroup_or_none, cluster, namespace, "train"),
        lambda g: (g or {}).get("status", {}).get("phase") == "Running",
        describe="PodGroup train Running once there is room",
    )
    assert len(bound(cluster, namespace)) == 4
    assert job_events(cluster, namespace, "train", "PodGroupCreated")
    show(cluster, namespace, "get", "podgroup,job,pods", "-o", "wide")
    show(cluster, namespace, "describe", "pg", "train")

    # The garbage collector deletes the PodGroup with its Job. As kubectl deletes it:
    # in the background (a bare DELETE of a batch/v1 Job orphans what it owns).
    cluster.kubectl("delete", "job", "train", "-n", namespace)
    wait_for(
        lambda: podgroup_or_none(cluster, namespace, "train") is None,
        describe="PodGroup train deleted with its Job",
    )


def test_an_invalid_annotation_gets_an_event_saying_what_to_fix_and_loses_no_pod(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="8")
    start_scheduler()
    w.create_job(
        cluster.api,
        namespace,
        "typo",
        parallelism=2,
        completions=4,
        pool=pool,
        cpu="1",
        run_seconds=600,
        annotations={GANG: "yes please"},
    )

    event, *_ = wait_for(
        lambda: job_events(cluster, namespace, "typo", "InvalidGangAnnotation"),
        describe="an InvalidGangAnnotation event on Job typo",
    )
    assert event["type"] == "Warning"
    assert "'yes please'" in event["message"]
    assert '"true"' in event["message"]
    show(cluster, namespace, "describe", "job", "typo")
    # Its pods wait, saying why, rather than run one by one.
    pods = wait_for(
        lambda: w.list_pods(cluster.api, namespace),
        lambda pods: (
            len(pods) == 2
            and all(
                any(
                    c["type"] == "PodScheduled" and "asks for a gang" in c.get("message", "")
                    for c in p["status"].get("conditions", [])
                )
                for p in pods
            )
        ),
        describe="both pods waiting with the Job's problem on their PodScheduled condition",
    )
    assert not any(p["spec"].get("nodeName") for p in pods)
    assert podgroup_or_none(cluster, namespace, "typo") is None

    # Fixed, the same pods go as one gang.
    cluster.api.request(
        "PATCH",
        f"/apis/batch/v1/namespaces/{namespace}/jobs/typo",
        {"metadata": {"annotations": {GANG: "2"}}},
        content_type="application/merge-patch+json",
    )
    wait_for(
        lambda: bound(cluster, namespace),
        lambda placed: len(placed) == 2,
        describe="the two pods placed once the annotation is fixed",
    )
    group = podgroup_or_none(cluster, namespace, "typo")
    assert group is not None
    assert group["spec"]["minMember"] == 2

    # The annotation back to "true" and parallelism raised: minMember follows the Job.
    cluster.api.request(
        "PATCH",
        f"/apis/batch/v1/namespaces/{namespace}/jobs/typo",
        {"metadata": {"annotations": {GANG: "true"}}, "spec": {"parallelism": 3}},
        content_type="application/merge-patch+json",
    )
    wait_for(
        partial(podgroup_or_none, cluster, namespace, "typo"),
        lambda g: (g or {}).get("spec", {}).get("minMember") == 3,
        describe="minMember 3 once parallelism is 3",
    )
    wait_for(
        lambda: bound(cluster, namespace),
        lambda placed: len(placed) == 3,
        describe="the third pod placed with the two already running",
    )


def test_an_unannotated_jobs_pods_are_placed_one_by_one(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="4")  # room for two of the four 2-cpu pods
    start_scheduler()
    w.create_job(
        cluster.api, namespace, "plain", parallelism=4, pool=pool, cpu="2", run_seconds=600
    )

    # The Job controller makes its pods in batches (1, 2, 1): two may be placed before
    # the fourth exists, so the count of those waiting means something only once all exist.
    wait_for(
        lambda: w.list_pods(cluster.api, namespace),
        lambda pods: len(pods) == 4,
        describe="the Job controller's four pods",
    )
    wait_for(
        lambda: bound(cluster, namespace),
        lambda placed: len(placed) == 2,
        describe="two of the Job's pods placed, each alone",
    )
    waiting = [p for p in w.list_pods(cluster.api, namespace) if not p["spec"].get("nodeName")]
    assert len(waiting) == 2
    wait_for(
        lambda: cluster.api.get(
            f"/api/v1/namespaces/{namespace}/pods/{waiting[0]['metadata']['name']}"
        ),
        lambda p: any(
            c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
            for c in p["status"].get("conditions", [])
        ),
        describe="a pod that does not fit is Unschedulable, as a lone pod",
    )
    assert podgroup_or_none(cluster, namespace, "plain") is None
    assert not job_events(cluster, namespace, "plain", "PodGroupCreated")


def test_a_job_made_while_coscheduler_was_down_is_placed_whole_when_it_starts(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    """At start Jobs are listed before pods are queued: no pod of the gang goes alone."""
    add_nodes(1, cpu="8")
    w.create_job(
        cluster.api,
        namespace,
        "early",
        parallelism=3,
        pool=pool,
        cpu="1",
        run_seconds=600,
        annotations={GANG: "3"},
    )
    wait_for(
        lambda: w.list_pods(cluster.api, namespace),
        lambda pods: len(pods) == 3,
        describe="the Job's three pods, with no scheduler running",
    )
    process = start_scheduler()
    group = wait_for(
        partial(podgroup_or_none, cluster, namespace, "early"),
        lambda g: (g or {}).get("status", {}).get("phase") == "Running",
        describe="PodGroup early made and Running",
    )
    assert group is not None
    assert group["spec"]["minMember"] == 3
    assert len(bound(cluster, namespace)) == 3
    process.stop()

    # A second start finds the PodGroup its own (409 on create, then owned): nothing changes.
    again = start_scheduler()
    wait_for(again.log, lambda log: "cluster listed" in log, describe="the second start listed")
    same = podgroup_or_none(cluster, namespace, "early")
    assert same is not None
    assert same["metadata"]["uid"] == group["metadata"]["uid"]
    assert len(job_events(cluster, namespace, "early", "PodGroupCreated")) == 1
