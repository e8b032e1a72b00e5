"""Kubernetes' native gang API: ``Workload`` of ``scheduling.k8s.io/v1alpha1`` (Kubernetes 1.35).

Served when the API server runs with the ``GenericWorkload`` feature gate and
``--runtime-config=scheduling.k8s.io/v1alpha1=true``. The 1.35 shape (from
``k8s.io/api/scheduling/v1alpha1/types.go`` of v0.35.4):

- ``spec.podGroups[]`` (at most 8, immutable): ``name`` (a DNS label) and
  ``policy``, exactly one of ``basic: {}`` (schedule each pod on its own) or
  ``gang: {minCount}`` (all or nothing, ``minCount`` positive);
- ``spec.controllerRef`` (optional): a link back for tools, not read here;
- no ``status``: there is nothing of ours to write on a Workload in 1.35.

Its gangs draw from the queue its label ``scheduling.sigs.k8s.io/queue``
names (``default`` without it), as a pod without a group does.

A pod joins through ``spec.workloadRef {name, podGroup, podGroupReplicaKey}``
(:mod:`coscheduler.api.workload_ref`). Each (Workload, podGroup, replica key)
of a ``gang`` podGroup is one group of the internal model, with
``minMember = minCount``; a ``basic`` podGroup's pods are lone pods.

The API is reshaped in each release: 1.36 serves ``v1alpha2`` (pod group
*templates*, a separate PodGroup object with a status, ``schedulingGroup`` on
the pod) and 1.37 is to serve ``v1beta1``. Discovery at start decides
(:func:`choose_version`): only ``v1alpha1`` is read; a cluster serving the
Workload API only in another version is refused with a log line, never read
as if it were 1.35's, and pods naming a Workload then wait.

Nothing is written to a Workload: the verdict is told by events on it (one
gang's transitions each, naming the podGroup and replica) and by each pod's
``PodScheduled`` condition. :class:`WorkloadAdapter` therefore holds a status
in memory only (the status writer sees that the server's form never changes,
so it records the transitions and writes nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from coscheduler.api import validation
from coscheduler.api.adapters import apis
from coscheduler.api.adapters.base import GroupObject, StatusInMemory
from coscheduler.api.podgroup import DEFAULT_QUEUE, ObjectMetadata, PodGroupSpec, PodGroupStatus
from coscheduler.api.queue import QUEUE_LABEL
from coscheduler.api.workload_ref import WorkloadRef

__all__ = [
    "ADAPTER",
    "API",
    "GROUP",
    "PLURAL",
    "Workload",
    "WorkloadAdapter",
    "choose_version",
    "gang_object",
    "read_workload",
]

API: Final = apis.WORKLOAD
GROUP: Final = API.group
PLURAL: Final = API.plural
#: The one version read: Kubernetes 1.35's.
VERSION: Final = API.version


class _Wire(BaseModel):
    # An alpha API: fields added within v1alpha1 are ignored, not refused.
    model_config = ConfigDict(defer_build=True, populate_by_name=True, extra="ignore", frozen=True)


class _Gang(_Wire):
    min_count: int = Field(alias="minCount", ge=1)


class _Policy(_Wire):
    # A policy kind this version does not define must be refused, not read as basic.
    model_config = ConfigDict(defer_build=True, populate_by_name=True, extra="allow", frozen=True)

    basic: dict[str, Any] | None = None
    gang: _Gang | None = None


class _PodGroup(_Wire):
    name: str = Field(min_length=1)
    policy: _Policy


class _Spec(_Wire):
    pod_groups: list[_PodGroup] = Field(alias="podGroups", min_length=1)


class _Object(_Wire):
    metadata: dict[str, Any]
    spec: _Spec


@dataclass(frozen=True, slots=True)
class Workload(ObjectMetadata):
    """A Workload as coscheduler reads it: each podGroup's ``minCount``, or None for ``basic``."""

    metadata: Mapping[str, Any]
    pod_groups: Mapping[str, int | None]
    #: The queue its gangs draw from.
    queue: str


def read_workload(raw: Mapping[str, Any]) -> Workload:
    """The Workload's podGroups and policies; raises ``ValueError`` naming what cannot be read."""
    try:
        wire = _Object.model_validate(raw)
    except ValidationError as error:
        raise ValueError("; ".join(validation.problems(error, with_input=False))) from None
    pod_groups: dict[str, int | None] = {}
    for group in wire.spec.pod_groups:
        policy = group.policy
        where = f"spec.podGroups[{group.name}].policy"
        unknown = sorted(policy.model_extra or ())
        if unknown:
            raise ValueError(f"{where}: {', '.join(unknown)} is not a policy of {API.api_version}")
        if (policy.basic is None) == (policy.gang is None):
            raise ValueError(f"{where}: exactly one of basic and gang must be given")
        if group.name in pod_groups:
            raise ValueError(f"spec.podGroups: {group.name!r} is given twice")
        pod_groups[group.name] = policy.gang.min_count if policy.gang is not None else None
    labels = wire.metadata.get("labels") or {}
    queue = labels.get(QUEUE_LABEL) if isinstance(labels, Mapping) else None
    if queue is not None and not isinstance(queue, str):
        raise ValueError(f"metadata.labels.{QUEUE_LABEL} must be a string, got {queue!r}")
    return Workload(wire.metadata, pod_groups, queue or DEFAULT_QUEUE)


#: Which version to read, from the versions discovery lists (with the names: read at start).
choose_version: Final = apis.choose_workload_version


def gang_object(workload: Workload, ref: WorkloadRef) -> GroupObject | None:
    """The group of one gang of ``workload``; None when its podGroup is basic or not there."""
    min_count = workload.pod_groups.get(ref.pod_group)
    if min_count is None:
        return None
    return GroupObject(
        ADAPTER,
        workload.metadata,
        PodGroupSpec(min_member=min_count, queue=workload.queue),
        PodGroupStatus(),
        WorkloadAdapter.NOTHING_STORED,
        within=f"podGroup {ref.pod_group}"
        + (f" replica {ref.replica_key}" if ref.replica_key else ""),
    )


class WorkloadAdapter(StatusInMemory):
    """The status side of a Workload's gangs: held in memory, never written."""

    NOTHING_STORED: ClassVar[str] = "no status in scheduling.k8s.io/v1alpha1"
    api: Final = API
    #: kube-scheduler's gang plugin serves Workloads too: a gang none of whose
    #: pods is ours gets no events from us.
    shared: Final = True


ADAPTER: Final = WorkloadAdapter()
