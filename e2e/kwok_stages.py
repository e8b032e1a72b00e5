"""The pod lifecycle KWOK plays on fake nodes: bound pods run, and may finish.

Why our own pod stages: KWOK v0.7.0's built-in ("fast") pod stages complete a
Job's pod the moment it runs, so a test could never observe a Job running, nor
a gang whose members finish at different times. These stages keep the
built-in behaviour otherwise and add a delay:

1. pod-ready: a pod bound to a managed node and not being deleted becomes
   Running with Ready conditions and a pod IP.
2. pod-complete-annotated: a Running pod with the annotation
   ``COMPLETE_AFTER_ANNOTATION`` (a Go duration such as ``30s``, or an RFC 3339
   time) becomes Succeeded after that delay, whoever owns it.
3. pod-complete-job: a Running pod owned by a Job, without that annotation,
   becomes Succeeded after the cluster's default Job duration.
4. pod-ready-again: a Running pod not being deleted whose ``Ready`` condition went
   False (the node lifecycle controller marks a node's pods not ready when its
   heartbeat is late, as on a loaded machine) is Ready again, as its kubelet would
   make it: what waits for ready pods (Kueue's ``waitForPodsReady``) is not stuck
   on a fake node's missed heartbeat.
5. pod-delete: a pod being deleted loses its finalizers and is removed, as a
   kubelet would confirm: at once by default (whatever its grace period), or,
   with ``grace_periods``, at its ``deletionTimestamp`` (the API server sets it
   to the deletion plus the pod's grace period, in whole seconds), as a kubelet
   whose container ignores SIGTERM would: the benchmark of preemption makes its
   victims take their grace period to go.

Node stages are not given by default, so KWOK keeps its built-in ones
(initialise the node's conditions, keep it Ready, heartbeat its Lease): it
replaces the defaults of a kind only when stages of that kind are configured.
Those built-ins also patch every node's status every 20-45 s (KWOK v0.7.0 picks
its status heartbeat, not the lease-aware one, whenever a Lease duration is
set), which at 5,000 nodes is 150 writes a second. With ``node_lease_seconds``
(many nodes) our own two node stages replace them: node-ready (conditions True
on a new node) and node-heartbeat-slow (the conditions' heartbeat once per
Lease duration; the Lease itself is what keeps the node healthy).
"""

from __future__ import annotations

from typing import Any

import yaml

COMPLETE_AFTER_ANNOTATION = "e2e.coscheduler.dev/complete-after"
"""Pod annotation: how long after Running the fake pod finishes (``5s``, ``1m30s``)."""

_API_VERSION = "kwok.x-k8s.io/v1alpha1"
_ANNOTATION_KEY = f'.metadata.annotations["{COMPLETE_AFTER_ANNOTATION}"]'
_NOT_DELETING = {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"}
_RUNNING = {"key": ".status.phase", "operator": "In", "values": ["Running"]}

_READY_STATUS = """\
{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: ContainersReady
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: PodScheduled
{{ range .spec.readinessGates }}
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: {{ .conditionType | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
{{ end }}
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) \
( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
phase: Running
startTime: {{ $now | Quote }}
"""

_READY_AGAIN_STATUS = """\
{{ $now := Now }}
conditions:
{{ range .status.conditions }}
- type: {{ .type | Quote }}
{{ if or (eq .type "Ready") (eq .type "ContainersReady") }}
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
{{ else }}
  status: {{ .status | Quote }}
  lastTransitionTime: {{ .lastTransitionTime | Quote }}
{{ end }}
{{ end }}
"""
_NOT_READY = {
    "key": '.status.conditions.[] | select( .type == "Ready" ) | .status',
    "operator": "In",
    "values": ["False"],
}

_SUCCEEDED_STATUS = """\
{{ $now := Now }}
{{ $root := . }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  type: Ready
  reason: PodCompleted
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  type: ContainersReady
  reason: PodCompleted
{{ range .status.conditions }}
{{ if and (ne .type "Ready") (ne .type "ContainersReady") }}
- lastTransitionTime: {{ .lastTransitionTime | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type | Quote }}
{{ end }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $root.status.startTime | Quote }}
{{ end }}
phase: Succeeded
"""


_NODE_CONDITIONS = """\
{{ $now := Now }}
conditions:
{{ range NodeConditions }}
- type: {{ .type | Quote }}
  status: {{ .status | Quote }}
  reason: {{ .reason | Quote }}
  message: {{ .message | Quote }}
  lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ or $.metadata.creationTimestamp $now | Quote }}
{{ end }}
phase: Running
"""
_NODE_READY = '.status.conditions.[] | select( .type == "Ready" ) | .status'


def node_stages(heartbeat_seconds: int) -> list[dict[str, Any]]:
    """Our node stages (module docstring): Ready at once, a status heartbeat per period."""
    return [
        _stage(
            "node-ready",
            [{"key": _NODE_READY, "operator": "NotIn", "values": ["True"]}],
            {"statusTemplate": _NODE_CONDITIONS},
            kind="Node",
        ),
        _stage(
            "node-heartbeat-slow",
            [{"key": _NODE_READY, "operator": "In", "values": ["True"]}],
            {"statusTemplate": _NODE_CONDITIONS},
            kind="Node",
            delay={
                "durationMilliseconds": heartbeat_seconds * 1000 // 2,
                "jitterDurationMilliseconds": heartbeat_seconds * 1000,
            },
        ),
    ]


def _stage(
    name: str,
    expressions: list[dict[str, Any]],
    next_: dict[str, Any],
    *,
    kind: str = "Pod",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": _API_VERSION,
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": kind},
            "selector": {"matchExpressions": expressions},
            **extra,
            "next": next_,
        },
    }


def pod_stages(*, job_duration_seconds: float, grace_periods: bool = False) -> list[dict[str, Any]]:
    """The Stage documents described in the module docstring."""
    job_delay_ms = int(job_duration_seconds * 1000)
    deleted_at: dict[str, Any] = {}
    if grace_periods:
        deleted_at["delay"] = {
            "durationMilliseconds": 0,
            "durationFrom": {"expressionFrom": ".metadata.deletionTimestamp"},
        }
    return [
        _stage(
            "pod-ready",
            [_NOT_DELETING, {"key": ".status.podIP", "operator": "DoesNotExist"}],
            {"statusTemplate": _READY_STATUS},
        ),
        _stage(
            "pod-complete-annotated",
            [_NOT_DELETING, _RUNNING, {"key": _ANNOTATION_KEY, "operator": "Exists"}],
            {"statusTemplate": _SUCCEEDED_STATUS},
            delay={"durationMilliseconds": 0, "durationFrom": {"expressionFrom": _ANNOTATION_KEY}},
        ),
        _stage(
            "pod-complete-job",
            [
                _NOT_DELETING,
                _RUNNING,
                {"key": _ANNOTATION_KEY, "operator": "DoesNotExist"},
                {"key": ".metadata.ownerReferences.[].kind", "operator": "In", "values": ["Job"]},
            ],
            {"statusTemplate": _SUCCEEDED_STATUS},
            delay={"durationMilliseconds": job_delay_ms},
        ),
        _stage(
            "pod-ready-again",
            [_NOT_DELETING, _RUNNING, _NOT_READY],
            {"statusTemplate": _READY_AGAIN_STATUS},
        ),
        _stage(
            "pod-delete",
            [{"key": ".metadata.deletionTimestamp", "operator": "Exists"}],
            {"finalizers": {"empty": True}, "delete": True},
            **deleted_at,
        ),
    ]


#: KWOK's workers for node and pod stages and for node Leases when many nodes are asked
#: for (its default is 4 of each).
MANY_NODES_PARALLELISM = 16


def config_yaml(
    *, job_duration_seconds: float, grace_periods: bool = False,
    node_lease_seconds: int | None = None,
) -> str:  # fmt: skip
    """The ``--config`` file for kwok: the pod stages as a YAML stream, and with
    ``node_lease_seconds`` KWOK's own options (Lease duration, more workers)."""
    documents: list[dict[str, Any]] = []
    if node_lease_seconds is not None:
        documents.append({
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokConfiguration",
            "options": {
                "nodeLeaseDurationSeconds": node_lease_seconds,
                "nodeLeaseParallelism": MANY_NODES_PARALLELISM,
                "nodePlayStageParallelism": MANY_NODES_PARALLELISM,
                "podPlayStageParallelism": MANY_NODES_PARALLELISM,
            },
        })  # fmt: skip
        documents += node_stages(node_lease_seconds)
    documents += pod_stages(job_duration_seconds=job_duration_seconds, grace_periods=grace_periods)
    return yaml.safe_dump_all(documents, sort_keys=False)
