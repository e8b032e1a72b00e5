"""The one group model, and what an adapter of an external PodGroup shape provides.

Several APIs define a PodGroup: ours (``scheduling.sigs.k8s.io``) and the one
scheduler-plugins moved to (``scheduling.x-k8s.io``), which the Kubeflow and
Spark operators create. Everything past the watch works on :class:`GroupObject`:
our spec and status models, which can say all that any of these shapes says.
An adapter translates one wire shape in (spec and status) and out (status),
so nothing else needs to know where a group came from.

Kubernetes' own ``Workload`` holds several gangs in one object, so it has no
``parse`` into one group: its adapter (``workload.py``) is a
:class:`StatusAdapter` only, and makes one :class:`GroupObject` per gang.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from coscheduler.api.adapters.apis import GroupApi
from coscheduler.api.native_podgroup import NativePodGroup
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import ObjectMetadata, PodGroupSpec, PodGroupStatus

if TYPE_CHECKING:
    # The composite's module reads its API's name from here.
    from coscheduler.api.composite import CompositeGang

__all__ = [
    "GroupAdapter",
    "GroupApi",
    "GroupObject",
    "StatusAdapter",
    "StatusInMemory",
    "foreign_group",
]


class StatusAdapter(Protocol):
    """Translates our status to and from one API's shape."""

    @property
    def api(self) -> GroupApi: ...

    @property
    def shared(self) -> bool:
        """Other schedulers may use this API too: write a group's status only
        when some member is ours, never over another scheduler's controller."""
        ...

    def read_status(self, wire: Mapping[str, Any]) -> PodGroupStatus:
        """The wire status as our model, as far as this shape holds it.

        Raises ``ValueError`` when it cannot be read.
        """
        ...

    def stored_form(self, wire: Mapping[str, Any]) -> object:
        """A value equal for two wire statuses exactly when they say the same
        thing in this API (None if unreadable): the writer writes only when it
        changes."""
        ...

    def conclude(self, status: PodGroupStatus) -> PodGroupStatus:
        """Our derived status with what this API adds to it (Kubernetes' own
        PodGroup: its placement condition, kept among the others); as it is
        for most."""
        ...

    def render_status(self, status: PodGroupStatus, members: Sequence[PodInfo]) -> dict[str, Any]:
        """``status`` in this API's wire shape: the body of a merge patch of ``/status``."""
        ...


class StatusInMemory:
    """The status side of gangs whose object has no place for ours (a Workload's): it is
    held in memory and never written, so the writer tells its transitions by events."""

    #: What the server holds of our status, for every object: nothing.
    NOTHING_STORED: ClassVar[str] = "no place for our status"

    def read_status(self, wire: Mapping[str, Any]) -> PodGroupStatus:
        del wire  # nothing of ours is there
        return PodGroupStatus()

    def stored_form(self, wire: Mapping[str, Any]) -> object:
        del wire
        return self.NOTHING_STORED

    def conclude(self, status: PodGroupStatus) -> PodGroupStatus:
        return status

    def render_status(self, status: PodGroupStatus, members: Sequence[PodInfo]) -> dict[str, Any]:
        del status, members
        return {}


class GroupAdapter(StatusAdapter, Protocol):
    """Translates one API's PodGroup to and from :class:`GroupObject`."""

    def parse(self, raw: Mapping[str, Any]) -> GroupObject:
        """The object as our model; raises ``ValueError`` (pydantic's
        ``ValidationError`` is one) naming what cannot be read."""
        ...


@dataclass(frozen=True, slots=True)
class GroupObject(ObjectMetadata):
    """A PodGroup of any served API, as coscheduler sees it.

    ``status`` is ours in full, as last derived (or read, before we derived
    any): it carries what a poorer shape cannot hold, such as conditions, so
    that transitions are judged against what we last concluded. ``stored`` is
    what the API server holds, in the adapter's :meth:`~StatusAdapter.stored_form`:
    a write is needed exactly when the new status's form differs. ``within``
    says which gang of the object this is when it holds several (a Workload's
    ``podGroup workers replica r1``): events on the object name it.
    """

    adapter: StatusAdapter = dataclasses.field(compare=False)
    metadata: Mapping[str, Any]
    spec: PodGroupSpec
    status: PodGroupStatus
    stored: object
    within: str = ""
    #: Kubernetes' own PodGroup as read, with what our spec has no field for
    #: (disruption mode, preemption policy, its Workload and parent); None for others.
    native: NativePodGroup | None = None
    #: A CompositePodGroup's gang: the composite as read, and why it waits as it
    #: is (:mod:`coscheduler.api.composite`); None for others.
    composite: CompositeGang | None = None

    @property
    def api(self) -> GroupApi:
        return self.adapter.api

    def with_status(self, status: PodGroupStatus, stored: object) -> GroupObject:
        """The same object with our status moved on, and what the server now holds."""
        return dataclasses.replace(self, status=status, stored=stored)


def foreign_group(
    adapter: StatusAdapter, raw: Mapping[str, Any], metadata: Mapping[str, Any], spec: PodGroupSpec
) -> GroupObject:
    """A group of another API read into ours: its stored status as far as we can read it.

    A status we cannot read (another scheduler's, or odd) is taken as empty:
    ours replaces it at the next write, and the group is not lost over it.
    """
    stored = raw.get("status") or {}
    try:
        status = adapter.read_status(stored)
    except ValueError:
        status = PodGroupStatus()
    return GroupObject(adapter, metadata, spec, status, adapter.stored_form(stored))
