"""The queue of groups waiting to be placed.

Why three pools (as kube-scheduler's scheduling queue): a group that just
failed should not be retried in a hot loop, yet it must be retried at once
when the cluster changes in a way that can help it, and never forgotten.

- *active*: ready to try, one heap per queue (:mod:`~coscheduler.core.quota`);
  the next group comes from the queue that stands lowest (``Quotas.share``; ties
  by queue name), and within it in the order (numbered rule)
  1. priority, highest first;
  2. group creation time, oldest first;
  3. ``namespace/name`` (then kind), so the order is total and deterministic.
- *backoff*: failed with ``ERROR``, or ``UNSCHEDULABLE`` for a reason no hint
  describes; each consecutive failure doubles the wait from
  ``initial_backoff_seconds`` up to ``max_backoff_seconds`` (kube-scheduler:
  1 s to 10 s); moved to active when the wait ends, or at once by a capacity
  event.
- *gathering*: fewer members exist than its minimum, and it was tried (or
  first seen) less than ``gather_seconds`` ago
  (:meth:`~coscheduler.core.scheduler.Scheduler.next_decision` defers it): a
  Job makes its pods within a second, and each attempt in between would only
  tell its pods and its PodGroup a count about to change (114-128 attempts a
  trial of the contention benchmark without it, 7-10 with it). Its last member
  moves it to active at once (an event about the group); otherwise it is
  tried, and its members told, when the time is up.
- *unschedulable*: time alone does not help. ``WAITING`` for members or for
  its PodGroup: only an event about the group itself moves it to active. Refused
  for room with what it waits for kept beside it (:class:`~coscheduler.core.requeue.Wants`):
  only a change that could let one of its members in (:meth:`GroupQueue.wake`,
  decided by :mod:`~coscheduler.core.requeue`). Either way, the periodic flush
  after ``unschedulable_flush_seconds`` retries it too: a missed hint costs
  latency, never a stuck group.

Which events help whom (:meth:`GroupQueue.on_event`):

- capacity events (node added or changed, pod deleted or finished): every
  group in backoff (the unschedulable ones by their hints);
- devices or volumes changed: every group in backoff, and the unschedulable
  ones whose members use devices or volume claims;
- a group's own events (a member pod added or changed, the PodGroup created
  or changed): that group, from any pool;
- a queue changed (created, deleted, opened, its quota or namespaces): every
  group in backoff and unschedulable.

Time comes from an injected clock (seconds, monotonic), never from ``time``:
tests move it by hand. Every operation is O(log n) but a capacity event,
which is O(k log n) for the k groups it wakes.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Callable
from dataclasses import dataclass

from coscheduler.api.podgroup import DEFAULT_QUEUE
from coscheduler.core.group import GroupKey
from coscheduler.core.requeue import Wants
from coscheduler.core.status import Code

__all__ = ["ClusterEvent", "GroupQueue", "QueueOrder", "QueueSettings"]

#: Sort key of rules 1-3: (-priority, created, namespace, name, kind).
QueueOrder = tuple[int, float, str, str, str]


def order_of(key: GroupKey, priority: int, created: float) -> QueueOrder:
    """The active heap's key for a group (rules 1-3)."""
    return (-priority, created, key.namespace, key.name, key.kind)


class ClusterEvent(enum.Enum):
    """Cluster changes that can make a waiting group placeable."""

    NODE_ADDED = "NodeAdded"
    NODE_CHANGED = "NodeChanged"
    POD_DELETED = "PodDeleted"
    POD_FINISHED = "PodFinished"
    BINDING_FAILED = "BindingFailed"
    #: A PersistentVolumeClaim, PersistentVolume or StorageClass changed.
    VOLUME_CHANGED = "VolumeChanged"
    #: A ResourceSlice, DeviceClass or ResourceClaim changed (DRA): devices may be free.
    DEVICE_CHANGED = "DeviceChanged"
    #: A namespace's labels changed (pod affinity terms may select by them).
    NAMESPACE_CHANGED = "NamespaceChanged"
    #: About one group only: a member added or changed, the PodGroup created or changed.
    GROUP_CHANGED = "GroupChanged"
    #: A Queue was created, changed or deleted (or a namespace label queues select by).
    QUEUE_CHANGED = "QueueChanged"


