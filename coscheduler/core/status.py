"""The one result type of the core, and the words it uses.

Every decision the core makes ends in a :class:`Status`: a code that tells the
queue what to do next, a condition reason that the controller writes on the
PodGroup, a message a person can act on, and the filter that said no. The
codes are few on purpose; each one's effect on the queue is written here,
where it is defined, and :mod:`coscheduler.core.queue` does exactly that.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

__all__ = [
    "REASON_GROUP_NOT_FOUND",
    "REASON_NOT_ENOUGH_MEMBERS",
    "REASON_NOT_ENOUGH_RESOURCES",
    "REASON_SCHEDULED",
    "REASON_TIMEOUT",
    "REASON_UNSCHEDULABLE",
    "Code",
    "Status",
]


class Code(enum.Enum):
    """What happened, and so what the queue does with the group.

    - ``SUCCESS``: every needed member has a node. The group leaves the queue;
      a member still pending (beyond minMember, or that did not fit) brings it
      back through a pod event.
    - ``UNSCHEDULABLE``: the members exist but do not fit (node filters, or
      ``minResources`` above free capacity). The group backs off
      (exponentially, capped) and returns at once on an event that frees or
      adds capacity: node added or changed, pod deleted or finished.
    - ``WAITING``: the group cannot be tried yet: too few members exist, or the
      PodGroup itself does not. Time alone does not help; the group waits in
      the unschedulable pool until an event about *this* group (a pod of it
      added, the PodGroup created or changed), or the periodic flush.
    - ``ERROR``: something failed outside the decision (a binding was refused).
      The group backs off like ``UNSCHEDULABLE``.
    """

    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"
    WAITING = "Waiting"
    ERROR = "Error"


#: Condition reasons written on the PodGroup by the controller.
REASON_SCHEDULED: Final = "Scheduled"
#: The members exist but no placement of the needed ones fits the nodes.
REASON_UNSCHEDULABLE: Final = "Unschedulable"
#: Fewer members exist than minMember or a role's minimum.
REASON_NOT_ENOUGH_MEMBERS: Final = "NotEnoughMembers"
#: ``spec.minResources`` exceeds the cluster's free capacity.
REASON_NOT_ENOUGH_RESOURCES: Final = "NotEnoughResources"
#: ``scheduleTimeoutSeconds`` passed without reaching minMember bound.
REASON_TIMEOUT: Final = "Timeout"
#: A pod names a PodGroup that does not exist.
REASON_GROUP_NOT_FOUND: Final = "GroupNotFound"


@dataclass(frozen=True, slots=True)
class Status:
    """A code with its reason (a condition reason), message and filter."""

    code: Code
    reason: str = REASON_SCHEDULED
    message: str = ""
    filter: str | None = None

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS
