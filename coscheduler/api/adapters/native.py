"""Kubernetes' own PodGroup (``scheduling.k8s.io`` v1beta1 on 1.37, v1alpha2 on 1.36).

The object is read by :mod:`coscheduler.api.native_podgroup`; here it becomes
a :class:`GroupObject` and our status is told back in upstream's words:

- ``gang.minCount`` is ``minMember``; ``basic`` is ``minMember`` 1, so each
  member is placed on its own as room allows (every rule still applies, the
  topology constraint too) while the group keeps its status and its unit of
  disruption;
- ``schedulingConstraints.topology[0].key`` is a required topology level;
- ``priorityClassName``/``priority`` are the group's priority,
  ``preemptionPolicy: Never`` and ``disruptionMode: all`` go to the core's
  policy (:class:`~coscheduler.core.group.GroupPolicy`) through
  :attr:`GroupObject.native`;
- the queue is the PodGroup's ``scheduling.sigs.k8s.io/queue`` label (else
  its Workload's, which the runtime gives it in ``Groups.store``; else
  ``default``).

Status: only ``conditions`` are ours to write. ``PodGroupInitiallyScheduled``
(1.36: ``PodGroupScheduled``) is False with reason ``Unschedulable`` (or
``SchedulerError`` when coscheduler itself failed) and our reason and message
while an attempt fails, True with reason ``Scheduled`` once ``minCount``
members are bound, and never goes back to False (upstream's rule: it is
terminal). ``DisruptionTarget`` (reason ``PreemptionByScheduler``) is set by
the preempter when the group loses members to a preemption. Conditions other
writers put there are kept.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any, Final

from coscheduler.api.adapters import apis
from coscheduler.api.adapters.base import GroupObject
from coscheduler.api.native_podgroup import (
    VERSIONS,
    NativePodGroup,
    initially_scheduled_type,
    read_native_podgroup,
)
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import (
    DEFAULT_QUEUE,
    ConditionStatus,
    ConditionType,
    GroupTopology,
    PodGroupCondition,
    PodGroupSpec,
    PodGroupStatus,
)
from coscheduler.api.reasons import Reason
from coscheduler.api.timestamps import rfc3339

__all__ = [
    "ADAPTERS",
    "DISRUPTION_TARGET",
    "NativeAdapter",
    "disruption_condition",
]

#: The condition a preempted group carries, in upstream's words.
DISRUPTION_TARGET: Final = "DisruptionTarget"
#: Our reasons that mean coscheduler, not the cluster, failed the attempt.
_OUR_ERRORS: Final = frozenset({Reason.INTERNAL_ERROR})
#: Upstream's longest condition message.
_MAX_MESSAGE: Final = 32768


class NativeAdapter:
    """Translates one version of Kubernetes' PodGroup to and from ours."""

    #: kube-scheduler schedules native PodGroups too: a group none of whose
    #: members is ours is never written (never fight kube-scheduler).
    shared: Final = True

    def __init__(self, version: str) -> None:
        self.version = version
        self.api = apis.NATIVE[apis.NATIVE_VERSIONS.index(version)]
        self._initially_scheduled = initially_scheduled_type(version)

    def __repr__(self) -> str:
        return f"NativeAdapter({self.version!r})"

    def parse(self, raw: Mapping[str, Any]) -> GroupObject:
        native = read_native_podgroup(raw, self.version)
        stored = raw.get("status") or {}
        try:
            status = self.read_status(stored)
        except ValueError:
            status = PodGroupStatus()  # someone else's odd status: ours replaces it
        return GroupObject(
            self, native.metadata, spec_of(native), status, self.stored_form(stored), native=native
        )

    def read_status(self, wire: Mapping[str, Any]) -> PodGroupStatus:
        """Upstream's conditions, kept as they are among ours (its own types)."""
        conditions = wire.get("conditions") or []
        if not isinstance(conditions, list):
            raise ValueError("status.conditions is not a list")
        read = []
        for condition in conditions:
            if not isinstance(condition, Mapping):
                raise ValueError("status.conditions holds a non-object")
            read.append(
                PodGroupCondition(
                    type=str(condition.get("type", "")),
                    status=ConditionStatus(condition.get("status", "Unknown")),
                    reason=condition.get("reason"),
                    message=condition.get("message"),
                    last_transition_time=condition.get("lastTransitionTime"),
                )
            )
        return PodGroupStatus(conditions=read[:16])

    def stored_form(self, wire: Mapping[str, Any]) -> object:
        """The conditions, each without its time: equal when they say the same."""
        conditions = wire.get("conditions") or []
        if not isinstance(conditions, list):
            return None
        return tuple(
            sorted(
                (
                    str(c.get("type")),
                    str(c.get("status")),
                    str(c.get("reason")),
                    str(c.get("message")),
                )
                for c in conditions
                if isinstance(c, Mapping)
            )
        )

    def conclude(self, status: PodGroupStatus) -> PodGroupStatus:
        """Our derived status with upstream's placement condition among its others."""
        ours = self._placement(status)
        others = [c for c in status.conditions if c.type != self._initially_scheduled]
        return status.model_copy(update={"conditions": [*others, *ours]})

    def _placement(self, status: PodGroupStatus) -> list[PodGroupCondition]:
        before = status.condition(self._initially_scheduled)
        if before is not None and before.status == ConditionStatus.TRUE:
            return [before]  # terminal, upstream's rule
        scheduled = status.condition(ConditionType.SCHEDULED)
        failing = status.condition(ConditionType.UNSCHEDULABLE)
        if scheduled is not None and scheduled.status == ConditionStatus.TRUE:
            return [
                PodGroupCondition(
                    type=self._initially_scheduled,
                    status=ConditionStatus.TRUE,
                    reason=Reason.SCHEDULED.value,
                    message=scheduled.message,
                    last_transition_time=scheduled.last_transition_time,
                )
            ]
        if failing is not None and failing.status == ConditionStatus.TRUE:
            ours = failing.reason or ""
            upstream = "SchedulerError" if ours in _OUR_ERRORS else Reason.UNSCHEDULABLE.value
            message = f"{ours}: {failing.message or ''}{_in_line(status)}"[:_MAX_MESSAGE]
            same = before is not None and before.status == ConditionStatus.FALSE
            return [
                PodGroupCondition(
                    type=self._initially_scheduled,
                    status=ConditionStatus.FALSE,
                    reason=upstream,
                    message=message,
                    last_transition_time=(
                        before.last_transition_time
                        if same and before is not None
                        else failing.last_transition_time
                    ),
                )
            ]
        return [] if before is None else [before]

    def render_status(self, status: PodGroupStatus, members: Sequence[PodInfo]) -> dict[str, Any]:
        del members
        # Our own condition types (Scheduled, Unschedulable) are not upstream's: left out.
        ours = {ConditionType.SCHEDULED.value, ConditionType.UNSCHEDULABLE.value}
        return {
            "conditions": [
                _wire_condition(condition)
                for condition in status.conditions
                if condition.type not in ours
            ]
        }


