"""Kueue's ``Workload`` (``kueue.x-k8s.io/v1beta2``, Kueue v0.17): a job Kueue admitted is one gang.

Kueue decides *whether* a job runs (quota, flavors, admission checks); coscheduler
decides *where*, whole. What Kueue v0.17 writes, and what is read of it here:

- ``spec.podSets[]``: ``name`` and ``count``; ``spec.priority``, the priority Kueue resolved;
- ``status.admission.podSetAssignments[]``: ``name`` and ``count`` (partial admission may
  lower it below the pod set's); the assigned flavors are not read (below);
- ``status.conditions``: ``Admitted`` is True once the quota is reserved and every
  admission check is ready, and only then are the job's pods let go;
- ``metadata.ownerReferences``: its controlling owner (a Job), whose pods are its members.

What Kueue itself does to the pods when it admits, so it is not done again here: it merges
each assigned ResourceFlavor's ``nodeLabels`` into the pod template's ``nodeSelector`` and its
``tolerations`` into the pod's (a Job's template before the Job is unsuspended, a plain pod's
spec before its admission gate is lifted), labels each pod with its pod set
(``kueue.x-k8s.io/podset``), and, where its topology-aware scheduling made an assignment,
holds the pods behind the ``kueue.x-k8s.io/topology`` gate until its ungater writes each
pod's domain into its ``nodeSelector``. A flavor's ``nodeTaints`` are never copied: Kueue
assigns a flavor only to pods that tolerate them. So the pods' own fields say where each may
go, and what is left is the gang: every admitted pod placed in one trial, the pod sets as
roles (each to its admitted count), or none. A gated pod is not placed by anyone, so a gang
behind Kueue's gates waits whole until they are lifted.

Nothing of our status is written through the PodGroup writer (a merge patch would replace
Kueue's conditions): the adapter holds it in memory, the writer tells its transitions by
events on the Workload, and :func:`placement_condition` is the one condition of ours that
``coscheduler.controller.kueue_conditions`` applies to the Workload's status, and to the
status of the batch Job that controls it (:func:`controlling_job`). The Job's copy is what
reaches a MultiKueue manager: Kueue v0.17's MultiKueue copies a worker's Job ``status``
whole onto the manager's Job, and of the worker's Workload only its ``Finished`` condition.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from coscheduler.api import validation
from coscheduler.api.adapters import apis
from coscheduler.api.adapters.base import GroupObject, StatusInMemory
from coscheduler.api.owners import controller_reference
from coscheduler.api.podgroup import (
    DEFAULT_QUEUE,
    ConditionStatus,
    ConditionType,
    ObjectMetadata,
    PodGroupSpec,
    PodGroupStatus,
    Role,
)

__all__ = [
    "ADAPTER",
    "API",
    "CONDITION_TYPE",
    "POD_GROUP_LABEL",
    "POD_SET_LABEL",
    "KueueAdapter",
    "KueueWorkload",
    "controlling_job",
    "gang_object",
    "placement_condition",
    "read_workload",
]

API: Final = apis.KUEUE_WORKLOAD

#: Kueue's label naming a pod's pod set, put on the pods of an admitted job.
POD_SET_LABEL: Final = "kueue.x-k8s.io/podset"
#: Kueue's label naming the group of plain pods; its Workload has the group's name.
POD_GROUP_LABEL: Final = "kueue.x-k8s.io/pod-group-name"
#: The condition coscheduler keeps on an admitted Workload: whether its gang is placed.
CONDITION_TYPE: Final = "GangScheduled"

_ADMITTED: Final = "Admitted"
#: Kueue's CRD caps a condition's message.
_MAX_MESSAGE: Final = 32768


class _Wire(BaseModel):
    # Another project's API: fields it adds are ignored, not refused.
    model_config = ConfigDict(defer_build=True, populate_by_name=True, extra="ignore", frozen=True)


class _PodSet(_Wire):
    name: str = Field(min_length=1)
    count: int = Field(ge=0)


class _Assignment(_Wire):
    name: str = Field(min_length=1)
    count: int | None = Field(default=None, ge=0)


class _Admission(_Wire):
    pod_set_assignments: list[_Assignment] = Field(alias="podSetAssignments", default=[])


class _Condition(_Wire):
    type: str
    status: str


class _Status(_Wire):
    admission: _Admission | None = None
    conditions: list[_Condition] = []


class _Spec(_Wire):
    pod_sets: list[_PodSet] = Field(alias="podSets", min_length=1)
    priority: int | None = None


class _Object(_Wire):
    metadata: dict[str, Any]
    spec: _Spec
    status: _Status = _Status()


@dataclass(frozen=True, slots=True)
class KueueWorkload(ObjectMetadata):
    """A Kueue Workload as coscheduler reads it."""

    metadata: Mapping[str, Any]
    #: Each pod set's admitted count, in Kueue's order; empty while not admitted.
    admitted: Mapping[str, int]
    priority: int | None
    #: Its controlling owner's uid (a Job's), whose pods are its members; None for plain pods.
    owner_uid: str | None


def read_workload(raw: Mapping[str, Any]) -> KueueWorkload:
    """The Workload's admission; raises ``ValueError`` naming what cannot be read."""
    try:
        wire = _Object.model_validate(raw)
    except ValidationError as error:
        raise ValueError("; ".join(validation.problems(error, with_input=False))) from None
    counts = {pod_set.name: pod_set.count for pod_set in wire.spec.pod_sets}
    admitted: dict[str, int] = {}
    is_admitted = any(c.type == _ADMITTED and c.status == "True" for c in wire.status.conditions)
    if is_admitted and wire.status.admission is not None:
        for assignment in wire.status.admission.pod_set_assignments:
            if assignment.name not in counts:
                raise ValueError(
                    f"status.admission.podSetAssignments: {assignment.name!r} "
                    "is no pod set of spec.podSets"
                )
            count = counts[assignment.name] if assignment.count is None else assignment.count
            if count:
                admitted[assignment.name] = count
    return KueueWorkload(wire.metadata, admitted, wire.spec.priority, _controller(wire.metadata))


