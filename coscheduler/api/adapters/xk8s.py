"""scheduler-plugins' PodGroup, ``scheduling.x-k8s.io/v1alpha1``.

The Kubeflow training operator, Trainer v2 and the Spark operator create these
and label their pods ``scheduling.x-k8s.io/pod-group``. The shape (from
scheduler-plugins' ``apis/scheduling/v1alpha1`` and its CRD):

- spec: ``minMember`` (int32, minimum 1 but optional), ``minResources`` (a
  ResourceList), ``scheduleTimeoutSeconds`` (int32, optional);
- status: ``phase`` (a free string), ``running``, ``succeeded``, ``failed``,
  ``scheduleStartTime``, ``occupiedBy``. No conditions, no ``scheduled`` count.

The phases upstream defines today are Pending, Scheduling, Running, Finished,
Failed and Unknown (PreScheduling and Scheduled, with ``status.scheduled``,
were removed in scheduler-plugins#574). We write only those, with upstream's
meanings, from ours:

=================  ==========================================================
ours               written as
=================  ==========================================================
Pending            Pending: fewer than minMember can be placed
Scheduling         Unknown while the rest cannot be placed ("part of
                   minMember scheduled, the others cannot be"), else Pending
Scheduled          Scheduling: minMember scheduled, fewer running
Running            Running
Finished           Finished
Failed             Failed
Unknown            Unknown
=================  ==========================================================

The older words are still read (PreScheduling as Pending, Scheduled as our
Scheduled), so a status left by an older controller is understood, then
replaced. ``occupiedBy`` is written as upstream's controller writes it: the
members' controlling owners as ``namespace/name``, sorted, comma-separated.
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
    ConditionStatus,
    ConditionType,
    PodGroupPhase,
    PodGroupSpec,
    PodGroupStatus,
    ResourceList,
)
from coscheduler.api.timestamps import rfc3339

__all__ = ["ADAPTER", "API", "GROUP", "XK8sAdapter", "XK8sPhase", "XK8sSpec", "XK8sStatus"]

API: Final = apis.XK8S
GROUP: Final = API.group


class XK8sPhase(StrEnum):
    """The phases scheduler-plugins defines (``PodGroupPhase`` in its Go types)."""

    PENDING = "Pending"
    SCHEDULING = "Scheduling"
    RUNNING = "Running"
    FINISHED = "Finished"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


#: Upstream's word for each of our phases (Scheduling is decided apart: see the module doc).
_WRITTEN: Final[Mapping[PodGroupPhase, XK8sPhase]] = {
    PodGroupPhase.PENDING: XK8sPhase.PENDING,
    PodGroupPhase.SCHEDULING: XK8sPhase.PENDING,
    PodGroupPhase.SCHEDULED: XK8sPhase.SCHEDULING,
    PodGroupPhase.RUNNING: XK8sPhase.RUNNING,
    PodGroupPhase.FINISHED: XK8sPhase.FINISHED,
    PodGroupPhase.FAILED: XK8sPhase.FAILED,
    PodGroupPhase.UNKNOWN: XK8sPhase.UNKNOWN,
}

#: Our phase for each word found in a stored status, the retired ones included.
_READ: Final[Mapping[str, PodGroupPhase]] = {
    "Pending": PodGroupPhase.PENDING,
    "PreScheduling": PodGroupPhase.PENDING,
    "Scheduling": PodGroupPhase.SCHEDULED,
    "Scheduled": PodGroupPhase.SCHEDULED,
    "Running": PodGroupPhase.RUNNING,
    "Finished": PodGroupPhase.FINISHED,
    "Failed": PodGroupPhase.FAILED,
    "Unknown": PodGroupPhase.UNKNOWN,
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


class XK8sSpec(_Wire):
    """Upstream's spec. Every field is optional there, ``minMember`` included."""

    min_member: int | None = None
    min_resources: ResourceList | None = None
    schedule_timeout_seconds: int | None = None

    def ours(self) -> PodGroupSpec:
        """As our spec. A missing or zero minMember asks for no gang: each member
        may go alone, which is minMember 1. A timeout that is not positive is
        upstream's "use the scheduler's default": we have none, so no timeout."""
        timeout = self.schedule_timeout_seconds
        wire = {
            "minMember": max(self.min_member or 0, 1),
            "minResources": self.min_resources or None,
            "scheduleTimeoutSeconds": timeout if timeout is not None and timeout > 0 else None,
        }
        try:
            return PodGroupSpec.model_validate(wire)
        except ValidationError as error:
            # Upstream's schema allows what ours does not (minMember past 100000,
            # negative quantities): name the fields as the user wrote them.
            lines = validation.problems(error, with_input=False)
            raise ValueError("; ".join(f"spec.{line}" for line in lines)) from error


class XK8sStatus(_Wire):
    """Upstream's status, as stored; also the form two stored statuses are compared in."""

    phase: str | None = None
    occupied_by: str | None = None
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    schedule_start_time: datetime.datetime | None = None


class _Object(_Wire):
    metadata: dict[str, Any]
    spec: XK8sSpec = Field(default_factory=XK8sSpec)


def written_phase(status: PodGroupStatus) -> XK8sPhase:
    """Upstream's phase for our status (see the table in the module doc)."""
    if status.phase == PodGroupPhase.SCHEDULING:
        unschedulable = status.condition(ConditionType.UNSCHEDULABLE)
        if unschedulable is not None and unschedulable.status == ConditionStatus.TRUE:
            return XK8sPhase.UNKNOWN
    return _WRITTEN[status.phase]


def occupied_by(members: Sequence[PodInfo]) -> str | None:
    """The members' controlling owners, ``namespace/name``, as upstream's controller writes them."""
    owners = sorted({f"{m.namespace}/{m.owner_name}" for m in members if m.owner_name})
    return ",".join(owners) or None


class XK8sAdapter:
    """Translates scheduler-plugins' PodGroup to and from ours."""

    api: Final = API
    #: scheduler-plugins' own scheduler and controller may serve other pods of
    #: the same cluster: a group none of whose members is ours is left to them.
    shared: Final = True

    def parse(self, raw: Mapping[str, Any]) -> GroupObject:
        wire = _Object.model_validate(raw)
        return foreign_group(self, raw, wire.metadata, wire.spec.ours())

    def read_status(self, wire: Mapping[str, Any]) -> PodGroupStatus:
        stored = XK8sStatus.model_validate(wire)
        return PodGroupStatus(
            phase=_READ.get(stored.phase or "", PodGroupPhase.PENDING),
            # The schema sets no minimum; a negative count would read as nonsense.
            running=max(stored.running, 0),
            succeeded=max(stored.succeeded, 0),
            failed=max(stored.failed, 0),
            schedule_start_time=stored.schedule_start_time,
        )

    def stored_form(self, wire: Mapping[str, Any]) -> object:
        try:
            return XK8sStatus.model_validate(wire)
        except ValidationError:
            return None

    def conclude(self, status: PodGroupStatus) -> PodGroupStatus:
        return status

    def render_status(self, status: PodGroupStatus, members: Sequence[PodInfo]) -> dict[str, Any]:
        # Every field is given, a null removing it: a merge patch keeps what it does not name.
        start = status.schedule_start_time
        return {
            "phase": written_phase(status).value,
            "running": status.running,
            "succeeded": status.succeeded,
            "failed": status.failed,
            "scheduleStartTime": rfc3339(start) if start is not None else None,
            "occupiedBy": occupied_by(members),
        }


ADAPTER: Final = XK8sAdapter()
