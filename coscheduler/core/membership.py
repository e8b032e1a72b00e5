"""Who belongs to which group, and whether each member is pending or bound.

The scheduler files every pod it is told about here; the rules say which
group a pod joins and in what state. In order:

1. Only pods whose ``spec.schedulerName`` is ours are members; every bound,
   non-terminal pod counts in the snapshot whoever bound it.
2. A member is *bound* when it has a node or is assumed on one (binding in
   flight), and is not terminal.
2b. A bound member counts toward ``minMember`` only while it *stands*: not
   being deleted and not ordered evicted by a preemption. A gang whose
   members are going is not running: the members that replace them wait
   for a placement that makes the gang whole without the ones going, never
   one by one into the room the evictions free (issue #26).
3. A member is *pending* when it has no node, is not terminal, is not
   being deleted and has no scheduling gates (a gated pod is placed by nobody
   until its gates are removed; until then it is not a member to place).
4. A pod joins the group its labels name, in its namespace; else the gang of
   a Workload its ``spec.workloadRef`` names (the runtime leaves the reference
   only on pods of a ``gang`` podGroup, or of one it does not know yet); else
   it is a gang of one. A pod naming a group that does not exist waits for it
   (``GroupNotFound``), unless ``lone_when_group_missing`` is set.
5. A pod without a group label whose controlling owner is a Job that asks for
   a gang (or is not known yet) joins the group named after the Job
   (``PodInfo.owner_group``, set by :mod:`~coscheduler.core.owners`' rule),
   even if it also names a native group or Workload (1.37's Job controller
   gives every Job's pods one); it waits for that group whatever
   ``lone_when_group_missing`` says.

:class:`Membership` holds the pods, the groups' policies and each group's
members; it knows nothing of queues, quota or the planner.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import DEFAULT_QUEUE
from coscheduler.api.queue import pod_queue_name
from coscheduler.core.group import KIND_POD, GroupKey, GroupPolicy

__all__ = ["Filed", "Members", "Membership", "State"]


class State(enum.Enum):
    """Where a member is filed (rules 2 and 3)."""

    PENDING = "pending"
    BOUND = "bound"


@dataclass(slots=True)
class Members:
    """One group's members."""

    pending: dict[str, PodInfo] = field(default_factory=dict)
    bound: dict[str, PodInfo] = field(default_factory=dict)
    #: The pending members' requests added up (the group's demand on its queue),
    #: kept by :class:`~coscheduler.core.accounting.Accounts` while it counts.
    demand: dict[str, int] = field(default_factory=dict)


class Filed(NamedTuple):
    """What filing one pod changed: the group it left, and its pending self there."""

    previous: GroupKey | None
    #: The pod as it was pending in ``previous`` (None: it was not pending there).
    left: PodInfo | None
    #: It was pending before and is still filed in the same group.
    was_pending: bool
    #: It was bound before and is still bound in the same group: its group's pending
    #: members, and so its queue entry, are as they were (a bound pod's progress).
    stayed_bound: bool = False


