"""Kopf's part on the real control plane: its handlers write our PodGroups' status.

Each test runs ``coscheduler run`` for its own namespace, as every e2e test
does; Kopf runs inside it (controller/embedded.py), a handler following each
namespace read (controller/handlers.py).
"""

from __future__ import annotations

import base64
import shutil
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from coscheduler.controller.admission import OPT_IN_LABEL
from e2e import pki
from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import StartScheduler
from e2e.tests.helpers import podgroup_path, status_of, wait_bound, wait_group
from e2e.waiting import wait_for

pytestmark = [pytest.mark.e2e]


def phase_is(phase: str) -> Callable[[Json], bool]:
    return lambda group: status_of(group).get("phase") == phase


def test_a_gangs_phases_are_written_by_kopfs_handler(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    process = start_scheduler()
    w.create_podgroup(cluster.api, namespace, "train", 2)
    w.create_job(cluster.api, namespace, "train", parallelism=2, pool=pool, cpu="2", group="train")
    wait_group(cluster, namespace, "train", phase_is("Pending"), "Pending: no node yet")

    add_nodes(1, cpu="4")

    wait_group(cluster, namespace, "train", phase_is("Running"), "Running")
    group = wait_group(cluster, namespace, "train", phase_is("Finished"), "Finished", timeout=60)
    assert group["metadata"].get("finalizers") is None, "Kopf put nothing on the object"
    followed = cluster.api.get(f"/api/v1/namespaces/{namespace}")
    assert followed["metadata"].get("finalizers") is None, "nor on the namespace it follows"
    for written in (group, followed):
        annotations = written["metadata"].get("annotations", {}) or {}
        assert not any(key.startswith("kopf.zalando.org") for key in annotations)
    log = process.log()
    assert '"logger": "kopf' in log, "Kopf ran in the process, its log in our JSON lines"
    assert "Traceback" not in log


def test_a_namespace_made_later_is_followed_until_it_is_deleted(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
) -> None:
    later = f"{namespace}-later"
    process = start_scheduler("--namespace", later)

    def made_and_written() -> None:
        cluster.api.create("/api/v1/namespaces", {"metadata": {"name": later}})
        w.create_podgroup(cluster.api, later, "idle", 2)
        wait_group(cluster, later, "idle", phase_is("Pending"), "Pending, in a namespace made now")

    try:
        made_and_written()
        cluster.api.delete(f"/api/v1/namespaces/{later}")
        wait_for(
            lambda: cluster.api.get_or_none(f"/api/v1/namespaces/{later}"),
            lambda gone: gone is None,
            describe="the namespace deleted, nothing of ours holding it",
            timeout=60,
        )
        made_and_written()  # again: its handler ended with it, a new one follows
    finally:
        cluster.api.delete(f"/api/v1/namespaces/{later}")
    assert "Traceback" not in process.log()


def test_after_a_leader_change_the_new_leaders_handlers_write(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="4")
    lease = [  # in the test's namespace, expiring in 4 s
        *("--lease-namespace", namespace, "--lease-duration-seconds", "4"),
        *("--renew-deadline-seconds", "3", "--retry-period-seconds", "1"),
    ]
    first = start_scheduler(*lease, "--identity", "first", leader_elect=True)
    second = start_scheduler(*lease, "--identity", "second", leader_elect=True, wait_ready=False)
    w.create_podgroup(cluster.api, namespace, "before", 1)
    w.create_job(
        cluster.api, namespace, "before", parallelism=1, pool=pool, cpu="1", group="before"
    )
    wait_group(cluster, namespace, "before", phase_is("Finished"), "Finished", timeout=60)

    assert '"event": "scheduling"' not in second.log(), "the standby writes nothing"
    first.kill()
    second.wait_ready(timeout=30)
    w.create_podgroup(cluster.api, namespace, "after", 1)
    w.create_job(cluster.api, namespace, "after", parallelism=1, pool=pool, cpu="1", group="after")

    wait_group(cluster, namespace, "after", phase_is("Finished"), "Finished", timeout=60)


def test_podgroups_of_a_namespace_deleted_while_coscheduler_is_down_go_with_it(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
) -> None:
    process = start_scheduler()
    w.create_podgroup(cluster.api, namespace, "idle", 2)
    wait_group(cluster, namespace, "idle", phase_is("Pending"), "Pending")
    process.stop()

    cluster.api.delete(f"/api/v1/namespaces/{namespace}")

    wait_for(
        lambda: cluster.api.get_or_none(podgroup_path(namespace, "idle")),
        lambda group: group is None,
        describe="the PodGroup gone with its namespace",
        timeout=60,
    )


# -- admission ----------------------------------------------------------------------------------


@dataclass
class Webhooks:
    """coscheduler's webhook flags, and the configurations the chart would make (by
    ``url`` here: the API server reaches the process on the loopback)."""

    flags: list[str]


@pytest.fixture
def webhooks(cluster: Cluster, namespace: str, tmp_path: Path) -> Iterator[Webhooks]:
    material = pki.Pki(cluster.pki_dir)
    certs = tmp_path / "webhook"
    certs.mkdir()
    shutil.copy(material.serving_cert, certs / "tls.crt")  # 127.0.0.1 is among its names
    shutil.copy(material.serving_key, certs / "tls.key")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ca_bundle = base64.b64encode(material.ca_cert.read_bytes()).decode()

    def hook(name: str, path: str) -> Json:
        return {
            "name": f"{name}.scheduling.sigs.k8s.io",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Ignore",
            "timeoutSeconds": 2,
            "clientConfig": {"url": f"https://127.0.0.1:{port}/{path}", "caBundle": ca_bundle},
        }

    only_here = {"kubernetes.io/metadata.name": namespace}  # other tests' namespaces untouched
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": f"coscheduler-{namespace}"},
        "webhooks": [
            {
                **hook("podgroup-validate", "podgroup-validate"),
                "namespaceSelector": {"matchLabels": only_here},
                "rules": [_rule("scheduling.sigs.k8s.io", "v1alpha1", "podgroups")],
            },
            {
                **hook("queue-validate", "queue-validate"),
                "rules": [_rule("scheduling.sigs.k8s.io", "v1alpha1", "queues", cluster=True)],
                "objectSelector": {"matchLabels": {"test": namespace}},
            },
        ],
    }
    mutating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": f"coscheduler-{namespace}"},
        "webhooks": [
            {
                **hook("pod-scheduler-name", "pod-scheduler-name"),
                "reinvocationPolicy": "Never",
                "rules": [{**_rule("", "v1", "pods"), "operations": ["CREATE"]}],
                "namespaceSelector": {
                    "matchLabels": {**only_here, OPT_IN_LABEL: "enabled"},
                },
                "matchConditions": [
                    {
                        "name": "names-no-scheduler",
                        "expression": "!has(object.spec.schedulerName) || "
                        "object.spec.schedulerName == 'default-scheduler'",
                    }
                ],
            }
        ],
    }
    admission = "/apis/admissionregistration.k8s.io/v1"
    cluster.api.create(f"{admission}/validatingwebhookconfigurations", validating)
    cluster.api.create(f"{admission}/mutatingwebhookconfigurations", mutating)
    try:
        yield Webhooks(
            [
                "--webhook-address",
                "127.0.0.1",
                "--webhook-port",
                str(port),
                "--webhook-cert-dir",
                str(certs),
            ]
        )
    finally:
        name = f"coscheduler-{namespace}"
        cluster.api.delete(f"{admission}/validatingwebhookconfigurations/{name}")
        cluster.api.delete(f"{admission}/mutatingwebhookconfigurations/{name}")


