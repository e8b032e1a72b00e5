"""The PodGroup resource: spec, status, phases and condition types.

Condition reasons are :class:`coscheduler.api.reasons.Reason`, shared with
the core and the pods' conditions.

These pydantic models mirror ``crds/podgroups.yaml`` field for field (a test
walks both and fails on any disagreement), so that what the API server
accepts is exactly what the scheduler can read. The models use Python names;
``model_dump(by_alias=True)`` gives the camelCase wire form.

The models re-check what the schema already enforces (bounds, unique role
names, role minimums within minMember). That costs nothing and keeps a
PodGroup that bypassed validation (an older CRD, a hand-edited object) from
reaching the planner with nonsense in it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Final

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from coscheduler.api import labels
from coscheduler.api.quantity import QuantityError, ResourceAmounts, parse_resource_list

__all__ = [
    "DEFAULT_QUEUE",
    "ConditionStatus",
    "ConditionType",
    "PodGroup",
    "PodGroupCondition",
    "PodGroupPhase",
    "PodGroupSpec",
    "PodGroupStatus",
    "Role",
]

DEFAULT_QUEUE: Final = "default"

#: A ResourceList as the API stores it: resource name → quantity string (or int).
ResourceList = dict[str, str | int]


class PodGroupPhase(StrEnum):
    """Where a group stands. The controller alone moves a group between phases.

    The rules, in the order :mod:`coscheduler.controller.status` applies them
    (the first that holds wins; "bound" counts members on a node that have not
    finished, plus those that succeeded):

    - ``Finished``: no member pending or active, at least minMember succeeded.
    - ``Running``: some member running, and at least minMember running or
      succeeded.
    - ``Failed``: a member failed and fewer than minMember run or succeeded;
      recovers by these same rules when replacements come up.
    - ``Unknown``: a member's state is unknown (its node is lost) and, with
      it, minMember would be running or succeeded.
    - ``Scheduled``: at least minMember bound.
    - ``Scheduling``: some member bound, fewer than minMember (a gang being
      completed, e.g. after a restart between bindings).
    - ``Pending``: no member bound.
    """

    PENDING = "Pending"
    SCHEDULING = "Scheduling"
    SCHEDULED = "Scheduled"
    RUNNING = "Running"
    FINISHED = "Finished"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class ConditionType(StrEnum):
    """The condition types a PodGroup carries."""

    #: True once minMember members (and every role's minimum) are bound.
    SCHEDULED = "Scheduled"
    #: True while the planner cannot place the group; the reason says why.
    UNSCHEDULABLE = "Unschedulable"


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class _Model(BaseModel):
    """Base for the wire models: camelCase aliases, unknown fields refused."""

    model_config = ConfigDict(
        defer_build=True,
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )


def _check_resource_list(value: ResourceList | None) -> ResourceList | None:
    if value is not None:
        try:
            parse_resource_list(value)
        except QuantityError as error:
            raise ValueError(str(error)) from error
    return value


#: The largest minMember the schema accepts (a bound that keeps CEL cheap).
MAX_MIN_MEMBER: Final = 100_000


#: A node label key: an optional DNS-subdomain prefix and "/", then a name of up
#: to 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit.
LABEL_KEY_PATTERN: Final = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LabelKey = Annotated[str, Field(min_length=1, max_length=317, pattern=LABEL_KEY_PATTERN)]


class GroupTopology(_Model):
    """Keep the group's members inside one topology domain (one value of a node label).

    ``required``: every needed member lands on nodes sharing one value of this
    key, or the group waits. ``preferred``: keys from narrow to wide (rack, then
    block, then zone): the group goes to the narrowest domain that holds it
    whole, falling back to wider ones, and is never split beyond the widest
    level given (``required`` when set, else the last preferred key).
    """

    required: _LabelKey | None = None
    preferred: Annotated[list[_LabelKey], Field(max_length=8)] | None = None

    @model_validator(mode="after")
    def _levels_make_sense(self) -> GroupTopology:
        preferred = self.preferred or []
        if self.required is None and not preferred:
            raise ValueError("set topology.required, topology.preferred, or both")
        if len(set(preferred)) != len(preferred):
            raise ValueError("topology.preferred repeats a key")
        if self.required is not None and self.required in preferred:
            raise ValueError(
                "topology.required is the widest level already; do not repeat it in "
                "topology.preferred"
            )
        return self

    def levels(self) -> tuple[str, ...]:
        """The keys to try, narrow to wide; the group never spans two domains of the last."""
        return (*(self.preferred or ()), *((self.required,) if self.required else ()))


class Role(_Model):
    """A role within a group: pods labelled with it must reach ``min_member``."""

    name: Annotated[str, Field(min_length=1, max_length=63)]
    min_member: Annotated[int, Field(ge=1, le=MAX_MIN_MEMBER)]
    topology: GroupTopology | None = None


class PodGroupSpec(_Model):
    """What the user asks for. Only ``min_member`` is required."""

    min_member: Annotated[int, Field(ge=1, le=MAX_MIN_MEMBER)]
    min_resources: Annotated[ResourceList, Field(max_length=32)] | None = None
    schedule_timeout_seconds: Annotated[int, Field(ge=1)] | None = None
    priority_class_name: Annotated[str, Field(min_length=1, max_length=253)] | None = None
    priority: int | None = None
    queue: Annotated[str, Field(min_length=1, max_length=253)] = DEFAULT_QUEUE
    roles: Annotated[list[Role], Field(max_length=32)] | None = None
    topology: GroupTopology | None = None

    _check_min_resources = field_validator("min_resources")(_check_resource_list)

    @model_validator(mode="after")
    def _roles_fit_min_member(self) -> PodGroupSpec:
        if not self.roles:
            return self
        names = [role.name for role in self.roles]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"role names must be unique; repeated: {', '.join(duplicates)}")
        required = sum(role.min_member for role in self.roles)
        if required > self.min_member:
            raise ValueError(
                f"roles require {required} members in all, more than minMember {self.min_member}"
            )
        return self

    def min_resource_amounts(self) -> ResourceAmounts:
        """``min_resources`` as the scheduler's integers (millicores, bytes, units)."""
        return parse_resource_list(self.min_resources)

    def role_topology(self) -> dict[str, tuple[str, ...]]:
        """Role name -> its topology levels, for the roles that have one."""
        return {role.name: role.topology.levels() for role in self.roles or () if role.topology}

    def role_minimums(self) -> dict[str, int]:
        """Role name → its minimum, empty when the group has no roles."""
        return {role.name: role.min_member for role in self.roles or ()}