def _controller(metadata: Mapping[str, Any]) -> str | None:
    owner = controller_reference(metadata)
    uid = None if owner is None else owner.get("uid")
    return uid if isinstance(uid, str) and uid else None


def controlling_job(metadata: Mapping[str, Any]) -> str | None:
    """The name of the ``batch/v1`` Job that controls the Workload; None for other owners."""
    owner = controller_reference(metadata)
    if owner is None or owner.get("apiVersion") != "batch/v1" or owner.get("kind") != "Job":
        return None
    name = owner.get("name")
    return name if isinstance(name, str) and name else None


def gang_object(workload: KueueWorkload, queue: str = DEFAULT_QUEUE) -> GroupObject | None:
    """The gang of an admitted Workload (its pod sets as roles), drawing from our ``queue``
    (``default`` unless ``--kueue-queue`` stacks ours on Kueue's); None while not admitted."""
    if not workload.admitted:
        return None
    roles = (
        [Role(name=name, min_member=count) for name, count in workload.admitted.items()]
        if len(workload.admitted) > 1
        else None
    )
    spec = PodGroupSpec(
        min_member=sum(workload.admitted.values()),
        priority=workload.priority,
        roles=roles,
        queue=queue,
    )
    return GroupObject(
        ADAPTER, workload.metadata, spec, PodGroupStatus(), KueueAdapter.NOTHING_STORED
    )


def placement_condition(status: PodGroupStatus, now: datetime.datetime) -> dict[str, Any] | None:
    """Our condition on the Workload, in Kueue's (``metav1.Condition``) shape; None while
    there is nothing to say yet (the gang was not tried). ``now`` stands for a transition
    time our status did not record."""
    scheduled = status.condition(ConditionType.SCHEDULED)
    failing = status.condition(ConditionType.UNSCHEDULABLE)
    if scheduled is not None and scheduled.status == ConditionStatus.TRUE:
        condition, state, reason = scheduled, "True", "Scheduled"
    elif failing is not None and failing.status == ConditionStatus.TRUE:
        condition, state, reason = failing, "False", failing.reason or "Unschedulable"
    else:
        return None
    when = condition.last_transition_time or now
    return {
        "type": CONDITION_TYPE,
        "status": state,
        "reason": reason,
        "message": (condition.message or "")[:_MAX_MESSAGE],
        "lastTransitionTime": when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


class KueueAdapter(StatusInMemory):
    """The status side of a Kueue Workload's gang: held in memory, told by events and by
    :func:`placement_condition`."""

    NOTHING_STORED: ClassVar[str] = "our status is told by events and one condition"
    api: Final = API
    #: kube-scheduler places Kueue's jobs too: a gang none of whose pods is ours is not ours.
    shared: Final = True


ADAPTER: Final = KueueAdapter()