def _rule(group: str, version: str, plural: str, *, cluster: bool = False) -> Json:
    return {
        "apiGroups": [group],
        "apiVersions": [version],
        "operations": ["CREATE", "UPDATE"],
        "resources": [plural],
        "scope": "Cluster" if cluster else "Namespaced",
    }


def _opt_in(cluster: Cluster, namespace: str) -> None:
    cluster.api.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}",
        {"metadata": {"labels": {OPT_IN_LABEL: "enabled"}}},
        content_type="application/merge-patch+json",
    )


def _create_pod_naming_no_scheduler(
    cluster: Cluster, namespace: str, name: str, *, pool: str, group: str | None = None
) -> Json:
    body = w.pod(name, pool=pool, cpu="1", group=group)
    del body["spec"]["schedulerName"]
    return cluster.api.create(f"/api/v1/namespaces/{namespace}/pods", body)


def _serving(cluster: Cluster, namespace: str) -> None:
    """Until the webhook answers (Kopf's server starts after the first pass): a refused
    PodGroup of a Closed queue tells it."""
    wait_for(
        lambda: cluster.api.raw(
            "POST",
            f"/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/{namespace}/podgroups?dryRun=All",
            w.podgroup("probe", 1, queue=f"closed-{namespace}"),
        ),
        lambda answer: answer[0] == 400,
        describe="the webhook answering",
        timeout=60,
    )


