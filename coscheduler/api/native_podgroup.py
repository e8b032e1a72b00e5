"""Kubernetes' own PodGroup (``scheduling.k8s.io``, 1.36 and later), read once into one record.

Two shapes are read, chosen by discovery at start (the newest served wins):

- ``v1beta1`` (Kubernetes 1.37): ``spec.workloadRef {workloadName, templateName}``,
  ``spec.schedulingPolicy`` (``basic: {}`` or ``gang: {minCount}``),
  ``spec.schedulingConstraints.topology[].key`` (at most one),
  ``spec.resourceClaims`` (claims the members share, reserved for the group),
  ``spec.disruptionMode`` (``single: {}`` or ``all: {}``,
  single when unset), ``spec.priorityClassName``, ``spec.priority``,
  ``spec.preemptionPolicy`` (``PreemptLowerPriority`` or ``Never``) and
  ``spec.parentCompositePodGroupName``; the condition ``PodGroupInitiallyScheduled``.
- ``v1alpha2`` (Kubernetes 1.36): the same but ``spec.podGroupTemplateRef.workload
  {workloadName, podGroupTemplateName}``, ``disruptionMode`` a string (``Pod`` or
  ``PodGroup``), no ``preemptionPolicy`` and no parent; the condition is
  ``PodGroupScheduled``.

A pod joins with ``spec.schedulingGroup.podGroupName`` (read with the pod,
:mod:`coscheduler.api.pod`). What the PodGroup itself says is what is
honoured: the template of its Workload is where a controller copied it from,
and may have changed since (``minCount`` is mutable on the PodGroup only).

Fields added later within a version are ignored (an alpha or beta API
grows); a policy or mode this release does not know is refused, never read
as another one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from coscheduler.api import validation
from coscheduler.api.adapters import apis
from coscheduler.api.podgroup import LABEL_KEY_PATTERN, ObjectMetadata
from coscheduler.api.queue import QUEUE_LABEL

__all__ = [
    "GROUP",
    "PLURAL",
    "VERSIONS",
    "NativePodGroup",
    "PodGroupClaim",
    "WorkloadRef",
    "initially_scheduled_type",
    "read_native_podgroup",
]

GROUP: Final = apis.NATIVE_GROUP
PLURAL: Final = apis.NATIVE[0].plural
#: The versions read, newest first: discovery takes the first one served.
VERSIONS: Final = apis.NATIVE_VERSIONS

#: The largest minCount read (an int32 in the API; ours stops at 100,000 members).
_MAX_MIN_COUNT: Final = 100_000


def initially_scheduled_type(version: str) -> str:
    """The condition that says whether the group was placed, in ``version``'s words."""
    return "PodGroupScheduled" if version == "v1alpha2" else "PodGroupInitiallyScheduled"


class _Wire(BaseModel):
    # A beta API grows: fields added later are ignored, not refused.
    model_config = ConfigDict(defer_build=True, populate_by_name=True, extra="ignore", frozen=True)


class _Closed(_Wire):
    # A union whose members this release does not know must be refused, not taken for another.
    model_config = ConfigDict(defer_build=True, populate_by_name=True, extra="allow", frozen=True)


class _Gang(_Wire):
    min_count: int = Field(alias="minCount", ge=1, le=_MAX_MIN_COUNT)


class _Policy(_Closed):
    basic: dict[str, Any] | None = None
    gang: _Gang | None = None


class _Topology(_Wire):
    key: str = Field(min_length=1, max_length=317, pattern=LABEL_KEY_PATTERN)


class _Constraints(_Wire):
    topology: list[_Topology] = Field(default_factory=list, max_length=1)


class _Disruption(_Closed):
    single: dict[str, Any] | None = None
    all: dict[str, Any] | None = None


class _BetaRef(_Wire):
    workload_name: str = Field(alias="workloadName", min_length=1)
    template_name: str = Field(alias="templateName", min_length=1)


class _AlphaWorkloadRef(_Wire):
    workload_name: str = Field(alias="workloadName", min_length=1)
    template_name: str = Field(alias="podGroupTemplateName", min_length=1)


class _AlphaTemplateRef(_Wire):
    workload: _AlphaWorkloadRef | None = None


class _Claim(_Wire):
    name: str = Field(min_length=1, max_length=63)
    claim_name: str | None = Field(None, alias="resourceClaimName", min_length=1)
    template_name: str | None = Field(None, alias="resourceClaimTemplateName", min_length=1)


class _Spec(_Wire):
    scheduling_policy: _Policy = Field(alias="schedulingPolicy")
    scheduling_constraints: _Constraints | None = Field(None, alias="schedulingConstraints")
    resource_claims: list[_Claim] = Field(default_factory=list, alias="resourceClaims")
    priority_class_name: str | None = Field(None, alias="priorityClassName", max_length=253)
    priority: int | None = Field(None, ge=-(2**31), le=2**31 - 1)


class _BetaSpec(_Spec):
    workload_ref: _BetaRef | None = Field(None, alias="workloadRef")
    disruption_mode: _Disruption | None = Field(None, alias="disruptionMode")
    preemption_policy: Literal["PreemptLowerPriority", "Never"] | None = Field(
        None, alias="preemptionPolicy"
    )
    parent: str | None = Field(None, alias="parentCompositePodGroupName", min_length=1)


class _AlphaSpec(_Spec):
    template_ref: _AlphaTemplateRef | None = Field(None, alias="podGroupTemplateRef")
    disruption_mode: Literal["Pod", "PodGroup"] | None = Field(None, alias="disruptionMode")


class _Beta(_Wire):
    metadata: dict[str, Any]
    spec: _BetaSpec


class _Alpha(_Wire):
    metadata: dict[str, Any]
    spec: _AlphaSpec


