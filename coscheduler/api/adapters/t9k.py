"""T9k's PodGroup, ``scheduler.tensorstack.dev/v1beta1``.

T9k's Jobs (GenericJob, PyTorchTrainingJob, MPIJob...) create these and label
their pods ``scheduler.tensorstack.dev/group-name``, each pod's role in
``scheduler.tensorstack.dev/role``. T9k publishes no CRD; the shape is its
API reference (``src/references/api-reference/scheduler.md`` of the
t9k/user-manuals repository) and its PodGroup manual page; our CRD written
from them is ``crds/t9k-podgroups.yaml``:

- spec: ``minMember``, ``roles[{name, minMember}]``, ``queue`` (default
  ``default``), ``priority`` (0 to 100, larger first, default 0),
  ``topologyPolicy`` (its values are not documented);
- status: ``conditions`` of types ``GroupScheduled`` (resources were
  allocated to the group) and ``SufficientGroupMember`` (enough members
  exist), ``allocated`` (the resources its pods hold), and the counts of its
  pods by phase: ``pending``, ``running``, ``succeeded``, ``failed``,
  ``unknown``. No phase.

Read as ours: ``roles`` and ``queue`` as they are (the queue is our Queue of
that name), ``priority`` as our ``priority`` (order between groups, and
preemption: a group may evict only lower ones); a ``topologyPolicy`` is
refused, naming the field, since what it asks is not documented.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from coscheduler.api import validation
from coscheduler.api.adapters import apis
from coscheduler.api.adapters.base import GroupObject, foreign_group
from coscheduler.api.adapters.volcano import VolcanoCondition
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

__all__ = ["ADAPTER", "API", "GROUP", "T9kAdapter", "T9kStatus"]

API: Final = apis.T9K
GROUP: Final = API.group
#: T9k's scheduler answers to ``t9k-scheduler``: run under that name, we stand in for it.
SCHEDULER_NAME: Final = apis.T9K_SCHEDULER

GROUP_SCHEDULED: Final = "GroupScheduled"
SUFFICIENT_MEMBERS: Final = "SufficientGroupMember"
#: The reasons T9k's manual shows on the two conditions when True.
SCHEDULED_REASON: Final = "PodGroupScheduled"
SUFFICIENT_REASON: Final = "SufficientMemberPods"
PRIORITY_RANGE: Final = range(101)
_PHASES: Final = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


class _Wire(BaseModel):
    # Another project's API: fields it adds later are ignored, not refused.
    model_config = ConfigDict(
        defer_build=True,
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
    )


class _Role(_Wire):
    name: str
    min_member: int = 0


class T9kSpec(_Wire):
    """T9k's spec."""

    min_member: int = 0
    roles: list[_Role] | None = None
    queue: str | None = None
    priority: int | None = None
    topology_policy: str | None = None

    def ours(self) -> PodGroupSpec:
        """As our spec; raises ``ValueError`` naming a field that cannot be honoured."""
        if self.topology_policy:
            raise ValueError(
                f"spec.topologyPolicy: {self.topology_policy!r} is not supported "
                "(T9k does not document its values)"
            )
        if self.priority is not None and self.priority not in PRIORITY_RANGE:
            raise ValueError(f"spec.priority: {self.priority} is not within 0 to 100")
        roles = [
            {"name": role.name, "minMember": role.min_member}
            for role in self.roles or ()
            if role.min_member > 0
        ]
        needed = sum(role.min_member for role in self.roles or () if role.min_member > 0)
        wire = {
            # Each pod has one role: the roles' minimums together are a floor on the gang.
            "minMember": max(self.min_member, needed, 1),
            "priority": self.priority,
            "queue": self.queue or DEFAULT_QUEUE,
            "roles": roles or None,
        }
        try:
            return PodGroupSpec.model_validate(wire)
        except ValidationError as error:
            # The one check on the whole spec is on its roles (unique names).
            lines = [
                line.replace("(top level)", "roles")
                for line in validation.problems(error, with_input=False)
            ]
            raise ValueError("; ".join(f"spec.{line}" for line in lines)) from error