CAPACITY_EVENTS = frozenset(
    {
        ClusterEvent.NODE_ADDED,
        ClusterEvent.NODE_CHANGED,
        ClusterEvent.POD_DELETED,
        ClusterEvent.POD_FINISHED,
        ClusterEvent.BINDING_FAILED,
        ClusterEvent.DEVICE_CHANGED,
    }
)

#: The unschedulable groups (refused for room) these events wake besides the backoff pool.
_WANTED_BY: dict[ClusterEvent, Callable[[Wants], bool]] = {
    ClusterEvent.DEVICE_CHANGED: lambda wants: wants.devices,
    ClusterEvent.VOLUME_CHANGED: lambda wants: wants.volumes,
}


@dataclass(frozen=True, slots=True)
class Woken:
    """Why a hint woke a group: what it waits for, since when, and the nodes changed."""

    wants: Wants
    since: float
    opened: frozenset[str]


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """Backoff and flush timings, all in seconds."""

    #: The wait after a group's first failure.
    initial_backoff_seconds: float = 1.0
    #: The cap on the doubling wait.
    max_backoff_seconds: float = 10.0
    #: How long a group stays unschedulable without an event that can help it (the
    #: safety net under the hints).
    unschedulable_flush_seconds: float = 300.0
    #: How long a group short of members gathers them between two attempts (*gathering*).
    gather_seconds: float = 1.0