@dataclass(frozen=True, slots=True)
class WorkloadRef:
    """The Workload and the template in it a PodGroup was made from (informative)."""

    workload: str
    template: str


@dataclass(frozen=True, slots=True)
class PodGroupClaim:
    """One ``spec.resourceClaims`` entry: a claim the members share, reserved for the group.

    A member's own ``spec.resourceClaims`` entry uses it when it matches it
    exactly (same name, same ``resourceClaimName`` or same
    ``resourceClaimTemplateName``), as upstream's ``resourceclaim.BindTo``
    decides; kube-controller-manager then names the group's claim in the
    member's ``status.resourceClaimStatuses``.
    """

    name: str
    #: ``resourceClaimName``: a claim made by the user.
    claim_name: str | None
    #: ``resourceClaimTemplateName``: kube-controller-manager makes the group's claim from it.
    template: str | None

    def matches(self, name: str, claim_name: str | None, template: str | None) -> bool:
        """A member's entry (its name, ``resourceClaimName``, template) refers to this claim."""
        if name != self.name:
            return False
        if self.template is not None:
            return template == self.template
        return template is None and claim_name == self.claim_name


@dataclass(frozen=True, slots=True)
class NativePodGroup(ObjectMetadata):
    """A native PodGroup as coscheduler reads it, whatever its version."""

    metadata: Mapping[str, Any]
    version: str
    #: ``gang.minCount``; None for ``basic`` (each member placed on its own).
    min_count: int | None
    #: ``schedulingConstraints.topology[0].key``: every needed member in one domain of it.
    topology_key: str | None = None
    #: ``disruptionMode`` all (v1alpha2: ``PodGroup``): evicted only whole.
    disruption_all: bool = False
    priority_class_name: str | None = None
    priority: int | None = None
    #: ``preemptionPolicy: Never``: waits rather than evicting anyone.
    never_preempts: bool = False
    workload_ref: WorkloadRef | None = None
    #: ``parentCompositePodGroupName``: the CompositePodGroup it is a child of.
    parent: str | None = None
    #: ``spec.resourceClaims``: claims allocated once for the whole group.
    resource_claims: tuple[PodGroupClaim, ...] = ()
    #: The queue its label names, if it names one (else its Workload's, else ``default``).
    queue: str | None = None


def read_native_podgroup(raw: Mapping[str, Any], version: str) -> NativePodGroup:
    """The PodGroup of ``version``'s shape; raises ``ValueError`` naming what cannot be read."""
    spec: _Spec
    try:
        if version == "v1alpha2":
            alpha = _Alpha.model_validate(raw)
            metadata, spec = alpha.metadata, alpha.spec
            held = alpha.spec.template_ref.workload if alpha.spec.template_ref else None
            ref = WorkloadRef(held.workload_name, held.template_name) if held else None
            disruption_all = alpha.spec.disruption_mode == "PodGroup"
            never, parent = False, None
        else:
            beta = _Beta.model_validate(raw)
            metadata, spec = beta.metadata, beta.spec
            given = beta.spec.workload_ref
            ref = WorkloadRef(given.workload_name, given.template_name) if given else None
            disruption_all = _disruption_all(beta.spec.disruption_mode)
            never, parent = beta.spec.preemption_policy == "Never", beta.spec.parent
    except ValidationError as error:
        raise ValueError("; ".join(validation.problems(error, with_input=False))) from None
    policy = spec.scheduling_policy
    _one_of(policy, "spec.schedulingPolicy", ("basic", "gang"))
    topology = spec.scheduling_constraints.topology if spec.scheduling_constraints else []
    return NativePodGroup(
        metadata,
        version,
        min_count=policy.gang.min_count if policy.gang is not None else None,
        topology_key=topology[0].key if topology else None,
        disruption_all=disruption_all,
        priority_class_name=spec.priority_class_name or None,
        priority=spec.priority,
        never_preempts=never,
        workload_ref=ref,
        parent=parent,
        resource_claims=_claims(spec.resource_claims),
        queue=queue_label(metadata),
    )


def queue_label(metadata: Mapping[str, Any]) -> str | None:
    """The ``scheduling.sigs.k8s.io/queue`` label of an object, if it has one."""
    labels = metadata.get("labels") or {}
    queue = labels.get(QUEUE_LABEL) if isinstance(labels, Mapping) else None
    if queue is not None and not isinstance(queue, str):
        raise ValueError(f"metadata.labels.{QUEUE_LABEL} must be a string, got {queue!r}")
    return queue or None


def _claims(entries: list[_Claim]) -> tuple[PodGroupClaim, ...]:
    claims = []
    for index, entry in enumerate(entries):
        if (entry.claim_name is None) == (entry.template_name is None):
            raise ValueError(
                f"spec.resourceClaims[{index}]: exactly one of resourceClaimName and "
                "resourceClaimTemplateName must be given"
            )
        claims.append(PodGroupClaim(entry.name, entry.claim_name, entry.template_name))
    if len({claim.name for claim in claims}) != len(claims):
        raise ValueError("spec.resourceClaims: each name must be given once")
    return tuple(claims)


def _disruption_all(mode: _Disruption | None) -> bool:
    if mode is None:
        return False  # the API's default is single
    _one_of(mode, "spec.disruptionMode", ("single", "all"))
    return mode.all is not None


def _one_of(union: _Closed, where: str, members: tuple[str, ...]) -> None:
    """Exactly one member of a union is given, and it is one this release knows."""
    unknown = sorted(union.model_extra or ())
    if unknown:
        raise ValueError(f"{where}: {', '.join(unknown)} is not known to coscheduler")
    given = [name for name in members if getattr(union, name) is not None]
    if len(given) != 1:
        raise ValueError(f"{where}: exactly one of {' and '.join(members)} must be given")
