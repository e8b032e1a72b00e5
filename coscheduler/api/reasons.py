"""The words coscheduler uses for why a group or pod is where it is.

One vocabulary for the core, the scheduling loop and the status controller:
the planner's verdict carries a :class:`Reason`, the loop writes it on pods
and events, the controller on PodGroup conditions, and the README's tables
state the same meanings. Each word has one meaning. Where the reference
coscheduling plugin, kube-scheduler or Volcano use a word for the same thing,
we use theirs (``Unschedulable``, ``FailedScheduling``, ``Scheduled``,
``NotEnoughResources``), so a user moving from them reads familiar words.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Reason"]


class Reason(StrEnum):
    """Condition and event reasons, each with one meaning."""

    # -- why a group, or a pod of ours, is not placed (conditions and events) --

    #: A pod names a PodGroup that does not exist (or that cannot be read: the
    #: message then says so, and why).
    GROUP_NOT_FOUND = "GroupNotFound"
    #: Fewer members exist than ``minMember`` or a role's minimum.
    NOT_ENOUGH_MEMBERS = "NotEnoughMembers"
    #: ``spec.minResources`` (less what bound members hold) exceeds the free
    #: capacity of schedulable nodes, so the members are not even tried.
    MIN_RESOURCES_UNAVAILABLE = "MinResourcesUnavailable"
    #: The members exist, but no placement of the needed ones fits the nodes
    #: (the message has the per-node histogram).
    NOT_ENOUGH_RESOURCES = "NotEnoughResources"
    #: ``scheduleTimeoutSeconds`` passed short of ``minMember`` bound; the
    #: message gives the reason underneath. The group keeps being retried.
    TIMEOUT = "Timeout"
    #: A pending member asks for a field coscheduler does not honour yet (an
    #: in-tree disk, resource claims, a claim waiting for its first consumer):
    #: it is not placed, and neither is its gang.
    UNSUPPORTED_FIELD = "UnsupportedField"
    #: A pending member's PersistentVolumeClaim is missing, being deleted, not
    #: bound yet (a class that binds at once), bound to a volume that does not
    #: exist, or ReadWriteOncePod and used by another pod: it waits, and so does
    #: its gang, until the claim is ready (the message names it).
    VOLUME_NOT_READY = "VolumeNotReady"
    #: coscheduler met a bug while deciding for the group (the message names the
    #: error, the log has its traceback): the group is retried with backoff and
    #: every other group is scheduled meanwhile.
    INTERNAL_ERROR = "InternalError"
    #: The group's queue (``spec.queue``, a lone pod's queue label) does not
    #: exist: the group waits until it is created.
    QUEUE_NOT_FOUND = "QueueNotFound"
    #: The group's queue is Closed: it admits no new group.
    QUEUE_CLOSED = "QueueClosed"
    #: The group's namespace may not use its queue (the queue's
    #: ``namespaces``/``namespaceSelector``): it is never placed from it.
    QUEUE_NOT_ALLOWED = "QueueNotAllowed"
    #: The queue cannot be drawn from: it has child queues, or its parents
    #: are missing or form a cycle (the message says which).
    QUEUE_INVALID = "QueueInvalid"
    #: Placing the whole group would take its queue (or a parent) over its
    #: ``max``: it waits for the queue's own groups to finish.
    QUEUE_MAX_REACHED = "QueueMaxReached"
    #: The group needs more than its queue's unused nominal quota, and the
    #: idle capacity it would borrow is held for queues under their nominal
    #: whose groups wait for it.
    QUEUE_CANNOT_BORROW = "QueueCannotBorrow"
    #: The members of one group name different schedulers (``spec.schedulerName``):
    #: none can place it whole, so ours wait until they agree.
    SCHEDULER_CONFLICT = "SchedulerConflict"
    #: On a pod's ``PodScheduled=False`` condition: more room would let it be
    #: placed (kube-scheduler's word, which the cluster-autoscaler acts on).
    #: Pods that wait for something room cannot give (members, their group)
    #: carry that reason instead, so no node is added for them.
    UNSCHEDULABLE = "Unschedulable"

    # -- a group that nothing stops (PodGroup conditions) --

    #: ``minMember`` members, and every role's minimum, are bound.
    MIN_MEMBER_SCHEDULED = "MinMemberScheduled"
    #: Not placed yet, and no attempt has failed: not tried yet, or binding.
    WAITING = "Waiting"
    #: No attempt is failing now (the ``Unschedulable`` condition is False).
    SCHEDULABLE = "Schedulable"

    # -- event reasons --

    #: Event on a pod: it was bound to a node.
    SCHEDULED = "Scheduled"
    #: Event on a pod or PodGroup: an attempt failed; the message says why.
    FAILED_SCHEDULING = "FailedScheduling"
    #: Event on an object coscheduler cannot read (a malformed quantity...); also
    #: the reason on such a pod's ``PodScheduled=False`` when the pod is ours.
    INVALID_OBJECT = "InvalidObject"
    #: Event on a Job: its ``scheduling.sigs.k8s.io/gang`` annotation (or the
    #: PodGroup it asks for) is invalid; the message says what to fix.
    INVALID_GANG = "InvalidGangAnnotation"
    #: Event on a Job: the PodGroup named after it was made for its pods.
    POD_GROUP_CREATED = "PodGroupCreated"
    #: Event on a Job: a PodGroup of its name exists that it does not own; it is
    #: left as it is, and the Job's pods join it.
    POD_GROUP_NOT_OWNED = "PodGroupNotOwned"

    # -- preemption (events, and a victim's DisruptionTarget condition) --

    #: Event on the preemptor: the victims it evicts (or, in dry-run, would evict).
    PREEMPTING = "Preempting"
    #: Event on a victim pod, and on its PodGroup: it was evicted for the preemptor.
    PREEMPTED = "Preempted"
    #: On a victim's ``DisruptionTarget`` condition: the reason kube-scheduler writes.
    PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
    #: Event on the preemptor, and the reason of a victim's ``DisruptionTarget`` turned
    #: False: a victim's eviction was refused, and its group is spared (a reason of its
    #: own, so a later ``Preempting`` event does not replace it).
    EVICTION_REFUSED = "EvictionRefused"
    #: Event on a victim group a refusal left below its ``minMember``: its room is
    #: held for its recreated members.
    ROOM_HELD = "RoomHeld"

    # -- queues (a Queue's ``Active`` condition and its events) --

    #: On a Queue's ``Active=True`` condition: groups may draw from it.
    OPEN = "Open"
    #: Event on a Queue: it became Open (Active again).
    QUEUE_OPEN = "QueueOpen"
    #: Event on a Volcano Queue: a Queue of ours has its name, and ours is the one read.
    QUEUE_SHADOWED = "QueueShadowed"

    @property
    def room_would_help(self) -> bool:
        """Whether more free capacity could end this wait."""
        return self in (Reason.NOT_ENOUGH_RESOURCES, Reason.MIN_RESOURCES_UNAVAILABLE)