def test_a_bad_podgroup_and_a_bad_queue_are_refused_at_apply_with_the_reason(
    cluster: Cluster,
    namespace: str,
    webhooks: Webhooks,
    start_scheduler: StartScheduler,
) -> None:
    closed = f"closed-{namespace}"
    w.create_queue(cluster.api, closed, state="Closed")
    start_scheduler(*webhooks.flags)
    _serving(cluster, namespace)

    status, text = cluster.api.raw(
        "POST",
        f"/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/{namespace}/podgroups",
        w.podgroup("late", 2, queue=closed),
    )
    assert status == 400
    assert "QueueClosed: " in text

    parent = f"org-{namespace}"
    w.create_queue(cluster.api, parent)
    child = w.queue(f"team-{namespace}", parent=parent)
    cluster.api.create("/apis/scheduling.sigs.k8s.io/v1alpha1/queues", child)
    cycle = w.queue(parent, parent=f"team-{namespace}")
    cycle["metadata"]["labels"] = {"test": namespace}
    current = cluster.api.get(f"/apis/scheduling.sigs.k8s.io/v1alpha1/queues/{parent}")
    cycle["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    # Judged against the read model, which sees the child a moment after it is made.
    status, text = wait_for(
        lambda: cluster.api.raw(
            "PUT", f"/apis/scheduling.sigs.k8s.io/v1alpha1/queues/{parent}?dryRun=All", cycle
        ),
        lambda answer: answer[0] != 200,
        describe="the cycle refused",
    )
    assert status == 400
    assert "QueueInvalid: " in text
    for name in (closed, parent, f"team-{namespace}"):
        cluster.api.delete(f"/apis/scheduling.sigs.k8s.io/v1alpha1/queues/{name}")


def test_an_opted_in_namespaces_pods_naming_no_scheduler_are_placed_whole(
    cluster: Cluster,
    namespace: str,
    pool: str,
    webhooks: Webhooks,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    _opt_in(cluster, namespace)
    add_nodes(1, cpu="4")
    w.create_queue(cluster.api, f"closed-{namespace}", state="Closed")
    start_scheduler(*webhooks.flags)
    _serving(cluster, namespace)
    w.create_podgroup(cluster.api, namespace, "moved", 2)
    for index in range(2):
        created = _create_pod_naming_no_scheduler(
            cluster, namespace, f"moved-{index}", pool=pool, group="moved"
        )
        assert created["spec"]["schedulerName"] == "coscheduler"

    wait_bound(cluster, namespace, 2, "the gang placed whole by coscheduler")
    cluster.api.delete(f"/apis/scheduling.sigs.k8s.io/v1alpha1/queues/closed-{namespace}")


def test_with_coscheduler_stopped_pods_are_still_created(
    cluster: Cluster,
    namespace: str,
    pool: str,
    webhooks: Webhooks,
    start_scheduler: StartScheduler,
) -> None:
    _opt_in(cluster, namespace)
    start_scheduler(*webhooks.flags).stop()

    created = _create_pod_naming_no_scheduler(cluster, namespace, "alone", pool=pool)

    assert created["spec"]["schedulerName"] == "default-scheduler", "admitted unchanged"
