"""Kubernetes' ``CompositePodGroup`` (``scheduling.k8s.io/v1alpha3``, 1.37): several gangs as one.

Served when the API server runs with the ``GenericWorkload``,
``TopologyAwareWorkloadScheduling`` and ``CompositePodGroup`` gates and
``--runtime-config=scheduling.k8s.io/v1alpha3=true``. Its children are native
PodGroups (``scheduling.k8s.io/v1beta1``) whose ``spec.parentCompositePodGroupName``
names it (or other CompositePodGroups, nested). The shape read here, from
``k8s.io/api/scheduling/v1alpha3/types.go`` of v0.37.2:

- ``spec.schedulingPolicy``: exactly one of ``basic: {}`` (the children are
  scheduled independently) or ``gang: {minGroupCount}`` (all or nothing:
  ``minGroupCount`` children at once, each whole);
- ``spec.schedulingConstraints.topology[]`` (at most one ``{key}``): every
  child within one domain of that node label;
- ``spec.disruptionMode``: ``single: {}`` (children disrupted on their own, the
  default) or ``all: {}`` (only together);
- ``spec.priorityClassName``, ``spec.priority``, ``spec.preemptionPolicy``
  (``PreemptLowerPriority`` or ``Never``);
- ``spec.parentCompositePodGroupName`` (nesting) and ``spec.workloadRef``
  (the Workload's template it was made from: read, not needed);
- ``status.conditions``: ``CompositePodGroupInitiallyScheduled`` and
  ``DisruptionTarget`` (metav1.Condition each).

:func:`compose` turns a gang composite and its children into one group of
the internal model: each child PodGroup is a *role* of the group (its
``minCount`` the role's minimum, its topology the role's), the composite's
topology the group's, so the planner places every child whole in one trial or
none of them. What that model cannot say is refused with the field named
(:class:`Refused`), never approximated: a composite nested in another, one
whose ``minGroupCount`` is less than its children, a ``basic`` composite
with a topology constraint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from coscheduler.api import validation
from coscheduler.api.adapters import apis
from coscheduler.api.podgroup import (
    DEFAULT_QUEUE,
    LABEL_KEY_PATTERN,
    MAX_MIN_MEMBER,
    GroupTopology,
    ObjectMetadata,
    PodGroupSpec,
    Role,
)
from coscheduler.api.queue import QUEUE_LABEL
from coscheduler.api.reasons import Reason

__all__ = [
    "API",
    "CONDITION_INITIALLY_SCHEDULED",
    "REASON_INVALID",
    "ChildGroup",
    "Composed",
    "CompositeGang",
    "CompositePodGroup",
    "Refused",
    "Waiting",
    "basic_refusal",
    "compose",
    "read_composite",
]

API: Final = apis.COMPOSITE
GROUP: Final = API.group
VERSION: Final = API.version
KIND: Final = API.kind

#: The composite's condition (the child PodGroups carry ``PodGroupInitiallyScheduled``).
CONDITION_INITIALLY_SCHEDULED: Final = "CompositePodGroupInitiallyScheduled"
#: The reason kube-scheduler gives a layout it cannot honour; ours for what we refuse.
REASON_INVALID: Final = "Invalid"
#: Roles a group may have (``PodGroupSpec.roles``): more children are refused.
MAX_CHILDREN: Final = 32
#: A role's name is at most this long: a child named longer is refused.
MAX_CHILD_NAME: Final = 63
_LONGEST_PRIORITY: Final = 1_000_000_000  # HighestUserDefinablePriority


class _Wire(BaseModel):
    # An alpha API: fields added within v1alpha3 are ignored, not refused.
    model_config = ConfigDict(defer_build=True, populate_by_name=True, extra="ignore", frozen=True)


class _Gang(_Wire):
    min_group_count: int = Field(alias="minGroupCount", ge=1)


class _Policy(_Wire):
    # A policy kind this version does not define is refused, not read as basic.
    model_config = ConfigDict(defer_build=True, populate_by_name=True, extra="allow", frozen=True)

    basic: dict[str, Any] | None = None
    gang: _Gang | None = None


class _Topology(_Wire):
    key: str = Field(min_length=1, max_length=317, pattern=LABEL_KEY_PATTERN)


class _Constraints(_Wire):
    topology: list[_Topology] = Field(default_factory=list, max_length=1)


class _Disruption(_Wire):
    model_config = ConfigDict(defer_build=True, populate_by_name=True, extra="allow", frozen=True)

    single: dict[str, Any] | None = None
    all: dict[str, Any] | None = None


class _WorkloadRef(_Wire):
    workload_name: str = Field(alias="workloadName", min_length=1)
    template_name: str = Field(alias="templateName", min_length=1)


class _Spec(_Wire):
    parent: str | None = Field(default=None, alias="parentCompositePodGroupName", min_length=1)
    workload_ref: _WorkloadRef | None = Field(default=None, alias="workloadRef")
    scheduling_policy: _Policy = Field(alias="schedulingPolicy")
    scheduling_constraints: _Constraints | None = Field(default=None, alias="schedulingConstraints")
    disruption_mode: _Disruption | None = Field(default=None, alias="disruptionMode")
    priority_class_name: str | None = Field(default=None, alias="priorityClassName", max_length=253)
    priority: int | None = Field(default=None, ge=-(2**31), le=_LONGEST_PRIORITY)
    preemption_policy: Literal["PreemptLowerPriority", "Never"] | None = Field(
        default=None, alias="preemptionPolicy"
    )


class _Condition(_Wire):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None


class _Status(_Wire):
    conditions: list[_Condition] = Field(default_factory=list)


class _Object(_Wire):
    metadata: dict[str, Any]
    spec: _Spec
    status: _Status = Field(default_factory=_Status)


@dataclass(frozen=True, slots=True)
class CompositePodGroup(ObjectMetadata):
    """A CompositePodGroup as coscheduler reads it."""

    metadata: Mapping[str, Any]
    #: ``minGroupCount`` of a ``gang`` policy; None for ``basic``.
    min_group_count: int | None
    #: The one topology key its children must share a domain of, if any.
    topology_key: str | None
    #: ``disruptionMode: all``: its children are evicted together or not at all.
    disrupt_all: bool
    parent: str | None
    priority_class_name: str | None
    priority: int | None
    preempt_never: bool
    #: ``spec.workloadRef`` as ``(workloadName, templateName)``, when given.
    workload_ref: tuple[str, str] | None
    #: The queue its gang draws from (its ``scheduling.sigs.k8s.io/queue`` label).
    queue: str
    #: ``status.conditions`` as ``(type, status, reason, message)``, as stored.
    conditions: tuple[tuple[str, str, str, str], ...] = ()

    @property
    def gang(self) -> bool:
        return self.min_group_count is not None

    @property
    def apart(self) -> bool:
        """A ``basic`` composite asking nothing more: each child is a gang of its own."""
        return self.min_group_count is None and basic_refusal(self) is None

    def describe(self) -> str:
        return f"{KIND} {self.key}"

    def condition(self, condition_type: str) -> tuple[str, str, str, str] | None:
        return next((c for c in self.conditions if c[0] == condition_type), None)


def read_composite(raw: Mapping[str, Any]) -> CompositePodGroup:
    """The CompositePodGroup as a record; raises ``ValueError`` naming what cannot be read."""
    try:
        wire = _Object.model_validate(raw)
    except ValidationError as error:
        raise ValueError("; ".join(validation.problems(error))) from None
    spec = wire.spec
    policy = spec.scheduling_policy
    unknown = sorted(policy.model_extra or ())
    if unknown:
        raise ValueError(
            f"spec.schedulingPolicy: {', '.join(unknown)} is not a policy of {API.api_version}"
        )
    if (policy.basic is None) == (policy.gang is None):
        raise ValueError("spec.schedulingPolicy: exactly one of basic and gang must be given")
    disruption = spec.disruption_mode or _Disruption(single={})
    unknown = sorted(disruption.model_extra or ())
    if unknown:
        raise ValueError(
            f"spec.disruptionMode: {', '.join(unknown)} is not a mode of {API.api_version}"
        )
    if (disruption.single is None) == (disruption.all is None):
        raise ValueError("spec.disruptionMode: exactly one of single and all must be given")
    topology = spec.scheduling_constraints.topology if spec.scheduling_constraints else []
    labels = wire.metadata.get("labels") or {}
    queue = labels.get(QUEUE_LABEL) if isinstance(labels, Mapping) else None
    if queue is not None and not isinstance(queue, str):
        raise ValueError(f"metadata.labels.{QUEUE_LABEL} must be a string, got {queue!r}")
    ref = spec.workload_ref
    return CompositePodGroup(
        metadata=wire.metadata,
        min_group_count=policy.gang.min_group_count if policy.gang is not None else None,
        topology_key=topology[0].key if topology else None,
        disrupt_all=disruption.all is not None,
        parent=spec.parent,
        priority_class_name=spec.priority_class_name or None,
        priority=spec.priority,
        preempt_never=spec.preemption_policy == "Never",
        workload_ref=(ref.workload_name, ref.template_name) if ref is not None else None,
        queue=queue or DEFAULT_QUEUE,
        conditions=tuple(
            (c.type, c.status, c.reason or "", c.message or "") for c in wire.status.conditions
        ),
    )


@dataclass(frozen=True, slots=True)
class CompositeGang:
    """A composite as its gang's object carries it: the record, and why it waits as it is."""

    record: CompositePodGroup
    #: The reason and message its pods wait with, when it cannot be placed as it is.
    waits: tuple[Reason, str] | None = None


