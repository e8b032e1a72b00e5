"""Volcano's Queue, ``scheduling.volcano.sh/v1beta1`` (cluster-scoped), read as ours.

The shape, from Volcano's ``staging/src/volcano.sh/apis/pkg/apis/scheduling/v1beta1/types.go``
and its CRD (``crds/volcano-queues.yaml``, a copy of upstream's):

- spec: ``weight`` (1 to 65535, default 1), ``capability`` (a cap per
  resource), ``deserved`` (the share it is owed), ``guarantee.resource``
  (room kept for it alone), ``reclaimable`` (whether others may take back
  what it holds beyond its share), ``parent`` (hierarchical queues; Volcano's
  ``root`` is the top of the tree);
- status: ``state`` (Open, Closed, Closing, Unknown), the PodGroups counted by
  phase (``pending``, ``inqueue``, ``running``, ``unknown``, ``completed``)
  and ``allocated``. A queue has no ``spec.state``: it is closed by setting
  ``status.state`` (Volcano's controller does, for ``vcctl queue operate``).

Read as our Queue (:class:`QueueTerms`):

- ``deserved`` is the ``nominal``: what the queue is entitled to before any
  queue borrows, and what reclaim gives back. Where a queue has no
  ``deserved`` (Volcano's proportion plugin derives it from the weight), it
  has no nominal and shares what no nominal covers by ``weight``, as ours do.
- ``guarantee`` is the part of the nominal never lent (``nominal`` less the
  ``lendingLimit``); a guarantee above ``deserved`` raises the nominal to it.
- ``capability`` is ``max``; ``weight`` is ``weight``; ``parent`` is
  ``parent``, except that ``root`` (every top queue's parent in Volcano) is
  the top of our forest: the object named ``root`` is not read as a queue.
- ``reclaimable: false``: nothing it holds is taken back by reclaim.
- Closed and Closing admit no new group (running ones keep running); a
  queue that is Closing is written Closed once none of its groups runs,
  as Volcano's controller does. Every namespace may use a Volcano queue.

What has no counterpart (``affinity``, ``extendClusters``, ``priority``,
``dequeueStrategy``, ``guarantee.percentage``...) is ignored: it is advice to
Volcano's own plugins, not a constraint on where a pod may run.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from coscheduler.api.podgroup import ResourceList, _check_resource_list
from coscheduler.api.quantity import (
    QuantityError,
    ResourceAmounts,
    format_resource_list,
    parse_resource_list,
)

__all__ = [
    "API_VERSION",
    "COLLECTION_PATH",
    "ROOT",
    "QueueTerms",
    "VolcanoQueue",
    "VolcanoQueueSpec",
    "VolcanoQueueState",
    "status_body",
]

API_VERSION: Final = "scheduling.volcano.sh/v1beta1"
PLURAL: Final = "queues"
COLLECTION_PATH: Final = f"/apis/{API_VERSION}/{PLURAL}"
#: The top of Volcano's queue tree: our forest's top, not a queue.
ROOT: Final = "root"


class VolcanoQueueState(StrEnum):
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


class _Wire(BaseModel):
    # Another project's API: fields it adds later are ignored, not refused.
    model_config = ConfigDict(defer_build=True, populate_by_name=True, extra="ignore", frozen=True)


class _Guarantee(_Wire):
    resource: ResourceList | None = None

    _check = field_validator("resource")(_check_resource_list)


class VolcanoQueueSpec(_Wire):
    weight: int = Field(default=1, ge=1, le=65535)
    capability: ResourceList | None = None
    deserved: ResourceList | None = None
    guarantee: _Guarantee | None = None
    reclaimable: bool | None = None
    parent: str | None = None

    _check = field_validator("capability", "deserved")(_check_resource_list)


class VolcanoQueueStatus(_Wire):
    state: str | None = None
    pending: int = 0
    inqueue: int = 0
    running: int = 0
    unknown: int = 0
    completed: int = 0
    allocated: ResourceList | None = None


class QueueTerms(BaseModel):
    """A Volcano Queue in our Queue's terms (the module doc says how)."""

    model_config = ConfigDict(frozen=True)

    nominal: dict[str, int]
    max: dict[str, int]
    lending_limit: dict[str, int]
    weight: int
    open: bool
    parent: str | None
    reclaimable: bool


