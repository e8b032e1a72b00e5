"""The Queue resource: a cluster-scoped share that PodGroups draw from.

These pydantic models mirror ``crds/queues.yaml`` field for field (a test walks
both), and re-check what the schema enforces, so that a Queue that bypassed
validation never reaches the core with nonsense in it. :func:`queue_label`
names the label by which a lone pod (no group) picks its queue.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from coscheduler.api import labels
from coscheduler.api.podgroup import (
    DEFAULT_QUEUE,
    PodGroupCondition,
    ResourceList,
    _check_resource_list,
    _Model,
)
from coscheduler.api.quantity import ResourceAmounts, parse_resource_list

__all__ = [
    "DEFAULT_QUEUE",
    "PLURAL",
    "QUEUE_LABEL",
    "Queue",
    "QueueSpec",
    "QueueState",
    "QueueStatus",
    "SelectorRequirement",
    "WireSelector",
    "pod_queue_name",
]

PLURAL: Final = labels.QUEUE_PLURAL
KIND: Final = labels.QUEUE_KIND
#: The label that names a lone pod's queue (a group's queue is ``spec.queue``).
QUEUE_LABEL: Final = f"{labels.GROUP}/queue"


def pod_queue_name(pod_labels: Mapping[str, str] | None, volcano_queue: str | None = None) -> str:
    """The queue of a pod that belongs to no group: its label, else the queue Volcano's
    annotation names, else ``default``."""
    return (pod_labels or {}).get(QUEUE_LABEL) or volcano_queue or DEFAULT_QUEUE


class QueueState(StrEnum):
    OPEN = "Open"
    CLOSED = "Closed"


class SelectorRequirement(_Model):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None


class WireSelector(_Model):
    """A label selector as the API writes it; ``{}`` selects everything."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[SelectorRequirement] | None = None


class QueueSpec(_Model):
    nominal: Annotated[ResourceList, Field(max_length=32)] | None = None
    max: Annotated[ResourceList, Field(max_length=32)] | None = None
    lending_limit: Annotated[ResourceList, Field(max_length=32)] | None = None
    weight: Annotated[int, Field(ge=1, le=1000)] = 1
    state: QueueState = QueueState.OPEN
    parent: Annotated[str, Field(min_length=1, max_length=63)] | None = None
    namespaces: (
        Annotated[list[Annotated[str, Field(min_length=1, max_length=63)]], Field(max_length=256)]
        | None
    ) = None
    namespace_selector: WireSelector | None = None

    _check_quantities = field_validator("nominal", "max", "lending_limit")(_check_resource_list)

    @model_validator(mode="after")
    def _max_at_least_nominal(self) -> QueueSpec:
        nominal, cap = self.nominal_amounts(), self.max_amounts()
        low = sorted(r for r, amount in cap.items() if amount < nominal.get(r, 0))
        if low:
            raise ValueError(f"spec.max is below spec.nominal for {', '.join(low)}")
        return self

    @model_validator(mode="after")
    def _lends_within_nominal(self) -> QueueSpec:
        nominal, lending = self.nominal_amounts(), self.lending_limit_amounts()
        over = sorted(r for r, amount in lending.items() if amount > nominal.get(r, 0))
        if over:
            raise ValueError(
                f"spec.lendingLimit is above spec.nominal for {', '.join(over)}: a queue "
                "lends at most its own nominal quota"
            )
        return self

    def nominal_amounts(self) -> ResourceAmounts:
        return parse_resource_list(self.nominal)

    def max_amounts(self) -> ResourceAmounts:
        return parse_resource_list(self.max)

    def lending_limit_amounts(self) -> ResourceAmounts:
        return parse_resource_list(self.lending_limit)


class QueueStatus(_Model):
    allocated: ResourceList | None = None
    borrowed: ResourceList | None = None
    nominal: ResourceList | None = None
    max: ResourceList | None = None
    dominant_share: str | None = None
    pending_groups: Annotated[int, Field(ge=0)] = 0
    admitted_groups: Annotated[int, Field(ge=0)] = 0
    running_groups: Annotated[int, Field(ge=0)] = 0
    conditions: Annotated[list[PodGroupCondition], Field(max_length=16)] = Field(
        default_factory=list
    )
    lending_limit: ResourceList | None = None
    recent_usage: ResourceList | None = None


class Queue(BaseModel):
    """A whole Queue object as read from the API server (metadata kept raw)."""

    model_config = ConfigDict(defer_build=True, populate_by_name=True, extra="ignore", frozen=True)

    api_version: str = Field(default=f"{labels.GROUP}/{labels.VERSION}", alias="apiVersion")
    kind: str = KIND
    metadata: dict[str, Any]
    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: QueueStatus = Field(default_factory=QueueStatus)

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def uid(self) -> str | None:
        uid = self.metadata.get("uid")
        return str(uid) if uid is not None else None

    @field_validator("metadata")
    @classmethod
    def _named(cls, metadata: dict[str, Any]) -> dict[str, Any]:
        name = metadata.get("name")
        if not isinstance(name, str) or not 0 < len(name) <= 63:
            raise ValueError("a queue needs a name of 1 to 63 characters")
        return metadata

    @model_validator(mode="after")
    def _not_own_parent(self) -> Queue:
        if self.spec.parent == self.name:
            raise ValueError("a queue cannot be its own parent")
        return self
