"""Volcano's PodGroup, ``scheduling.volcano.sh/v1beta1``.

Operators configured for Volcano (Spark, MPI, Kubeflow, Ray, Volcano's own
``batch.volcano.sh`` Job) create these and annotate their pods
``scheduling.k8s.io/group-name`` (or ``scheduling.volcano.sh/group-name``),
each pod's task in ``volcano.sh/task-spec``. The shape, from Volcano's
``staging/src/volcano.sh/apis/pkg/apis/scheduling/v1beta1/types.go`` and its
CRD (``crds/volcano-podgroups.yaml``, a copy of upstream's):

- spec: ``minMember`` (0 or more), ``minTaskMember`` (task -> minimum),
  ``minResources``, ``priorityClassName``, ``queue`` (default ``default``),
  ``networkTopology`` (HyperNode tiers), ``subGroupPolicy``;
- status: ``phase`` (Pending, Inqueue, Running, Unknown, Completed),
  ``conditions`` (types ``Unschedulable`` and ``Scheduled``, our own words),
  ``running``, ``succeeded``, ``failed``. The CRD has no ``/status``
  subresource: the status is written on the object itself.

Read as ours: ``minTaskMember`` is ``roles`` (a task of minimum 0 asks
nothing); since a pod has one task, the tasks' minimums together are a floor
on the gang, so ``minMember`` is the larger of the two. ``queue`` names our
Queue of the same name. What has no counterpart is refused, naming the
field: a ``hard`` ``networkTopology`` (HyperNode tiers are not node labels)
and ``subGroupPolicy``; a ``soft`` one is a preference, not honoured.

Volcano's phases, from ours (see :func:`written_phase`): Inqueue means
"the group may have its pods made" (operators in Volcano mode wait for it),
so a group nothing refuses is Inqueue until ``minMember`` is bound; Pending
only while its queue or ``minResources`` keeps it out.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from coscheduler.api import validation
from coscheduler.api.adapters import apis
from coscheduler.api.adapters.base import GroupObject, foreign_group
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import (
    DEFAULT_QUEUE,
    ConditionStatus,
    ConditionType,
    PodGroupCondition,
    PodGroupPhase,
    PodGroupSpec,
    PodGroupStatus,
    ResourceList,
)
from coscheduler.api.reasons import Reason
from coscheduler.api.timestamps import rfc3339

__all__ = ["ADAPTER", "API", "GROUP", "VolcanoAdapter", "VolcanoPhase", "VolcanoStatus"]

API: Final = apis.VOLCANO
GROUP: Final = API.group
#: Volcano's scheduler answers to ``volcano``: run under that name, we stand in for it.
SCHEDULER_NAME: Final = apis.VOLCANO_SCHEDULER


class VolcanoPhase(StrEnum):
    """The phases Volcano defines (``PodGroupPhase`` in its Go types)."""

    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


#: Why a group waits that keeps it out of its queue: Volcano would not enqueue it.
_NOT_ENQUEUED: Final = frozenset(
    {
        Reason.QUEUE_NOT_FOUND,
        Reason.QUEUE_CLOSED,
        Reason.QUEUE_NOT_ALLOWED,
        Reason.QUEUE_INVALID,
        Reason.QUEUE_MAX_REACHED,
        Reason.QUEUE_CANNOT_BORROW,
        Reason.MIN_RESOURCES_UNAVAILABLE,
    }
)

#: Volcano's reason where it has a word for ours (``NotEnoughTasks`` in its Go types).
_THEIR_REASON: Final[Mapping[str, str]] = {Reason.NOT_ENOUGH_MEMBERS: "NotEnoughTasks"}
_OUR_REASON: Final[Mapping[str, str]] = {v: k for k, v in _THEIR_REASON.items()}

#: Our phase for each of theirs found in a stored status.
_READ: Final[Mapping[str, PodGroupPhase]] = {
    "Pending": PodGroupPhase.PENDING,
    "Inqueue": PodGroupPhase.PENDING,
    "Running": PodGroupPhase.RUNNING,
    "Unknown": PodGroupPhase.SCHEDULING,
    "Completed": PodGroupPhase.FINISHED,
}


class _Wire(BaseModel):
    # Another project's API: fields it adds later are ignored, not refused.
    model_config = ConfigDict(
        defer_build=True,
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
    )


class _NetworkTopology(_Wire):
    mode: str = "hard"
    highest_tier_allowed: int | None = None
    highest_tier_name: str | None = None


class VolcanoSpec(_Wire):
    """Volcano's spec, as far as it is read."""

    min_member: int = 0
    min_task_member: dict[str, int] | None = None
    min_resources: ResourceList | None = None
    priority_class_name: str | None = None
    queue: str | None = None
    network_topology: _NetworkTopology | None = None
    sub_group_policy: list[dict[str, Any]] | None = None

    def ours(self) -> PodGroupSpec:
        """As our spec; raises ``ValueError`` naming a field that has no counterpart."""
        if self.network_topology is not None and self.network_topology.mode != "soft":
            raise ValueError(
                "spec.networkTopology: mode hard (HyperNode tiers) is not supported; "
                "keep a gang in one rack or zone with spec.topology of a "
                "scheduling.sigs.k8s.io PodGroup"
            )
        if self.sub_group_policy:
            raise ValueError("spec.subGroupPolicy is not supported")
        tasks = self.min_task_member or {}
        negative = sorted(name for name, minimum in tasks.items() if minimum < 0)
        if negative:
            raise ValueError(f"spec.minTaskMember: {', '.join(negative)} must not be negative")
        asked = {name: minimum for name, minimum in sorted(tasks.items()) if minimum > 0}
        roles = [{"name": name, "minMember": minimum} for name, minimum in asked.items()]
        wire = {
            "minMember": max(self.min_member, sum(asked.values()), 1),
            "minResources": self.min_resources or None,
            "priorityClassName": self.priority_class_name or None,
            "queue": self.queue or DEFAULT_QUEUE,
            "roles": roles or None,
        }
        try:
            return PodGroupSpec.model_validate(wire)
        except ValidationError as error:
            lines = validation.problems(error, with_input=False)
            text = "; ".join(f"spec.{line}" for line in lines)
            raise ValueError(text.replace("spec.roles", "spec.minTaskMember")) from error