def spec_of(native: NativePodGroup) -> PodGroupSpec:
    """The native PodGroup as our spec (what the runtime's policy is made from)."""
    return PodGroupSpec(
        min_member=native.min_count or 1,
        priority_class_name=native.priority_class_name,
        priority=native.priority,
        queue=native.queue or DEFAULT_QUEUE,
        topology=GroupTopology(required=native.topology_key) if native.topology_key else None,
    )


def disruption_condition(message: str, now: datetime.datetime) -> PodGroupCondition:
    """``DisruptionTarget=True``, reason ``PreemptionByScheduler``: the group was preempted."""
    return PodGroupCondition(
        type=DISRUPTION_TARGET,
        status=ConditionStatus.TRUE,
        reason=Reason.PREEMPTION_BY_SCHEDULER.value,
        message=message[:_MAX_MESSAGE],
        last_transition_time=now,
    )


def _in_line(status: PodGroupStatus) -> str:
    """Its place in line, which upstream's status has no field for (our PodGroup's
    ``queuePosition``/``clusterPosition``), told in the condition we write."""
    if status.queue_position is None or status.cluster_position is None:
        return ""
    queue, cluster = status.queue_position, status.cluster_position
    return f" (position {queue} in its queue, {cluster} in the cluster)"


def _wire_condition(condition: PodGroupCondition) -> dict[str, Any]:
    """A ``metav1.Condition``: every required field given (reason and time included)."""
    when = condition.last_transition_time
    return {
        "type": condition.type,
        "status": condition.status.value,
        "reason": condition.reason or "Unknown",
        "message": condition.message or "",
        "lastTransitionTime": rfc3339(when) if when is not None else rfc3339(_EPOCH),
    }


_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

#: One adapter per version read, newest first (discovery reads the first one served).
ADAPTERS: Final[tuple[NativeAdapter, ...]] = tuple(NativeAdapter(v) for v in VERSIONS)