class Membership:
    """Pods, group policies and each group's pending and bound members (rules 1-5, 2b)."""

    def __init__(
        self,
        scheduler_name: str,
        *,
        lone_when_group_missing: bool,
        assumed: Callable[[str], bool],
        doomed: Callable[[str], bool],
    ) -> None:
        self._scheduler_name = scheduler_name
        self._lone_when_group_missing = lone_when_group_missing
        #: A binding is in flight for the pod (the snapshot assumes it on a node).
        self._assumed = assumed
        #: The pod was ordered evicted and is not gone yet (rule 2b).
        self._doomed = doomed
        self.policies: dict[GroupKey, GroupPolicy] = {}
        self.pods: dict[str, PodInfo] = {}
        self._member_of: dict[str, GroupKey] = {}
        self._members: dict[GroupKey, Members] = {}
        #: Volume claim key (namespace/name) -> the pods that use it.
        self._claim_users: dict[str, set[str]] = {}
        #: The pods naming each ResourceClaim (``namespace/name``): a new claim wakes theirs.
        self._device_claim_users: dict[str, set[str]] = {}

    # -- reading -------------------------------------------------------------

    def pod(self, uid: str) -> PodInfo | None:
        return self.pods.get(uid)

    def group_of(self, uid: str) -> GroupKey | None:
        return self._member_of.get(uid)

    def groups(self) -> Iterator[GroupKey]:
        """Every group with a member filed."""
        return iter(list(self._members))

    def record(self, key: GroupKey) -> Members | None:
        """The group's members as kept (for the scheduler and its accounts only)."""
        return self._members.get(key)

    def policy(self, key: GroupKey) -> GroupPolicy | None:
        """The group's policy; a lone pod's is derived from the pod."""
        if key.kind == KIND_POD:
            members = self._members.get(key)
            pods = [*members.pending.values(), *members.bound.values()] if members else []
            return GroupPolicy.lone(pods[0]) if pods else None
        return self.policies.get(key)

    def members(self, key: GroupKey) -> tuple[list[PodInfo], list[PodInfo]]:
        """The group's pending and bound members (rules 2 and 3)."""
        members = self._members.get(key)
        if members is None:
            return [], []
        return list(members.pending.values()), list(members.bound.values())

    def standing(self, key: GroupKey) -> tuple[list[PodInfo], list[PodInfo]]:
        """The group's pending members, and the bound ones it can count on: not being
        deleted and not ordered evicted (rule 2b)."""
        pending, bound = self.members(key)
        doomed = self._doomed
        return pending, [pod for pod in bound if not pod.deleting and not doomed(pod.uid)]

    def queue_name(self, key: GroupKey) -> str:
        """The queue a group draws from: its policy's, a lone pod's label's, else default."""
        if key.kind == KIND_POD:
            pod = self._any_member(key)
            return pod_queue_name(pod.labels if pod is not None else None)
        policy = self.policies.get(key)
        return policy.queue if policy is not None else DEFAULT_QUEUE

    def _any_member(self, key: GroupKey) -> PodInfo | None:
        members = self._members.get(key)
        if members is None:
            return None
        return next(iter(members.pending.values()), None) or next(
            iter(members.bound.values()), None
        )

    # -- the rules -----------------------------------------------------------

    def place_of(self, pod: PodInfo) -> tuple[GroupKey | None, State | None]:
        """Rules 1-5: the pod's group and whether it is pending or bound there."""
        if pod.scheduler_name != self._scheduler_name or pod.terminal:
            return None, None
        key = GroupKey.of_pod(pod)
        labelled = pod.group is not None  # rule 5: a group by owner is never skipped
        if self._lone_when_group_missing and labelled and key not in self.policies:
            key = GroupKey(pod.namespace, pod.name, KIND_POD)
        if pod.node_name is not None or self._assumed(pod.uid):
            return key, State.BOUND
        if pod.deleting or pod.gated:
            return None, None
        return key, State.PENDING

    # -- changing ------------------------------------------------------------

    def file(self, pod: PodInfo, key: GroupKey | None, state: State | None) -> Filed:
        """Put the pod in its group's pending or bound set (nowhere: ``key`` None)."""
        previous = self._member_of.pop(pod.uid, None)
        left: PodInfo | None = None
        was_bound = False
        if previous is not None:
            members = self._members[previous]
            left = members.pending.pop(pod.uid, None)
            was_bound = members.bound.pop(pod.uid, None) is not None
        if key is not None and state is not None:
            members = self._members.setdefault(key, Members())
            (members.pending if state is State.PENDING else members.bound)[pod.uid] = pod
            self._member_of[pod.uid] = key
        same = previous == key
        return Filed(
            previous, left, left is not None and same, was_bound and same and state is State.BOUND
        )

    def use_claims(self, pod: PodInfo) -> None:
        """Note the claims the pod uses: its volume claims, and the ResourceClaims it names."""
        for users, key in _claim_keys(self._claim_users, self._device_claim_users, pod):
            users.setdefault(key, set()).add(pod.uid)

    def release_claims(self, pod: PodInfo) -> None:
        """The pod is gone: it uses its claims no more."""
        for users, key in _claim_keys(self._claim_users, self._device_claim_users, pod):
            uids = users.get(key)
            if uids is not None:
                uids.discard(pod.uid)
                if not uids:
                    del users[key]

    def device_claim_users(self, key: str) -> Collection[str]:
        """The pods naming the ResourceClaim ``namespace/name``."""
        return self._device_claim_users.get(key, ())

    def claim_users(self) -> list[str]:
        """The uid of every pod that uses a claim, once per claim it uses."""
        return [uid for uids in list(self._claim_users.values()) for uid in list(uids)]

    def claim_used_by_other(self, claim: str, uid: str) -> bool:
        """Another pod, bound or on its way, uses the claim (namespace/name)."""
        for other in self._claim_users.get(claim, ()):
            pod = self.pods.get(other)
            if other == uid or pod is None or pod.terminal:
                continue
            if pod.bound or self._assumed(other):
                return True
        return False

    def drop_if_empty(self, key: GroupKey) -> None:
        """Forget a group's record once it has no member at all."""
        members = self._members.get(key)
        if members is not None and not members.pending and not members.bound:
            del self._members[key]


def _claim_keys(
    volume_users: dict[str, set[str]], device_users: dict[str, set[str]], pod: PodInfo
) -> Iterator[tuple[dict[str, set[str]], str]]:
    """Each claim the pod uses, with the index that keeps its users."""
    for claim in pod.claims:
        yield volume_users, f"{pod.namespace}/{claim}"
    for entry in pod.device_claims:
        if entry.claim is not None:
            yield device_users, f"{pod.namespace}/{entry.claim}"