class VolcanoCondition(_Wire):
    type: str | None = None
    status: str | None = None
    transition_id: str | None = Field(default=None, alias="transitionID")
    last_transition_time: datetime.datetime | None = None
    reason: str | None = None
    message: str | None = None


class VolcanoStatus(_Wire):
    """Volcano's status, as stored; also the form two stored statuses are compared in."""

    phase: str | None = None
    conditions: tuple[VolcanoCondition, ...] = ()
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class _Object(_Wire):
    metadata: dict[str, Any]
    spec: VolcanoSpec = Field(default_factory=VolcanoSpec)


def written_phase(status: PodGroupStatus) -> VolcanoPhase:
    """Volcano's phase for our status (the module doc says why)."""
    phase = status.phase
    if phase in (PodGroupPhase.RUNNING, PodGroupPhase.SCHEDULED):
        return VolcanoPhase.RUNNING  # theirs: minMember bound, not all done
    if phase == PodGroupPhase.FINISHED:
        return VolcanoPhase.COMPLETED
    unschedulable = status.condition(ConditionType.UNSCHEDULABLE)
    stuck = unschedulable is not None and unschedulable.status == ConditionStatus.TRUE
    if phase == PodGroupPhase.FAILED:
        active = status.pending + status.running + status.unknown
        return VolcanoPhase.UNKNOWN if active else VolcanoPhase.COMPLETED
    if phase == PodGroupPhase.UNKNOWN or (phase == PodGroupPhase.SCHEDULING and stuck):
        return VolcanoPhase.UNKNOWN  # theirs: part running, the rest cannot be placed
    if stuck and unschedulable is not None and unschedulable.reason in _NOT_ENQUEUED:
        return VolcanoPhase.PENDING
    return VolcanoPhase.INQUEUE


def _their_condition(condition: PodGroupCondition) -> dict[str, Any]:
    reason = condition.reason
    when = condition.last_transition_time
    fields = {
        "type": condition.type,
        "status": condition.status.value,
        "transitionID": condition.transition_id,
        "lastTransitionTime": rfc3339(when) if when is not None else None,
        "reason": _THEIR_REASON.get(reason, reason) if reason is not None else None,
        "message": condition.message,
    }
    # Inside a list a merge patch keeps nulls as they are: leave them out.
    return {key: value for key, value in fields.items() if value is not None}


def _our_condition(condition: VolcanoCondition) -> PodGroupCondition | None:
    if condition.type not in (ConditionType.SCHEDULED, ConditionType.UNSCHEDULABLE):
        return None
    try:
        status = ConditionStatus(condition.status or "Unknown")
    except ValueError:
        return None
    reason = condition.reason
    return PodGroupCondition(
        type=condition.type,
        status=status,
        reason=_OUR_REASON.get(reason, reason) if reason is not None else None,
        message=condition.message,
        last_transition_time=condition.last_transition_time,
        transition_id=condition.transition_id,
    )


class VolcanoAdapter:
    """Translates Volcano's PodGroup to and from ours."""

    api: Final = API
    #: Volcano's own scheduler may serve other pods of the cluster: a group none
    #: of whose members is ours is left to it.
    shared: Final = True

    def parse(self, raw: Mapping[str, Any]) -> GroupObject:
        wire = _Object.model_validate(raw)
        return foreign_group(self, raw, wire.metadata, wire.spec.ours())

    def read_status(self, wire: Mapping[str, Any]) -> PodGroupStatus:
        stored = VolcanoStatus.model_validate(wire)
        conditions = [c for c in map(_our_condition, stored.conditions) if c is not None]
        return PodGroupStatus(
            phase=_READ.get(stored.phase or "", PodGroupPhase.PENDING),
            conditions=conditions[:16],
            running=max(stored.running, 0),
            succeeded=max(stored.succeeded, 0),
            failed=max(stored.failed, 0),
        )

    def stored_form(self, wire: Mapping[str, Any]) -> object:
        try:
            return VolcanoStatus.model_validate(wire)
        except ValidationError:
            return None

    def conclude(self, status: PodGroupStatus) -> PodGroupStatus:
        return status

    def render_status(self, status: PodGroupStatus, members: Sequence[PodInfo]) -> dict[str, Any]:
        del members  # Volcano's status names no owners
        # Every field is given: a merge patch keeps what it does not name.
        return {
            "phase": written_phase(status).value,
            "conditions": [_their_condition(c) for c in status.conditions],
            "running": status.running,
            "succeeded": status.succeeded,
            "failed": status.failed,
        }


ADAPTER: Final = VolcanoAdapter()
