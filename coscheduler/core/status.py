"""The one result type of the core, and the words it uses.

Every decision the core makes ends in a :class:`Status`: a code that tells the
queue what to do next, a :class:`~coscheduler.api.reasons.Reason` (the one
vocabulary the loop and the controller write on pods and PodGroups), a
message a person can act on, and the filter that said no. The
codes are few on purpose; each one's effect on the queue is written here,
where it is defined, and :mod:`coscheduler.core.queue` does exactly that.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from coscheduler.api.reasons import Reason

__all__ = ["Code", "Status"]


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
    - ``ERROR``: something failed outside the decision (a binding was refused),
      or the decision itself raised (``InternalError``). The group backs off
      like ``UNSCHEDULABLE``.
    """

    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"
    WAITING = "Waiting"
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class Status:
    """A code with its reason, message and the filter that said no.

    ``cause`` is the reason underneath a ``Timeout``: what kept the group from
    being placed all that time (so a pod can say whether room would help).
    """

    code: Code
    reason: Reason = Reason.MIN_MEMBER_SCHEDULED
    message: str = ""
    filter: str | None = None
    cause: Reason | None = None

    @property
    def room_would_help(self) -> bool:
        """Whether more free capacity could end the wait this status reports."""
        return (self.cause or self.reason).room_would_help

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS
