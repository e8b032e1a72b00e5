"""Preemption between attempts: when to search, the hold, no thrash, orders for the runtime.

The scheduler asks :class:`Preemptions` around each attempt of a group:

1. :meth:`~Preemptions.lift` before it: a group holding room (its planned
   nodes, set aside while its victims terminate) gets that room back for its
   own attempt.
2. :meth:`~Preemptions.settle` after it, with the decision:

   - placed: the hold (if any) is done; the decision carries the time since
     the plan (``preemption_waited``);
   - not placed for lack of room while a hold stands (its victims still on
     their nodes, and for at most ``hold_seconds``): the room is held again
     and nothing more is evicted for it (no second round of evictions for
     the same room); not placed for another reason (its queue refuses it
     now): the hold is let go;
   - not placed for lack of room, no hold: a search
     (:func:`~coscheduler.core.preemption.search.find_plan`). With a plan
     and ``on``, the preemptor's members are *nominated*: each is assumed
     on its planned node under a placeholder uid (so the room counts as
     taken, whoever looks), and the decision carries an order to evict
     (:class:`~coscheduler.core.decision.Order`). With ``dry-run`` it carries
     the plan to show, nothing is held. The devices (DRA) the plan's trial
     gave the members are assumed under the same placeholders: once the
     victims' claims let them go, no other group can take them first.

   The decision also carries whether a search found a plan, and its status
   message says what preemption does for the group (:meth:`~Preemptions.told`).

Cost: collecting the running groups (:func:`~.running.running_groups`) visits
every pod (at 20,000 running pods, tens of milliseconds). So a group that could
only preempt a lower priority does not search while nothing runs below it:
:class:`~.running.RunningPriorities`,
kept by the scheduler as pods and groups change, bounds every running
group's priority from below at O(1) (a cluster of equal priorities pays
nothing); and the lowest priority a search saw is remembered for
``FLOOR_SECONDS``, for a bound that is looser than the truth (a waiting
group of low priority counts in it).

Thrash: victim groups of a preemptor are not chosen again while it waits
(they may come back, recreated by their Job, and run elsewhere); groups
whose eviction the runtime found refused (a disruption budget) are not
chosen again for that preemptor either. Both are forgotten once it is placed
or gone.

A refusal halfway: the runtime evicts a victim gang one member first, then
the rest, so a refusal mostly comes before the gang lost anything. When it
comes after (a budget changed between two evictions, or the API server
failed one), the gang is below its ``minMember`` with members still
running, and nothing may finish it off (its budget, or the failure, says
no). So :meth:`~Preemptions.failed` gives it back what it lost: the room of
its evicted members is *restored*, held for the gang as a preemptor's room
is (placeholders on their nodes, lifted for the gang's own attempts, its
queue's usage for the others), until its recreated members are placed, it
has no member left, or ``hold_seconds`` pass. The preemptor's own hold is
released and it spares the gang, so its next plan cannot take that room.

Who may be a victim (priority, queue, reclaim, spared groups, disruption
budgets) is :func:`~.rules.victim_rule`'s to say.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from coscheduler.api.disruption import DisruptionBudget
from coscheduler.api.pod import PodInfo
from coscheduler.api.reasons import Reason
from coscheduler.core.decision import Decision, Order, PreemptionPlan
from coscheduler.core.devices import PodDevices
from coscheduler.core.group import GroupKey
from coscheduler.core.preemption.interface import Attempted, Mode, PreemptionSettings
from coscheduler.core.preemption.rules import victim_rule
from coscheduler.core.preemption.search import Preemptor, find_plan
from coscheduler.core.snapshot import Snapshot
from coscheduler.core.status import Code

__all__ = ["Hold", "Preemptions", "Restore"]

#: Seconds for which the lowest priority running is taken as known: a group
#: at or below it is not searched for (collecting every running pod costs
#: milliseconds per thousand pods, and a burst of equals would pay it each).
FLOOR_SECONDS = 5.0

#: Suffix of the uid a nominated member is assumed under while it waits.
NOMINATED = "/nominated"
#: Suffix of the uid the room of a victim's evicted member is held under (restored).
RESTORED = "/restored"


@dataclass(slots=True)
class Hold:
    """Room set aside for a preemptor while its victims go."""

    plan: PreemptionPlan
    since: float
    placeholders: tuple[tuple[PodInfo, str], ...]
    victims: frozenset[str]
    lifted: bool = False
    #: Placeholder uid -> the devices (DRA) held with its room.
    devices: dict[str, PodDevices] = field(default_factory=dict)


@dataclass(slots=True)
class Restore:
    """Room of a victim gang's members evicted before a refusal, held for their return."""

    since: float
    placeholders: tuple[tuple[PodInfo, str], ...]
    lifted: bool = False


@dataclass(slots=True)
class _Memory:
    """Per preemptor, while it waits."""

    spared: set[GroupKey] = field(default_factory=set)
    last_summary: str = ""


class Preemptions:
    """The scheduler's preemption state; see the module docstring."""

    def __init__(
        self,
        settings: PreemptionSettings | None = None,
        wall_clock: Callable[[], float] | None = None,
    ) -> None:
        self.settings = settings or PreemptionSettings()
        #: Seconds since the epoch, for how long victims have run (their start
        #: times are the API's); None: the scheduler's own clock is one.
        self.wall_clock = wall_clock
        self.budgets: dict[str, DisruptionBudget] = {}
        self._holds: dict[GroupKey, Hold] = {}
        self._restores: dict[GroupKey, Restore] = {}
        #: Pods an order to evict was given for, not yet gone: uid -> (preemptor, since).
        self._doomed: dict[str, tuple[GroupKey, float]] = {}
        self._memory: dict[GroupKey, _Memory] = {}
        #: What a waiting group's message says about preemption (a dry-run plan, or why none).
        self._notes: dict[GroupKey, str] = {}
        #: When the running groups were last collected, and their lowest priority.
        self._floor: tuple[float, int] | None = None

    # -- reading ------------------------------------------------------------

    def hold(self, key: GroupKey) -> Hold | None:
        return self._holds.get(key)

    def held(self) -> Iterable[tuple[GroupKey, PodInfo]]:
        """Every member held room for, with its group: room a queue has taken but not bound."""
        for key, hold in self._holds.items():
            for pod, _ in hold.placeholders:
                yield key, pod
        for key, restore in self._restores.items():
            for pod, _ in restore.placeholders:
                yield key, pod

    def doomed(self, uid: str) -> bool:
        """True from the order to evict the pod until it is gone or its eviction failed:
        its gang cannot count on it (rule 2b of :mod:`~coscheduler.core.membership`)."""
        return uid in self._doomed

    def restored(self, key: GroupKey) -> Restore | None:
        """Room held for a victim gang a refusal left below its minMember."""
        return self._restores.get(key)

    def nominated_node(self, uid: str) -> str | None:
        """Where a waiting member is nominated to go, if it is."""
        for hold in self._holds.values():
            for pod, node in hold.placeholders:
                if pod.uid == uid + NOMINATED:
                    return node
        return None

    # -- around an attempt --------------------------------------------------

    def lift(self, snapshot: Snapshot, key: GroupKey) -> None:
        """Give a holding group its room back for its own attempt."""
        for held in (self._holds.get(key), self._restores.get(key)):
            if held is not None and not held.lifted:
                for pod, _ in held.placeholders:
                    snapshot.forget(pod.uid)
                held.lifted = True

    def settle(
        self, snapshot: Snapshot, decision: Decision, now: float, attempted: Attempted
    ) -> Decision:
        """After the group's attempt (see the module docstring): the decision with the
        order to give the runtime (a plan to carry out, or to tell), if there is one."""
        return self.told(self._settle(snapshot, decision, now, attempted))

    def told(self, decision: Decision) -> Decision:
        """The decision with its status message saying what preemption does for the group:
        the room held while its victims go, a dry-run's plan, or why there is none."""
        key = decision.group
        if decision.admitted:
            self._notes.pop(key, None)
            return decision
        order = decision.preemption
        if order is not None:
            plan = order.plan
            if order.evict or not (plan.found or plan.worth_telling):
                self._notes.pop(key, None)
            elif plan.found:
                self._notes[key] = f"Preemption (dry-run) {plan.summary}."
            else:
                self._notes[key] = f"No preemption: {plan.summary}."
        hold = self._holds.get(key)
        note = (
            f"Preempting: {hold.plan.summary.removeprefix('would preempt ')}; "
            "the room is held while they terminate."
            if hold is not None
            else self._notes.get(key)
        )
        if not note or decision.status.ok:
            return decision
        status = dataclasses.replace(
            decision.status, message=f"{decision.status.message.rstrip('.')}. {note}"
        )
        return dataclasses.replace(decision, status=status)

    def _settle(
        self, snapshot: Snapshot, decision: Decision, now: float, attempted: Attempted
    ) -> Decision:
        key = decision.group
        self._settle_restores(snapshot, key, len(decision.bindings))
        hold = self._holds.pop(key, None)
        if decision.admitted:
            self._memory.pop(key, None)
            if hold is None:
                return decision
            return dataclasses.replace(decision, preemption_waited=max(0.0, now - hold.since))
        wants_room = _wants_room(decision)
        who: Preemptor | None = None
        if hold is not None and wants_room:
            # Held while room is what it waits for and its queue would take it once the
            # victims are gone: not when another of the queue's groups took the quota.
            alive = any(snapshot.node_of(uid) is not None for uid in hold.victims)
            if alive and now - hold.since < self.settings.hold_seconds:
                who = attempted.preemptor()
                still = attempted.admits(who) if who is not None else None
                if still is None or still(hold.plan.victims):
                    self._hold(snapshot, key, hold)
                    return decision
        if self.settings.mode is Mode.OFF or not wants_room:
            return decision
        who = who or attempted.preemptor()
        if who is None:
            return decision
        reclaiming = attempted.reclaim(who)
        if reclaiming is None and self._nothing_below(who, attempted.lowest, now):
            return decision

        groups = list(attempted.running())
        self._floor = (now, min((group.priority for group in groups), default=2**31))
        memory = self._memory.setdefault(key, _Memory())
        doubly: set[GroupKey] = set()
        plan = find_plan(
            snapshot,
            who,
            groups,
            now if self.wall_clock is None else self.wall_clock(),
            rule=victim_rule(who, memory.spared, self.budgets.values(), reclaiming, doubly),
            budget=self.settings.budget,
            scoring=attempted.scoring,
            admits=attempted.admits(who),
            anywhere=_waits_for_quota(decision),
        )
        if not plan.found and doubly:
            names = ", ".join(sorted(str(group) for group in doubly))
            plan = dataclasses.replace(
                plan,
                summary=f"{plan.summary}; not {names}: a pod under more than one "
                "PodDisruptionBudget, which the Eviction API refuses to evict",
                worth_telling=True,
            )
        evict = plan.found and self.settings.mode is Mode.ON
        order = None
        if plan.summary != memory.last_summary or evict:
            order = Order(plan, evict, now)
            memory.last_summary = plan.summary
        decision = dataclasses.replace(decision, preemption=order, preemption_found=plan.found)
        if not evict:
            return decision
        pending = {pod.uid: pod for pod in who.pending}
        placeholders = tuple(
            (dataclasses.replace(pending[b.uid], uid=b.uid + NOMINATED), b.node)
            for b in plan.nominated
            if b.uid in pending
        )
        devices = {
            d.pod_uid + NOMINATED: dataclasses.replace(d, pod_uid=d.pod_uid + NOMINATED)
            for d in plan.nominated_devices
            if d.pod_uid in pending
        }
        memory.spared.update(victim.group.key for victim in plan.victims)
        victims = frozenset(pod.uid for pod in plan.pods)
        self._doomed.update(dict.fromkeys(victims, (key, now)))
        hold = Hold(plan, now, placeholders, victims, lifted=True, devices=devices)
        self._hold(snapshot, key, hold)
        return decision

    def _nothing_below(self, who: Preemptor, lowest: int | None, now: float) -> bool:
        """No running group is below the preemptor's priority, as far as is known cheaply:
        a cluster of equals pays nothing, nor does a burst of equals a moment later."""
        if lowest is not None and who.priority <= lowest:
            return True
        floor = self._floor
        return floor is not None and now - floor[0] < FLOOR_SECONDS and who.priority <= floor[1]

    # -- what the runtime reports ----------------------------------------------

    def failed(
        self,
        snapshot: Snapshot,
        key: GroupKey,
        refused: Iterable[GroupKey],
        untouched: Iterable[GroupKey] = (),
        *,
        plan: PreemptionPlan | None = None,
        evicted: Iterable[str] = (),
        now: float = 0.0,
    ) -> dict[GroupKey, int]:
        """The runtime could not carry out the plan: release the room, spare the refused
        groups; ``untouched`` victims (nothing of them evicted) may be chosen again.

        ``evicted``: uids of the plan's pods that did go. A refused gang they leave
        below its minMember with members running gets their room restored (see the
        module docstring); returned: such gangs, with how many members' room.
        """
        hold = self._holds.get(key)
        if plan is None and hold is not None:
            plan = hold.plan
        self._let_go_hold(snapshot, key)
        gone = set(evicted)
        for uid, (preemptor, _) in list(self._doomed.items()):
            if preemptor == key and uid not in gone:
                del self._doomed[uid]  # it stays: its gang counts on it again
        spared = self._memory.setdefault(key, _Memory()).spared
        spared.difference_update(untouched)
        refused = set(refused)
        spared.update(refused)
        if plan is None:
            return {}
        groups = {victim.group.key: victim.group for victim in plan.victims}
        restored: dict[GroupKey, int] = {}
        for group in (groups[k] for k in sorted(refused) if k in groups):
            lost = [pod for pod in group.pods if pod.uid in gone]
            if not (group.gang and lost) or len(group.pods) - len(lost) >= group.min_member:
                continue
            placeholders = tuple(
                (dataclasses.replace(pod, uid=pod.uid + RESTORED), node)
                for pod in lost
                if (node := pod.node_name) is not None
            )
            self._let_go_restore(snapshot, group.key)
            restore = Restore(now, placeholders, lifted=True)
            self._hold_again(snapshot, restore)
            self._restores[group.key] = restore
            restored[group.key] = len(placeholders)
        return restored

    def expire(self, snapshot: Snapshot, now: float) -> None:
        """Let go of restored room older than ``hold_seconds`` (its members did not come)."""
        for key, restore in list(self._restores.items()):
            if now - restore.since >= self.settings.hold_seconds:
                self._let_go_restore(snapshot, key)
        for uid, (_, since) in list(self._doomed.items()):
            if now - since >= self.settings.hold_seconds:
                del self._doomed[uid]  # no answer came: as for a hold, no longer

    def keep(self, snapshot: Snapshot, key: GroupKey, pod: PodInfo, node: str, now: float) -> None:
        """A member of a gang placed short of its minMember was lost on its way to ``node``
        (its binding failed, or it was deleted meanwhile): its room is held for the gang
        as restored room is, so its replacement completes the gang instead of another
        group taking the room and leaving the gang partially bound."""
        restore = self._restores.get(key)
        if restore is None:
            restore = self._restores[key] = Restore(now, ())
        held = (dataclasses.replace(pod, uid=pod.uid + RESTORED), node)
        restore.placeholders = (*restore.placeholders, held)
        self._hold_again(snapshot, restore)

    def gone(self, uid: str) -> None:
        """A pod was deleted: an order to evict it is done."""
        self._doomed.pop(uid, None)

    def let_go(self, snapshot: Snapshot, key: GroupKey) -> None:
        """The group has no member left: room restored for it is released."""
        self._let_go_restore(snapshot, key)

    def forget(self, snapshot: Snapshot, key: GroupKey) -> None:
        """The group has nothing pending any more (placed, or gone)."""
        self._let_go_hold(snapshot, key)
        self._memory.pop(key, None)
        self._notes.pop(key, None)

    def upsert_budget(self, budget: DisruptionBudget) -> None:
        self.budgets[budget.key] = budget

    def remove_budget(self, key: str) -> None:
        self.budgets.pop(key, None)

    # -- internals ----------------------------------------------------------

    def _hold(self, snapshot: Snapshot, key: GroupKey, hold: Hold) -> None:
        self._hold_again(snapshot, hold)
        self._holds[key] = hold

    def _let_go_hold(self, snapshot: Snapshot, key: GroupKey) -> None:
        """The preemptor's hold only: room restored for the same group stays."""
        hold = self._holds.pop(key, None)
        if hold is not None and not hold.lifted:
            for pod, _ in hold.placeholders:
                snapshot.forget(pod.uid)

    @staticmethod
    def _hold_again(snapshot: Snapshot, held: Hold | Restore) -> None:
        devices = held.devices if isinstance(held, Hold) else {}
        for pod, node in held.placeholders:
            if node in snapshot and snapshot.node_of(pod.uid) is None:
                snapshot.assume(pod, node)
                if pod.uid in devices:
                    # Forgetting the placeholder gives them back (Snapshot.forget).
                    snapshot.devices.assume(devices[pod.uid])
        held.lifted = False

    def _let_go_restore(self, snapshot: Snapshot, key: GroupKey) -> None:
        restore = self._restores.pop(key, None)
        if restore is not None:
            for pod, _ in restore.placeholders:
                snapshot.forget(pod.uid)

    def _settle_restores(self, snapshot: Snapshot, key: GroupKey, placed: int) -> None:
        """After ``key``'s attempt that placed ``placed`` members: as much restored room
        is done (its members are back); what is left is held again."""
        restore = self._restores.get(key)
        if restore is None:
            return
        done, left = restore.placeholders[:placed], restore.placeholders[placed:]
        for pod, _ in done:
            snapshot.forget(pod.uid)
        restore.placeholders = left
        if left:
            self._hold_again(snapshot, restore)
        else:
            del self._restores[key]


#: Failures that evictions may cure: room in the cluster, or in the group's queue.
_ROOM = frozenset({Reason.NOT_ENOUGH_RESOURCES, Reason.MIN_RESOURCES_UNAVAILABLE})
_QUOTA = frozenset({Reason.QUEUE_MAX_REACHED, Reason.QUEUE_CANNOT_BORROW})


def _failed_for(decision: Decision) -> Reason | None:
    status = decision.status
    if status.code is not Code.UNSCHEDULABLE or decision.admitted:
        return None
    return status.cause if status.reason is Reason.TIMEOUT else status.reason


def _wants_room(decision: Decision) -> bool:
    """It failed for room (in the cluster or its queue), not for members, volumes or fields."""
    return _failed_for(decision) in _ROOM | _QUOTA


def _waits_for_quota(decision: Decision) -> bool:
    return _failed_for(decision) in _QUOTA
