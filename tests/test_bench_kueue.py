"""The Kueue peer's translation (tenants and gangs into Kueue's objects), its webhook
registration at loopback, and the admission-to-bound figure, without a cluster."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import yaml

from bench import admission, submit
from bench.kueue_peer import DEFAULT_QUEUE, POD_GROUP_COUNT, POD_GROUP_LABEL, KueuePeer
from bench.observe import PodRecord
from bench.peers import Gang, Share, make_peer
from e2e import kueue

MANIFESTS = """\
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mutating-webhook-configuration}
webhooks:
- name: mjob.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate-batch-v1-job}}
  rules: [{apiGroups: [batch], apiVersions: [v1], operations: [CREATE], resources: [jobs]}]
- name: mpod.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
- name: mrayjob.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate-ray}}
  rules: [{apiGroups: [ray.io], apiVersions: [v1], operations: [CREATE], resources: [rayjobs]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validating-webhook-configuration}
webhooks:
- name: vclusterqueue.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-kueue-x-k8s-io-v1beta2-clusterqueue}
  rules:
  - {apiGroups: [kueue.x-k8s.io], apiVersions: [v1beta2], operations: [CREATE], resources: [clusterqueues]}
"""  # noqa: E501


def test_only_the_enabled_integrations_webhooks_are_registered_at_loopback(tmp_path: Path) -> None:
    manifests = tmp_path / "webhooks.yaml"
    manifests.write_text(MANIFESTS)
    mutating, validating = kueue.webhook_configurations(
        manifests, b"CA", 9443, ("batch/job", "pod")
    )
    assert mutating["metadata"]["name"] == kueue.MUTATING
    assert [w["name"] for w in mutating["webhooks"]] == ["mjob.kb.io", "mpod.kb.io"]
    job, pod = mutating["webhooks"]
    assert job["clientConfig"] == {
        "url": "https://127.0.0.1:9443/mutate-batch-v1-job",
        "caBundle": base64.b64encode(b"CA").decode(),
    }
    # The pod webhook leaves the system namespaces alone, as upstream's kustomization does.
    [expression] = pod["namespaceSelector"]["matchExpressions"]
    assert expression["operator"] == "NotIn"
    assert "kube-system" in expression["values"]
    assert "namespaceSelector" not in job
    assert [w["name"] for w in validating["webhooks"]] == ["vclusterqueue.kb.io"]


def test_the_configuration_is_kueues_documented_all_or_nothing() -> None:
    config = kueue.KueueSettings().configuration(
        webhook_port=1, probe_port=2, cert_dir=Path("/certs")
    )
    assert config["waitForPodsReady"]["blockAdmission"] is True
    assert config["webhook"] == {"host": "127.0.0.1", "port": 1, "certDir": "/certs"}
    assert config["internalCertManagement"] == {"enable": False}
    assert config["manageJobsWithoutQueueName"] is False
    assert "fairSharing" in config
    nonblocking = make_peer("kueue-nonblocking")
    assert isinstance(nonblocking, KueuePeer)
    assert type(nonblocking).settings.block_admission is False


def test_tenants_become_cluster_queues_in_a_cohort_and_local_queues() -> None:
    peer = make_peer("kueue")
    shares = [
        Share("team-a", "team-a", weight=1, min_cpu=40, max_cpu=160),
        Share("team-b", "team-b", weight=3, min_cpu=120, max_cpu=160),
    ]
    objects = peer.share_objects(shares)
    kinds = [(body["kind"], body["metadata"]["name"]) for _, body in objects]
    assert kinds == [
        ("ClusterQueue", "team-a"), ("LocalQueue", "team-a"),
        ("ClusterQueue", "team-b"), ("LocalQueue", "team-b"),
    ]  # fmt: skip
    queue = objects[0][1]["spec"]
    assert queue["cohortName"] == "bench"
    assert queue["fairSharing"] == {"weight": "1"}
    assert queue["stopPolicy"] == "Hold", "released when the peer starts"
    cpu, memory = queue["resourceGroups"][0]["flavors"][0]["resources"]
    assert cpu == {"name": "cpu", "nominalQuota": "40", "borrowingLimit": "120"}
    assert memory["nominalQuota"] == str(40 * 4 * 2**30)
    assert objects[1][0] == "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues"
    assert objects[1][1]["spec"] == {"clusterQueue": "team-a"}


def test_a_gang_is_a_job_in_a_local_queue_or_a_pod_group() -> None:
    peer = make_peer("kueue")
    job_gang = Gang("j1", 4, 4, job=True, queue="team-a", namespace="team-a")
    job = submit.job_manifest(peer, job_gang)
    assert job["metadata"]["labels"][kueue.KUEUE_QUEUE_LABEL] == "team-a"
    assert kueue.KUEUE_QUEUE_LABEL not in job["spec"]["template"]["metadata"]["labels"]
    pod = submit.pod_manifest(peer, Gang("g8", 8, 8), 0)
    labels = pod["metadata"]["labels"]
    assert labels[kueue.KUEUE_QUEUE_LABEL] == DEFAULT_QUEUE
    assert labels[POD_GROUP_LABEL] == "g8"
    assert pod["metadata"]["annotations"][POD_GROUP_COUNT] == "8"
    lone = submit.pod_manifest(peer, Gang("one", 1, 1), 0)
    assert POD_GROUP_LABEL not in lone["metadata"]["labels"]


def _record(name: str, gang: str, seen: float, bound: float | None) -> PodRecord:
    return PodRecord(name, gang, 1.0, 1.0, seen=seen, bound=bound)


def test_admission_to_bound_starts_at_the_first_pod_for_kueue_and_the_first_bind_else() -> None:
    gang = Gang("j", 2, 2, job=True)
    pods = [_record("j-0", "j", seen=10.0, bound=12.0), _record("j-1", "j", seen=10.5, bound=15.0)]
    kueue_spans = admission.admission_to_bound(pods, [gang], admits_by_creating_pods=True)
    ours_spans = admission.admission_to_bound(pods, [gang], admits_by_creating_pods=False)
    assert kueue_spans == {"j": 5.0}
    assert ours_spans == {"j": 3.0}
    figures = admission.admission_figures(pods, [gang], admits_by_creating_pods=True)
    assert figures["gangs"] == 1
    assert figures["max_s"] == 5.0
    # A gang never whole has no span.
    half = [_record("h-0", "h", seen=1.0, bound=2.0), _record("h-1", "h", seen=1.0, bound=None)]
    assert admission.admission_to_bound(half, [Gang("h", 2, 2)], admits_by_creating_pods=True) == {}


def test_cluster_queue_without_cohort_has_no_borrowing() -> None:
    body = kueue.cluster_queue("q", cpu=8, memory=2**30, preemption={"withinClusterQueue": "x"})
    assert "cohortName" not in body["spec"]
    resources = body["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert all("borrowingLimit" not in r for r in resources)
    assert yaml.safe_load(yaml.safe_dump(body)) == body


def test_pods_evicted_are_those_deleted_after_binding_before_finishing() -> None:
    evicted = PodRecord("e", "g", 1.0, 1.0, bound=1.0, terminating=5.0)
    finished = PodRecord("f", "g", 1.0, 1.0, bound=1.0, finished=3.0, deleted=9.0)
    pending = PodRecord("p", "g", 1.0, 1.0, deleted=2.0)
    assert admission.pods_evicted([evicted, finished, pending]) == 1


def test_the_report_keeps_a_rerun_that_passed_over_one_that_failed(tmp_path: Path) -> None:
    from bench import kueue_report

    base = {"workload": "contention", "label": "17 Jobs", "regime": "high", "params": {},
            "cost": {"cpu_s": 1.5}}  # fmt: skip
    failed = {**base, "peer": "kueue", "ok": False, "failures": ["probe"], "figures": {}}
    passed = {**base, "peer": "kueue", "ok": True, "failures": [],
              "figures": {"makespan_s": 90.0, "pods_evicted": 2,
                          "admission_to_bound": {"p50_s": 1.0, "p99_s": 3.0}}}  # fmt: skip
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"trials": [failed]}))
    second.write_text(json.dumps({"trials": [passed]}))
    text = kueue_report.report([first, second])
    assert "failed" not in text
    assert "| 90.0 s |" in text
    assert "1.00 / 3.00" in text


def test_kueue_with_coscheduler_placing_has_no_pods_ready_wait_and_no_podgroup() -> None:
    peer = make_peer("kueue-coscheduler")
    assert isinstance(peer, KueuePeer)
    config = type(peer).settings.configuration(
        webhook_port=1, probe_port=2, cert_dir=Path("/certs")
    )
    assert "waitForPodsReady" not in config
    gang = Gang("j1", 4, 4, job=True, queue="team-a", namespace="team-a")
    assert peer.group_object(gang) is None
    job = submit.job_manifest(peer, gang)
    assert job["spec"]["template"]["spec"]["schedulerName"] == peer.scheduler_name
    assert job["metadata"]["labels"][kueue.KUEUE_QUEUE_LABEL] == "team-a"