class GroupQueue:
    """Active, backoff and unschedulable pools of groups (see the module docstring)."""

    def __init__(
        self,
        clock: Callable[[], float],
        settings: QueueSettings | None = None,
        share: Callable[[str], float] | None = None,
    ) -> None:
        self._clock = clock
        self.settings = settings or QueueSettings()
        #: A queue's weighted share of the cluster: the lowest goes first.
        self._share = share or (lambda _queue: 0.0)
        self._order: dict[GroupKey, QueueOrder] = {}
        self._queue_of: dict[GroupKey, str] = {}
        self._attempts: dict[GroupKey, int] = {}
        self._active: dict[str, list[tuple[QueueOrder, GroupKey]]] = {}
        self._in_active: dict[GroupKey, QueueOrder] = {}
        self._backoff: list[tuple[float, QueueOrder, GroupKey]] = []
        self._backoff_until: dict[GroupKey, float] = {}
        self._waiting: list[tuple[float, QueueOrder, GroupKey]] = []
        self._waiting_since: dict[GroupKey, float] = {}
        self._gathering: list[tuple[float, QueueOrder, GroupKey]] = []
        self._gathering_until: dict[GroupKey, float] = {}
        #: What each unschedulable group refused for room waits for (its hint).
        self._wants: dict[GroupKey, Wants] = {}
        #: Active groups a hint woke, with what woke them: checked again when popped.
        self._woken: dict[GroupKey, Woken] = {}
        # Popped and not yet done; and those an event reached meanwhile.
        self._in_flight: set[GroupKey] = set()
        self._woken_in_flight: set[GroupKey] = set()

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, key: object) -> bool:
        return key in self._order

    def pool(self, key: GroupKey) -> str | None:
        """``active``, ``backoff``, ``unschedulable`` or None (tests, metrics)."""
        if key in self._in_active:
            return "active"
        if key in self._backoff_until:
            return "backoff"
        if key in self._waiting_since:
            return "unschedulable"
        if key in self._gathering_until:
            return "gathering"
        if key in self._in_flight:
            return "in-flight"
        return None

    def entries(self) -> list[tuple[GroupKey, str, QueueOrder]]:
        """Every queued group with its queue and order, whatever its pool (positions)."""
        queue_of = self._queue_of
        return [
            (key, queue_of.get(key, DEFAULT_QUEUE), order) for key, order in self._order.items()
        ]

    def share(self, queue: str) -> float:
        """The queue's share as :meth:`pop` ranks queues by it (lowest first)."""
        return self._share(queue)

    def attempts(self, key: GroupKey) -> int:
        return self._attempts.get(key, 0)

    def sizes(self) -> dict[str, int]:
        return {
            "active": len(self._in_active),
            "backoff": len(self._backoff_until),
            "unschedulable": len(self._waiting_since),
            "gathering": len(self._gathering_until),
        }

    def add(self, key: GroupKey, priority: int, created: float, queue: str = DEFAULT_QUEUE) -> None:
        """Queue a group, or refresh its order or queue; a new group goes to active.

        A group already backing off, or being tried, keeps its place (its order
        is updated).
        """
        order = order_of(key, priority, created)
        known = key in self._order
        if known and self._order[key] == order and self._queue_of.get(key) == queue:
            return
        self._order[key] = order
        self._queue_of[key] = queue
        if key in self._in_active or not known:
            self._push_active(key)

    def remove(self, key: GroupKey) -> None:
        """Drop a group from every pool (deleted, or nothing left to place)."""
        self._order.pop(key, None)
        self._queue_of.pop(key, None)
        self._attempts.pop(key, None)
        self._in_active.pop(key, None)
        self._backoff_until.pop(key, None)
        self._waiting_since.pop(key, None)
        self._gathering_until.pop(key, None)
        self._wants.pop(key, None)
        self._woken.pop(key, None)
        self._in_flight.discard(key)
        self._woken_in_flight.discard(key)

    def parked(self) -> list[tuple[GroupKey, Wants]]:
        """The unschedulable groups refused for room, with what each waits for."""
        return list(self._wants.items())

    def wake(self, key: GroupKey, opened: frozenset[str] = frozenset()) -> None:
        """A change (on the ``opened`` nodes) can help this group refused for room: to active."""
        wants = self._wants.pop(key, None)
        if wants is not None:
            since = self._waiting_since.pop(key)
            self._push_active(key)
            if opened:
                self._woken[key] = Woken(wants, since, opened)

    def woken(self, key: GroupKey) -> Woken | None:
        """What woke a group just popped, if a hint did (once)."""
        return self._woken.pop(key, None)

    def park(self, key: GroupKey, woken: Woken) -> None:
        """A popped group the hint woke for turned out not to fit after all (the room
        went to a group tried before it): unschedulable again, its flush time kept."""
        self._in_flight.discard(key)
        self._woken_in_flight.discard(key)
        if key not in self._order:
            return
        self._wants[key] = woken.wants
        self._waiting_since[key] = woken.since
        heapq.heappush(self._waiting, (woken.since, self._order[key], key))

    def gather(self, key: GroupKey, until: float) -> None:
        """A popped group short of members, not tried before ``until`` unless an event
        about it comes first (*gathering*)."""
        self._in_flight.discard(key)
        self._woken_in_flight.discard(key)
        if key not in self._order:
            return
        self._gathering_until[key] = until
        heapq.heappush(self._gathering, (until, self._order[key], key))

    def pop(self) -> GroupKey | None:
        """The next group to try, after moving groups whose wait is over to active."""
        self._flush()
        while self._active:
            if len(self._active) == 1:
                queue = next(iter(self._active))
            else:
                queue = min(self._active, key=lambda name: (self._share(name), name))
            heap = self._active[queue]
            while heap:
                order, key = heapq.heappop(heap)
                if self._in_active.get(key) == order and self._queue_of.get(key) == queue:
                    del self._in_active[key]
                    self._in_flight.add(key)
                    if not heap:
                        del self._active[queue]
                    return key
            del self._active[queue]
        return None

    def peek_ready(self) -> float | None:
        """When the next backed-off or waiting group becomes ready (for a timer).

        Entries a group left behind (woken by an event, placed, removed) are dropped
        first: one at the top would hide the groups behind it, and the loop would
        sleep without a timer until some unrelated event.
        """
        backoff, waiting, gathering = self._backoff, self._waiting, self._gathering
        while backoff and self._backoff_until.get(backoff[0][2]) != backoff[0][0]:
            heapq.heappop(backoff)
        while waiting and self._waiting_since.get(waiting[0][2]) != waiting[0][0]:
            heapq.heappop(waiting)
        while gathering and self._gathering_until.get(gathering[0][2]) != gathering[0][0]:
            heapq.heappop(gathering)
        times = [backoff[0][0]] if backoff else []
        if gathering:
            times.append(gathering[0][0])
        if waiting:
            times.append(waiting[0][0] + self.settings.unschedulable_flush_seconds)
        return min(times) if times else None

    def done(self, key: GroupKey, code: Code, wants: Wants | None = None) -> None:
        """Record the outcome of the attempt on a popped group (see :class:`Code`).

        An ``UNSCHEDULABLE`` group with ``wants`` (what could let it in) waits
        unschedulable for a change that matches them; without, it backs off.
        A failed group that an event reached while it was being tried goes back
        to active at once: the event may have changed what the attempt saw.
        """
        self._in_flight.discard(key)
        woken = key in self._woken_in_flight
        self._woken_in_flight.discard(key)
        if key not in self._order:
            return
        now = self._clock()
        if code is not Code.SUCCESS and woken:
            self._attempts[key] = self._attempts.get(key, 0) + 1
            self._push_active(key)
            return
        if code is Code.SUCCESS:
            self._attempts.pop(key, None)
            self._order.pop(key, None)
            self._queue_of.pop(key, None)
            return
        if code is Code.WAITING or (code is Code.UNSCHEDULABLE and wants is not None):
            if wants is not None:
                self._wants[key] = wants
                self._attempts[key] = self._attempts.get(key, 0) + 1
            self._waiting_since[key] = now
            heapq.heappush(self._waiting, (now, self._order[key], key))
            return
        attempts = self._attempts.get(key, 0) + 1
        self._attempts[key] = attempts
        wait = min(
            self.settings.initial_backoff_seconds * 2 ** (attempts - 1),
            self.settings.max_backoff_seconds,
        )
        self._backoff_until[key] = now + wait
        heapq.heappush(self._backoff, (now + wait, self._order[key], key))

    def requeue(self, key: GroupKey, code: Code) -> None:
        """Put a known group in the pool an attempt ending with ``code`` leads to."""
        if key not in self._order or key in self._in_flight:
            return
        self._in_active.pop(key, None)
        self._backoff_until.pop(key, None)
        self._waiting_since.pop(key, None)
        self._gathering_until.pop(key, None)
        self._wants.pop(key, None)
        self.done(key, code)

    def on_event(self, event: ClusterEvent, key: GroupKey | None = None) -> int:
        """Move the groups this event can help to active; how many moved."""
        if event is ClusterEvent.GROUP_CHANGED:
            if key is None or key not in self._order or key in self._in_active:
                return 0
            if key in self._in_flight:
                self._woken_in_flight.add(key)
                return 0
            self._backoff_until.pop(key, None)
            self._waiting_since.pop(key, None)
            self._gathering_until.pop(key, None)
            self._wants.pop(key, None)
            self._push_active(key)
            return 1
        self._woken_in_flight |= self._in_flight
        moved = list(self._backoff_until)
        for group in moved:
            del self._backoff_until[group]
            self._push_active(group)
        self._backoff.clear()
        if event is ClusterEvent.QUEUE_CHANGED:
            waiting = list(self._waiting_since)
            for group in waiting:
                del self._waiting_since[group]
                self._push_active(group)
            self._waiting.clear()
            self._wants.clear()
            moved += waiting
        elif event in _WANTED_BY:
            uses = _WANTED_BY[event]
            woken = [group for group, wants in self._wants.items() if uses(wants)]
            for group in woken:
                self.wake(group)
            moved += woken
        return len(moved)

    def _push_active(self, key: GroupKey) -> None:
        self._woken.pop(key, None)
        order = self._order[key]
        self._in_active[key] = order
        heap = self._active.setdefault(self._queue_of.get(key, DEFAULT_QUEUE), [])
        heapq.heappush(heap, (order, key))

    def _flush(self) -> None:
        now = self._clock()
        while self._backoff and self._backoff[0][0] <= now:
            until, _, key = heapq.heappop(self._backoff)
            if self._backoff_until.get(key) == until:
                del self._backoff_until[key]
                self._push_active(key)
        while self._gathering and self._gathering[0][0] <= now:
            until, _, key = heapq.heappop(self._gathering)
            if self._gathering_until.get(key) == until:
                del self._gathering_until[key]
                self._push_active(key)
        horizon = now - self.settings.unschedulable_flush_seconds
        while self._waiting and self._waiting[0][0] <= horizon:
            since, _, key = heapq.heappop(self._waiting)
            if self._waiting_since.get(key) == since:
                del self._waiting_since[key]
                self._wants.pop(key, None)
                self._push_active(key)