class PodGroupCondition(_Model):
    """One condition in ``status.conditions``, in the shape of metav1.Condition."""

    type: Annotated[str, Field(max_length=316)]
    status: ConditionStatus
    reason: Annotated[str, Field(max_length=1024)] | None = None
    message: Annotated[str, Field(max_length=32768)] | None = None
    last_transition_time: datetime.datetime | None = None
    transition_id: Annotated[str, Field(max_length=253)] | None = Field(
        default=None, alias="transitionID"
    )


class PodGroupStatus(_Model):
    """What the controller observed of the group's members."""

    phase: PodGroupPhase = PodGroupPhase.PENDING
    conditions: Annotated[list[PodGroupCondition], Field(max_length=16)] = Field(
        default_factory=list
    )
    pending: Annotated[int, Field(ge=0)] = 0
    scheduled: Annotated[int, Field(ge=0)] = 0
    running: Annotated[int, Field(ge=0)] = 0
    succeeded: Annotated[int, Field(ge=0)] = 0
    failed: Annotated[int, Field(ge=0)] = 0
    unknown: Annotated[int, Field(ge=0)] = 0
    schedule_start_time: datetime.datetime | None = None
    occupied_by: Annotated[str, Field(max_length=253)] | None = None
    allocated: ResourceList | None = None
    #: While pending: its place in its queue and across the cluster (1 goes first).
    queue_position: Annotated[int, Field(ge=1)] | None = None
    cluster_position: Annotated[int, Field(ge=1)] | None = None

    _check_allocated = field_validator("allocated")(_check_resource_list)

    def condition(self, condition_type: str) -> PodGroupCondition | None:
        """The condition of this type, if the status has one."""
        for condition in self.conditions:  # a loop, not next(genexpr): read per status derived
            if condition.type == condition_type:
                return condition
        return None


class ObjectMetadata:
    """Accessors of an object's raw ``metadata``, shared by every PodGroup shape."""

    __slots__ = ()

    if TYPE_CHECKING:
        metadata: Mapping[str, Any]

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace", ""))

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def key(self) -> str:
        """``namespace/name``, the group's identity in logs, queues and messages."""
        return f"{self.namespace}/{self.name}"

    @property
    def uid(self) -> str | None:
        uid = self.metadata.get("uid")
        return str(uid) if uid is not None else None

    @property
    def creation_timestamp(self) -> datetime.datetime | None:
        raw = self.metadata.get("creationTimestamp")
        if raw is None:
            return None
        if isinstance(raw, datetime.datetime):
            return raw
        return datetime.datetime.fromisoformat(str(raw).replace("Z", "+00:00"))


class PodGroup(ObjectMetadata, BaseModel):
    """A whole PodGroup object as read from the API server.

    Metadata is kept as the raw mapping: the scheduler needs only a few of its
    fields, and those have accessors here.
    """

    model_config = ConfigDict(defer_build=True, populate_by_name=True, extra="ignore", frozen=True)

    api_version: str = Field(default=f"{labels.GROUP}/{labels.VERSION}", alias="apiVersion")
    kind: str = labels.KIND
    metadata: dict[str, Any]
    spec: PodGroupSpec
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)
