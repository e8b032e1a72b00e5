"""What runs now, for preemption: the running groups, and a bound on their priorities.

:func:`running_groups` collects every pod on a node into its group (the
victims' side of a search); :class:`RunningPriorities` bounds every running
group's priority from below at O(1), so a group that could only preempt a
lower priority skips the collection while nothing runs below it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from coscheduler.api.pod import PodInfo
from coscheduler.core.group import KIND_POD, GroupKey, GroupPolicy
from coscheduler.core.snapshot import Snapshot
from coscheduler.core.victims import RunningGroup, running_since

__all__ = ["RunningPriorities", "running_groups"]


class RunningPriorities:
    """A lower bound of the priority of every group running, kept as pods and groups change.

    A running group's priority is its policy's, or else its highest running
    member's (a lone pod's or another scheduler's pod's: its own), so it is
    never below the least of its running members' priorities and its policy's.
    The bound is that least over every pod on a node (not finished) and every
    policy that names a priority, kept as counts by priority: reading it costs
    the number of distinct priorities, not of pods. It may be lower than the
    truth (a waiting group's policy counts, so do the pods of the preemptor
    and pods being deleted), never higher: a skip it allows is always right.
    """

    def __init__(self) -> None:
        self._counts: Counter[int] = Counter()
        self._of: dict[str | GroupKey, int] = {}

    def pod(self, pod: PodInfo) -> None:
        """A pod was added or changed."""
        on_node = pod.node_name is not None and not pod.terminal
        self._set(pod.uid, pod.priority if on_node else None)

    def remove_pod(self, uid: str) -> None:
        self._set(uid, None)

    def group(self, key: GroupKey, priority: int | None) -> None:
        """A group's policy was added or changed (``priority``: its own, if it names one)."""
        self._set(key, priority)

    def remove_group(self, key: GroupKey) -> None:
        self._set(key, None)

    def lowest(self) -> int | None:
        """The bound; None when nothing runs and no policy names a priority."""
        return min(self._counts, default=None)

    def _set(self, who: str | GroupKey, priority: int | None) -> None:
        before = self._of.pop(who, None)
        if before is not None:
            self._counts[before] -= 1
            if not self._counts[before]:
                del self._counts[before]
        if priority is not None:
            self._of[who] = priority
            self._counts[priority] += 1


def running_groups(
    pods: Iterable[PodInfo],
    snapshot: Snapshot,
    group_of: Callable[[str], GroupKey | None],
    policy_of: Callable[[GroupKey], GroupPolicy | None],
    preemptor: GroupKey,
    queue_of: Callable[[GroupKey], str] | None = None,
    going: Callable[[str], bool] | None = None,
) -> list[RunningGroup]:
    """Every pod running on a node now, in its group (others' pods and lone pods one by one).

    Pods being deleted or already ordered evicted (``going``) are no victims:
    they are going anyway. A group with a binding in flight is no victim at
    all: its unit would miss the member on its way, which would then land
    alone in a gang evicted whole.
    """

    members: dict[GroupKey, list[PodInfo]] = {}
    ours: set[GroupKey] = set()
    arriving: set[GroupKey] = set()
    node_of, assumed = snapshot.node_of, snapshot.is_assumed
    for pod in pods:
        in_flight = assumed(pod.uid)
        if pod.node_name is None and not in_flight:
            continue
        key = group_of(pod.uid)
        if key is None:
            key = GroupKey(pod.namespace, pod.name, KIND_POD)  # another scheduler's pod
        else:
            ours.add(key)
        if in_flight:
            arriving.add(key)
            continue
        # Counting on a node (so not terminal), and not on its way out.
        if pod.deleting or node_of(pod.uid) is None or (going is not None and going(pod.uid)):
            continue
        if key != preemptor:
            members.setdefault(key, []).append(pod)
    result = []
    for key, running in members.items():
        if key in arriving:
            continue
        policy = None if key.kind == KIND_POD else policy_of(key)
        top = max(pod.priority for pod in running)
        queue = queue_of(key) if queue_of is not None and key in ours else None
        if policy is None:
            gang = key.kind != KIND_POD
            minimum = len(running) if gang else 1
            result.append(RunningGroup(key, tuple(running), minimum, top, gang, None, queue))
            continue
        priority = top if policy.priority is None else policy.priority
        protected = None
        if policy.min_run_seconds:
            starts = sorted(running_since(pod) for pod in running)
            whole_since = starts[min(policy.min_member, len(starts)) - 1]
            protected = whole_since + policy.min_run_seconds
        roles = tuple(sorted(policy.role_minimums.items()))
        result.append(
            RunningGroup(
                key,
                tuple(running),
                policy.min_member,
                priority,
                True,
                protected,
                queue,
                whole_only=policy.evict_whole,
                role_minimums=roles,
                roles_apart=policy.roles_apart,
            )
        )
    return result