@dataclass(frozen=True, slots=True)
class ChildGroup:
    """What a composite needs of one child PodGroup (read by the native PodGroup's adapter)."""

    name: str
    #: ``schedulingPolicy.gang.minCount``; None for ``basic`` (one pod is enough).
    min_count: int | None
    #: Its ``schedulingConstraints.topology[0].key``, if any.
    topology_key: str | None = None
    #: It names claims its members share (``spec.resourceClaims``).
    claims: bool = False


@dataclass(frozen=True, slots=True)
class Composed:
    """The composite as one gang: its children are the spec's roles."""

    spec: PodGroupSpec


@dataclass(frozen=True, slots=True)
class Refused:
    """The composite asks for what coscheduler does not honour; ``field`` names it."""

    field: str
    why: str

    @property
    def message(self) -> str:
        return f"{self.field}: {self.why}"


@dataclass(frozen=True, slots=True)
class Waiting:
    """Not all the child PodGroups it needs exist yet."""

    message: str


def compose(
    composite: CompositePodGroup, children: Sequence[ChildGroup]
) -> Composed | Refused | Waiting:
    """A ``gang`` composite and its child PodGroups as one group, or why not.

    Call it for gang composites only: a ``basic`` one's children are groups of
    their own (the caller keeps them apart).
    """
    if composite.parent is not None:
        return Refused(
            "spec.parentCompositePodGroupName",
            f"nested CompositePodGroups (this one in {composite.parent!r}) are not honoured "
            "yet; make the parent the composite of the PodGroups",
        )
    if composite.min_group_count is None:
        return Refused("spec.schedulingPolicy.basic", "a basic composite is not one gang")
    ordered = sorted(children, key=lambda child: child.name)
    count, wanted = len(ordered), composite.min_group_count
    if count < wanted:
        names = ", ".join(child.name for child in ordered) or "none"
        return Waiting(
            f"{composite.describe()} needs minGroupCount {wanted} child PodGroups, "
            f"{count} exist ({names})"
        )
    if count > wanted:
        return Refused(
            "spec.schedulingPolicy.gang.minGroupCount",
            f"{wanted} is fewer than its {count} child PodGroups: coscheduler places a "
            "composite's children all together, so minGroupCount must equal their number",
        )
    if count > MAX_CHILDREN:
        return Refused(
            "spec.schedulingPolicy.gang.minGroupCount", f"more than {MAX_CHILDREN} children"
        )
    long = [child.name for child in ordered if len(child.name) > MAX_CHILD_NAME]
    if long:
        return Refused(
            "child PodGroup metadata.name",
            f"{long[0]!r} is longer than {MAX_CHILD_NAME} characters, the longest child "
            "name a composite's gang can hold",
        )
    sharing = [child.name for child in ordered if child.claims]
    if sharing:
        return Refused(
            "child PodGroup spec.resourceClaims",
            f"{sharing[0]!r} names claims its members share: a gang composite's children "
            "are placed as one group, whose claims are not reserved per child PodGroup yet",
        )
    roles = [
        Role(
            name=child.name,
            min_member=child.min_count or 1,
            topology=GroupTopology(required=child.topology_key) if child.topology_key else None,
        )
        for child in ordered
    ]
    total = sum(role.min_member for role in roles)
    if total > MAX_MIN_MEMBER:
        return Refused(
            "spec.schedulingPolicy.gang.minCount",
            f"the children's minCounts add up to {total}, more than {MAX_MIN_MEMBER}",
        )
    topology = GroupTopology(required=composite.topology_key) if composite.topology_key else None
    return Composed(
        PodGroupSpec(
            min_member=total,
            roles=roles,
            topology=topology,
            priority=composite.priority,
            priority_class_name=composite.priority_class_name,
            queue=composite.queue,
        )
    )


def basic_refusal(composite: CompositePodGroup) -> Refused | None:
    """What a ``basic`` composite asks that its independent children cannot honour."""
    if composite.topology_key is not None:
        return Refused(
            "spec.schedulingConstraints.topology",
            "a basic composite's children are placed independently, so one domain for all "
            "of them cannot be honoured; use schedulingPolicy.gang",
        )
    if composite.parent is not None:
        return Refused(
            "spec.parentCompositePodGroupName", "nested CompositePodGroups are not honoured yet"
        )
    return None