class VolcanoQueue(_Wire):
    """A whole Volcano Queue as read from the API server (metadata kept raw)."""

    metadata: dict[str, Any]
    spec: VolcanoQueueSpec = Field(default_factory=VolcanoQueueSpec)
    status: VolcanoQueueStatus = Field(default_factory=VolcanoQueueStatus)

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def uid(self) -> str:
        return str(self.metadata.get("uid", ""))

    @property
    def resource_version(self) -> str | None:
        version = self.metadata.get("resourceVersion")
        return None if version is None else str(version)

    @property
    def state(self) -> VolcanoQueueState:
        """The stated state; none (a queue Volcano never saw) or an unknown word is Open."""
        try:
            stated = VolcanoQueueState(self.status.state or VolcanoQueueState.OPEN)
        except ValueError:
            return VolcanoQueueState.OPEN
        return VolcanoQueueState.OPEN if stated is VolcanoQueueState.UNKNOWN else stated

    def status_matches(self, body: Mapping[str, Any]) -> bool:
        """Whether the stored status already says what ``body`` (:func:`status_body`) says."""
        stored = self.status
        counts = ("state", "pending", "inqueue", "running", "unknown", "completed")
        if any(getattr(stored, key) != body[key] for key in counts):
            return False
        try:
            held = parse_resource_list(stored.allocated)
        except QuantityError:
            return False
        return held == parse_resource_list(body.get("allocated"))

    @field_validator("metadata")
    @classmethod
    def _named(cls, metadata: dict[str, Any]) -> dict[str, Any]:
        name = metadata.get("name")
        if not isinstance(name, str) or not 0 < len(name) <= 253:
            raise ValueError("a queue needs a name")
        return metadata

    def terms(self) -> QueueTerms:
        """As our Queue; raises ``ValueError`` naming the field when they contradict."""
        spec = self.spec
        deserved = parse_resource_list(spec.deserved)
        kept = parse_resource_list(spec.guarantee.resource if spec.guarantee else None)
        cap = parse_resource_list(spec.capability)
        nominal = {r: max(deserved.get(r, 0), kept.get(r, 0)) for r in deserved.keys() | kept}
        for field, amounts in (("deserved", deserved), ("guarantee.resource", kept)):
            low = sorted(r for r, amount in cap.items() if amount < amounts.get(r, 0))
            if low:
                raise ValueError(f"spec.capability is below spec.{field} for {', '.join(low)}")
        parent = spec.parent if spec.parent != ROOT else None
        if parent == self.name:
            raise ValueError("spec.parent: a queue cannot be its own parent")
        return QueueTerms(
            nominal=nominal,
            max=cap,
            lending_limit={r: nominal[r] - amount for r, amount in kept.items()},
            weight=spec.weight,
            open=self.state is VolcanoQueueState.OPEN,
            parent=parent,
            reclaimable=spec.reclaimable is not False,
        )


def status_body(
    queue: VolcanoQueue, phases: Mapping[str, int], allocated: ResourceAmounts
) -> dict[str, Any]:
    """The status to write, in Volcano's words: ``phases`` counts the queue's groups by
    Volcano phase (:class:`~coscheduler.api.adapters.volcano.VolcanoPhase`)."""
    state = queue.state
    running = phases.get("Running", 0) + phases.get("Unknown", 0)
    if state is VolcanoQueueState.CLOSING and not running:
        state = VolcanoQueueState.CLOSED
    body: dict[str, Any] = {
        "state": state.value,
        "pending": phases.get("Pending", 0),
        "inqueue": phases.get("Inqueue", 0),
        "running": phases.get("Running", 0),
        "unknown": phases.get("Unknown", 0),
        "completed": phases.get("Completed", 0),
    }
    shown = {r: a for r, a in allocated.items() if a}
    if shown:
        body["allocated"] = format_resource_list(shown)
    return body