class T9kStatus(_Wire):
    """T9k's status, as stored; also the form two stored statuses are compared in."""

    conditions: tuple[VolcanoCondition, ...] = ()
    allocated: ResourceList | None = None
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    unknown: int = 0


class _Object(_Wire):
    metadata: dict[str, Any]
    spec: T9kSpec = Field(default_factory=T9kSpec)


def _condition(
    kind: str, true: bool, reason: str | None, source: PodGroupCondition | None
) -> dict[str, Any]:
    when = source.last_transition_time if source is not None else None
    fields = {
        "type": kind,
        "status": "True" if true else "False",
        "reason": reason,
        "message": source.message if source is not None else None,
        "transitionID": source.transition_id if source is not None else None,
        "lastTransitionTime": rfc3339(when) if when is not None else None,
    }
    # Inside a list a merge patch keeps nulls as they are: leave them out.
    return {key: value for key, value in fields.items() if value is not None}


def their_conditions(status: PodGroupStatus) -> list[dict[str, Any]]:
    """Our conditions as T9k's two."""
    scheduled = status.condition(ConditionType.SCHEDULED)
    unschedulable = status.condition(ConditionType.UNSCHEDULABLE)
    placed = scheduled is not None and scheduled.status == ConditionStatus.TRUE
    short = (
        unschedulable is not None
        and unschedulable.status == ConditionStatus.TRUE
        and unschedulable.reason == Reason.NOT_ENOUGH_MEMBERS
    )
    return [
        _condition(
            GROUP_SCHEDULED,
            placed,
            SCHEDULED_REASON if placed else (scheduled.reason if scheduled else None),
            scheduled,
        ),
        _condition(
            SUFFICIENT_MEMBERS,
            not short,
            Reason.NOT_ENOUGH_MEMBERS.value if short else SUFFICIENT_REASON,
            unschedulable if short else None,
        ),
    ]


class T9kAdapter:
    """Translates T9k's PodGroup to and from ours."""

    api: Final = API
    #: T9k's own scheduler may serve other pods: a group none of whose members
    #: is ours is left to it.
    shared: Final = True

    def parse(self, raw: Mapping[str, Any]) -> GroupObject:
        wire = _Object.model_validate(raw)
        return foreign_group(self, raw, wire.metadata, wire.spec.ours())

    def read_status(self, wire: Mapping[str, Any]) -> PodGroupStatus:
        stored = T9kStatus.model_validate(wire)
        scheduled = any(c.type == GROUP_SCHEDULED and c.status == "True" for c in stored.conditions)
        running = max(stored.running, 0)
        phase = PodGroupPhase.PENDING
        if scheduled:
            phase = PodGroupPhase.RUNNING if running else PodGroupPhase.SCHEDULED
        return PodGroupStatus(
            phase=phase,
            pending=max(stored.pending, 0),
            running=running,
            succeeded=max(stored.succeeded, 0),
            failed=max(stored.failed, 0),
            unknown=max(stored.unknown, 0),
            allocated=stored.allocated or None,
        )

    def stored_form(self, wire: Mapping[str, Any]) -> object:
        try:
            return T9kStatus.model_validate(wire)
        except ValidationError:
            return None

    def conclude(self, status: PodGroupStatus) -> PodGroupStatus:
        return status

    def render_status(self, status: PodGroupStatus, members: Sequence[PodInfo]) -> dict[str, Any]:
        # T9k counts its pods by phase (ours counts bound and unbound apart).
        phases = Counter(pod.phase for pod in members)
        return {
            "conditions": their_conditions(status),
            "allocated": status.allocated,
            **{phase.lower(): phases.get(phase, 0) for phase in _PHASES},
        }


ADAPTER: Final = T9kAdapter()
