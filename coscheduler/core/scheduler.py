"""The core's one entry point for the runtime: state in, decisions out.

The runtime feeds every watch event in (nodes, pods, PodGroups) and asks for
the next decision; it executes the bindings and reports failed ones. This
class keeps the pieces consistent so the runtime never has to: the snapshot
(what is allocated where), the members of each group (pending and bound), the
queue (what to try next) and the time of each group's first attempt (for
``scheduleTimeoutSeconds``). It never awaits and never reads a clock other
than the one it is given.

Membership rules, in order:

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
5. A pod without a group label or a Workload reference whose controlling owner
   is a Job that asks for a gang (or is not known yet) joins the group named
   after the Job (``PodInfo.owner_group``, set by :mod:`~coscheduler.core.owners`'
   rule); it waits for that group whatever ``lone_when_group_missing`` says.

Queues (:mod:`~coscheduler.core.quota`): a group draws from its PodGroup's
``spec.queue`` (a lone pod from its queue label, else ``default``). Every
bound member's requests are charged to that queue, every pending member's
counted as its demand. An attempt first asks the queue's gate (exists, valid,
Open, allows the namespace), then plans, then asks the queue to admit the
whole gang's requests (the needed members', or ``minResources`` if larger);
a refused gang is undone whole. An admitted group's extra members are
admitted one by one; those over quota wait.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from coscheduler.api.labels import DEFAULT_SCHEDULER_NAME
from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import DEFAULT_QUEUE
from coscheduler.api.queue import pod_queue_name
from coscheduler.api.reasons import Reason
from coscheduler.core.group import KIND_POD, KIND_POD_GROUP, GroupKey, GroupPolicy
from coscheduler.core.planner import Decision, plan
from coscheduler.core.preemption import (
    Admits,
    Mode,
    PreemptionPlan,
    Preemptions,
    PreemptionSettings,
    Preemptor,
    RunningPriorities,
    Victim,
    VictimRule,
    running_groups,
)
from coscheduler.core.queue import ClusterEvent, GroupQueue, QueueSettings
from coscheduler.core.quota import QueuePolicy, Quotas, add_amounts
from coscheduler.core.snapshot import Snapshot
from coscheduler.core.statement import Binding, VolumeAction
from coscheduler.core.status import Code, Status
from coscheduler.core.strategy import Strategy
from coscheduler.core.volumes import NO_VOLUME_TO_BIND, VolumeIndex

__all__ = ["Scheduler", "SchedulerSettings"]

#: The planner's reasons for a group that found no room.
_NO_ROOM = frozenset({Reason.NOT_ENOUGH_RESOURCES, Reason.MIN_RESOURCES_UNAVAILABLE})


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    """How the core decides."""

    #: The ``spec.schedulerName`` whose pods we place.
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    #: How nodes are ranked.
    strategy: Strategy = Strategy.MOST_ALLOCATED
    #: Per resource scoring weights (default 1 for every requested resource).
    weights: Mapping[str, float] = field(default_factory=dict)
    #: Queue timings.
    queue: QueueSettings = field(default_factory=QueueSettings)
    #: Place pods that name a missing PodGroup as gangs of one instead of waiting.
    lone_when_group_missing: bool = False
    #: Gang preemption (:mod:`~coscheduler.core.preemption`); off unless asked.
    preemption: PreemptionSettings = field(
        default_factory=lambda: PreemptionSettings(mode=Mode.OFF)
    )


@dataclass(slots=True)
class _Members:
    pending: dict[str, PodInfo] = field(default_factory=dict)
    bound: dict[str, PodInfo] = field(default_factory=dict)
    #: The pending members' requests added up (the group's demand on its queue).
    demand: dict[str, int] = field(default_factory=dict)


class Scheduler:
    """Snapshot, members, queue and planner, kept consistent."""

    def __init__(
        self, clock: Callable[[], float], settings: SchedulerSettings | None = None
    ) -> None:
        self.settings = settings or SchedulerSettings()
        self.clock = clock
        self.snapshot = Snapshot()
        self.quotas = Quotas()
        self.quotas.set_namespace_labels(self.snapshot.topology.namespace_labels)
        self.queue = GroupQueue(clock, self.settings.queue, share=self.quotas.share)
        #: Usage and demand are counted from the first Queue object on: until
        #: then only the implicit default exists, which refuses nothing.
        self._accounting = False
        #: Each bound member's queue and requests, as charged.
        self._charged: dict[str, tuple[str, Mapping[str, int]]] = {}
        #: The groups whose pending members count as demand, and in which queue.
        self._claiming: dict[GroupKey, str] = {}
        self._capacity_stale = True
        self._policies: dict[GroupKey, GroupPolicy] = {}
        self._pods: dict[str, PodInfo] = {}
        self._member_of: dict[str, GroupKey] = {}
        self._members: dict[GroupKey, _Members] = {}
        self._first_attempt: dict[GroupKey, float] = {}
        self.volumes = VolumeIndex()
        #: Claim key (namespace/name) -> the pods that use it.
        self._claim_users: dict[str, set[str]] = {}
        self.preemptions = Preemptions(self.settings.preemption)
        #: Nothing runs below its lowest: no victim search for a group at or under it.
        self._running_priorities = RunningPriorities()

    # -- reading -------------------------------------------------------------

    def pod(self, uid: str) -> PodInfo | None:
        return self._pods.get(uid)

    def policy(self, key: GroupKey) -> GroupPolicy | None:
        """The group's policy; a lone pod's is derived from the pod."""
        if key.kind == KIND_POD:
            members = self._members.get(key)
            pods = [*members.pending.values(), *members.bound.values()] if members else []
            return GroupPolicy.lone(pods[0]) if pods else None
        return self._policies.get(key)

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
        doomed = self.preemptions.doomed
        return pending, [pod for pod in bound if not pod.deleting and not doomed(pod.uid)]

    def is_waiting(self, uid: str) -> bool:
        """True while the pod waits: known, not bound, nor assumed with a binding in flight."""
        pod = self._pods.get(uid)
        return pod is not None and not pod.bound and not self.snapshot.is_assumed(uid)

    def group_of(self, uid: str) -> GroupKey | None:
        return self._member_of.get(uid)

    # -- nodes ---------------------------------------------------------------

    def upsert_node(self, node: NodeInfo) -> None:
        before = self.snapshot.node(node.name)
        if before == node:
            return
        added = self.snapshot.upsert_node(node)
        self._capacity_stale = True
        self.queue.on_event(ClusterEvent.NODE_ADDED if added else ClusterEvent.NODE_CHANGED)

    def remove_node(self, name: str) -> None:
        self.snapshot.remove_node(name)
        self._capacity_stale = True

    # -- pods ----------------------------------------------------------------

    def upsert_pod(self, pod: PodInfo) -> None:
        if pod.claims and pod.bound:
            # What it attaches counts against its node's volume limits.
            pod = dataclasses.replace(pod, volume_attach=self.volumes.attachments(pod))
        before = self._pods.get(pod.uid)
        self.snapshot.update_pod(pod)
        self._pods[pod.uid] = pod
        self._running_priorities.pod(pod)
        for claim in pod.claims:
            self._claim_users.setdefault(f"{pod.namespace}/{claim}", set()).add(pod.uid)
        key, state = self._membership(pod)
        was_pending = self._file(pod, key, state)
        if before is not None and before.bound and not before.terminal and pod.terminal:
            self.queue.on_event(ClusterEvent.POD_FINISHED)
        if key is not None and state == "pending" and not was_pending:
            self.queue.on_event(ClusterEvent.GROUP_CHANGED, key)

    def remove_pod(self, uid: str) -> None:
        """A pod was deleted."""
        pod = self._pods.pop(uid, None)
        self._running_priorities.remove_pod(uid)
        self.preemptions.gone(uid)
        held = self.snapshot.node_of(uid)
        in_flight = self.snapshot.is_assumed(uid)
        self.snapshot.remove_pod(uid)
        if pod is not None:
            key = self._member_of.get(uid)
            self._file(pod, None, None)
            if in_flight and key is not None and held is not None:
                self._keep_room_if_short(key, pod, held)
            for claim in pod.claims:
                users = self._claim_users.get(f"{pod.namespace}/{claim}")
                if users is not None:
                    users.discard(uid)
                    if not users:
                        del self._claim_users[f"{pod.namespace}/{claim}"]
        if held is not None:
            self.queue.on_event(ClusterEvent.POD_DELETED)

    def _keep_room_if_short(self, key: GroupKey, pod: PodInfo, node: str) -> None:
        """A member on its way to ``node`` was lost: if that leaves its gang's standing
        members above none but below its minMember, its room waits for the replacement."""
        policy = self._policies.get(key)
        if policy is None or policy.min_member < 2:
            return
        standing = len(self.standing(key)[1])
        if 0 < standing < policy.min_member:
            self.preemptions.keep(self.snapshot, key, pod, node, self.clock())

    # -- namespaces ----------------------------------------------------------

    def upsert_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        known = self.snapshot.topology.namespace_labels
        if known.get(name) == labels:
            return
        known[name] = dict(labels)
        self.queue.on_event(ClusterEvent.NAMESPACE_CHANGED)
        if self.quotas.names():
            self.queue.on_event(ClusterEvent.QUEUE_CHANGED)

    # -- queues --------------------------------------------------------------

    def upsert_queue(self, queue: QueuePolicy) -> None:
        if self.quotas.upsert_queue(queue):
            if not self._accounting:
                self._start_accounting()
            self.queue.on_event(ClusterEvent.QUEUE_CHANGED)

    def _start_accounting(self) -> None:
        """Charge every bound member and count every pending one, once (the first Queue)."""
        self._accounting = True
        for key, members in self._members.items():
            queue = self.queue_name(key)
            for pod in members.bound.values():
                self._charge(pod, queue)
            members.demand = {}
            for pod in members.pending.values():
                add_amounts(members.demand, pod.requests)
            if members.demand:
                self._claim(key, members)

    def remove_queue(self, name: str) -> None:
        if self.quotas.remove_queue(name):
            self.queue.on_event(ClusterEvent.QUEUE_CHANGED)

    def queue_name(self, key: GroupKey) -> str:
        """The queue a group draws from."""
        if key.kind == KIND_POD:
            pod = self._any_member(key)
            return pod_queue_name(pod.labels if pod is not None else None)
        policy = self._policies.get(key)
        return policy.queue if policy is not None else DEFAULT_QUEUE

    def _any_member(self, key: GroupKey) -> PodInfo | None:
        members = self._members.get(key)
        if members is None:
            return None
        return next(iter(members.pending.values()), None) or next(
            iter(members.bound.values()), None
        )

    def remove_namespace(self, name: str) -> None:
        self.snapshot.topology.namespace_labels.pop(name, None)

    # -- volumes -------------------------------------------------------------

    def volumes_changed(self) -> None:
        """A claim, volume or storage class changed: groups waiting on one may go now."""
        for uids in list(self._claim_users.values()):
            for uid in list(uids):
                pod = self._pods.get(uid)
                if pod is not None and pod.bound:
                    attach = self.volumes.attachments(pod)
                    if attach != pod.volume_attach:
                        self.upsert_pod(dataclasses.replace(pod, volume_attach=attach))
        self.queue.on_event(ClusterEvent.VOLUME_CHANGED)

    def set_attach_limits(self, node: str, limits: Mapping[str, int] | None) -> None:
        """A CSINode's volume limits (None: gone)."""
        if limits:
            self.snapshot.attach_limits[node] = dict(limits)
        else:
            self.snapshot.attach_limits.pop(node, None)
        self.queue.on_event(ClusterEvent.VOLUME_CHANGED)

    def _claim_used_by_other(self, claim: str, uid: str) -> bool:
        for other in self._claim_users.get(claim, ()):
            pod = self._pods.get(other)
            if other == uid or pod is None or pod.terminal:
                continue
            if pod.bound or self.snapshot.is_assumed(other):
                return True
        return False

    # -- groups --------------------------------------------------------------

    def upsert_group(self, policy: GroupPolicy) -> None:
        key = policy.key
        before = self._policies.get(key)
        if before == policy:
            return
        self._policies[key] = policy
        self._running_priorities.group(key, policy.priority)
        if (before.queue if before is not None else DEFAULT_QUEUE) != policy.queue:
            self._recharge(key)
        self._sync(key)
        self.queue.on_event(ClusterEvent.GROUP_CHANGED, key)

    def remove_group(self, namespace: str, name: str, kind: str = KIND_POD_GROUP) -> None:
        key = GroupKey(namespace, name, kind)
        policy = self._policies.pop(key, None)
        if policy is None:
            return
        self._running_priorities.remove_group(key)
        self._first_attempt.pop(key, None)
        if policy.queue != DEFAULT_QUEUE:
            self._recharge(key)
        self._sync(key)
        # Its waiting members are told at once that their group is gone.
        self.queue.on_event(ClusterEvent.GROUP_CHANGED, key)

    # -- deciding ------------------------------------------------------------

    def next_decision(self) -> Decision | None:
        """Try the next group in the queue; None when no group is ready."""
        if self._capacity_stale:
            self.quotas.set_capacity(self.snapshot.capacity())
            self._capacity_stale = False
        while True:
            key = self.queue.pop()
            if key is None:
                return None
            pending, bound = self.standing(key)
            if not pending:
                self.queue.remove(key)
                continue
            try:
                return self._decide(key, pending, bound)
            except Exception as error:  # one group's bug must not stop every other group
                return self._decision_failed(key, pending, bound, error)

    def try_group(self, key: GroupKey) -> Decision:
        """What an attempt would decide now, leaving every state unchanged."""
        decision = self._plan(key, *self.standing(key))
        for binding in decision.bindings:
            self.snapshot.forget(binding.uid)
        return decision

    def binding_failed(self, binding: Binding) -> None:
        """The runtime could not bind: forget the assumption and back off the group."""
        if not self.snapshot.forget(binding.uid):
            return
        pod = self._pods.get(binding.uid)
        if pod is None:
            return
        key, state = self._membership(pod)
        self._file(pod, key, state)
        if key is not None:
            self._keep_room_if_short(key, pod, binding.node)
        self.queue.on_event(ClusterEvent.BINDING_FAILED)
        if key is not None:
            self.queue.requeue(key, Code.ERROR)

    def preemption_failed(
        self,
        key: GroupKey,
        refused: Iterable[GroupKey] = (),
        untouched: Iterable[GroupKey] = (),
        *,
        plan: PreemptionPlan | None = None,
        evicted: Iterable[str] = (),
    ) -> dict[GroupKey, int]:
        """The runtime could not carry out a group's preemption: release its room, retry it
        (``untouched``: victims of the plan it evicted nothing of; ``evicted``: uids that
        went). Returned: refused gangs left below their minMember, with how many
        members' room is held for their recreated members (:meth:`Preemptions.failed`)."""
        restored = self.preemptions.failed(
            self.snapshot, key, refused, untouched, plan=plan, evicted=evicted, now=self.clock()
        )
        self.queue.on_event(ClusterEvent.GROUP_CHANGED, key)
        for group in restored:
            self.queue.on_event(ClusterEvent.GROUP_CHANGED, group)
        return restored

    # -- internals -----------------------------------------------------------

    def _decide(self, key: GroupKey, pending: list[PodInfo], bound: list[PodInfo]) -> Decision:
        now = self.clock()
        first = self._first_attempt.setdefault(key, now)
        queue = self.queue_name(key)
        closed = self.quotas.gate(queue, key.namespace)
        if closed is not None:
            self._withdraw(key)
            self.queue.done(key, closed.code)
            return Decision(
                key,
                closed,
                members=len(pending) + len(bound),
                bound=len(bound),
                pending=tuple(pod.key for pod in pending),
            )
        self.preemptions.expire(self.snapshot, now)
        self.preemptions.lift(self.snapshot, key)
        decision = self._plan(key, pending, bound, elapsed=now - first)
        if decision.bindings and self._accounting:
            # Without Queue objects only the implicit default exists: it refuses nothing.
            decision = self._within_quota(decision, queue)
        elif self._accounting and decision.status.reason in _NO_ROOM:
            decision = self._max_first(decision, queue, pending)
        if any(pod.claims for pod in pending):
            decision = self._with_volumes(decision)
        self.preemptions.settle(
            self.snapshot,
            decision,
            now,
            lambda: self._preemptor(key, pending, bound),
            lambda: running_groups(
                self._pods.values(),
                self.snapshot,
                self._member_of.get,
                self.policy,
                key,
                self.queue_name,
                self.preemptions.doomed,
            ),
            strategy=self.settings.strategy,
            weights=dict(self.settings.weights),
            reclaim=self._reclaim_rule if self._accounting else None,
            admits=self._admits_rule,
            lowest=self._running_priorities.lowest(),
        )
        if decision.admitted:
            self._first_attempt.pop(key, None)
        elif decision.status.reason is Reason.TIMEOUT:
            self._first_attempt[key] = now
        for binding in decision.bindings:
            pod = self._pods[binding.uid]
            self._file(pod, key, "bound")
        code = decision.status.code
        if code is Code.SUCCESS and decision.pending:
            code = Code.UNSCHEDULABLE
        if code is Code.WAITING:
            # Waiting for members (or its group): it could not use capacity now,
            # so it claims none of its queue's nominal until a member changes.
            self._withdraw(key)
        self.queue.done(key, code)
        return decision

    def _decision_failed(
        self, key: GroupKey, pending: list[PodInfo], bound: list[PodInfo], error: Exception
    ) -> Decision:
        """Undo what the failed attempt assumed, back the group off, and say why.

        Pending members were not assumed before the attempt, so forgetting them
        leaves the snapshot as it was.
        """
        for pod in pending:
            self.snapshot.forget(pod.uid)
        self.queue.done(key, Code.ERROR)
        message = (
            f"coscheduler failed while deciding for {key}: {type(error).__name__}: {error}; "
            "retried with backoff (please report it with the scheduler's log)"
        )
        return Decision(
            key,
            Status(Code.ERROR, Reason.INTERNAL_ERROR, message),
            members=len(pending) + len(bound),
            bound=len(bound),
            pending=tuple(pod.key for pod in pending),
            error=error,
        )

    def _within_quota(self, decision: Decision, queue: str) -> Decision:
        """Undo what the queue may not take: the whole gang, or extra members one by one."""
        requests = [self._pods[binding.uid].requests for binding in decision.bindings]
        memo: dict[str, object] = {}

        def free() -> dict[str, int]:
            """Free capacity before this decision's bindings (asked at most once)."""
            if "free" not in memo:
                amounts = self.snapshot.free_capacity()
                for pod_requests in requests:
                    add_amounts(amounts, pod_requests)
                memo["free"] = amounts
            cached: dict[str, int] = memo["free"]  # type: ignore[assignment]
            return cached

        gang = decision.needed if decision.needed > 0 else 0
        need = self._gang_need(decision.group, requests[:gang])
        # Room held for the queue's preemptors is the queue's: no group takes its quota.
        held = self._held_for(queue, decision.group)
        refusal = self.quotas.admit(queue, need, free, memo, held=held) if gang else None
        if refusal is not None:
            for binding in decision.bindings:
                self.snapshot.forget(binding.uid)
            return dataclasses.replace(
                decision,
                status=refusal,
                bindings=(),
                admitted=False,
                pending=tuple(p.key for p in self.members(decision.group)[0]),
                unplaced=None,
            )
        kept = list(decision.bindings[:gang])
        left: list[str] = []
        over: Status | None = None
        for binding, amounts in zip(decision.bindings[gang:], requests[gang:], strict=True):
            wanted = dict(need)
            for resource, amount in amounts.items():
                wanted[resource] = wanted.get(resource, 0) + amount
            refused = self.quotas.admit(queue, wanted, free, memo, held=held)
            if refused is None:
                kept.append(binding)
                need = wanted
                continue
            over = over or refused
            self.snapshot.forget(binding.uid)
            left.append(self._pods[binding.uid].key)
        if not left:
            return decision
        if not kept:
            return dataclasses.replace(
                decision,
                status=over or decision.status,
                bindings=(),
                pending=(*decision.pending, *left),
                unplaced=over,
            )
        return dataclasses.replace(
            decision, bindings=tuple(kept), pending=(*decision.pending, *left), unplaced=over
        )

    def _max_first(self, decision: Decision, queue: str, pending: list[PodInfo]) -> Decision:
        """No room, and its queue's max would refuse it anyway: that is the reason to give,
        since room freeing up would not let it in."""
        needed = decision.needed
        if needed <= 0:
            return decision
        need = self._gang_need(decision.group, [pod.requests for pod in pending[:needed]])
        over = self.quotas.over_max(queue, need, self._held_for(queue, decision.group))
        return decision if over is None else dataclasses.replace(decision, status=over)

    def _gang_need(self, key: GroupKey, requests: Sequence[Mapping[str, int]]) -> dict[str, int]:
        """What the gang asks of its queue at once: its needed members, or its
        minResources less what its bound members hold, if larger."""
        need: dict[str, int] = {}
        for amounts in requests:
            add_amounts(need, amounts)
        policy = self._policies.get(key)
        if requests and policy is not None:
            held = dict.fromkeys(policy.min_resources, 0)
            for pod in self.standing(key)[1]:
                for resource in held:
                    held[resource] += pod.requests.get(resource, 0)
            for resource, amount in policy.min_resources.items():
                need[resource] = max(need.get(resource, 0), amount - held[resource])
        return need

    def _held_for(self, queue: str, besides: GroupKey) -> dict[str, int]:
        """Room held for the queue's other preemptors, and restored for its gangs a refused
        eviction left short: its own once they bind."""
        held: dict[str, int] = {}
        for holder, pod in self.preemptions.held():
            if holder != besides and self.queue_name(holder) == queue:
                add_amounts(held, pod.requests)
        return held

    def _admits_rule(self, who: Preemptor) -> Admits | None:
        """Whether the preemptor's queue takes its whole gang once given victims are gone."""
        queue = who.queue
        if not self._accounting or queue is None:
            return None
        needed = max(who.policy.min_member - len(who.bound), 0)
        need = self._gang_need(who.key, [pod.requests for pod in who.pending[:needed]])
        held = self._held_for(queue, who.key)
        charged = self._charged

        def admits(victims: Sequence[Victim]) -> bool:
            # A gang's whole unit and its unit above minMember may share pods: once each.
            pods = {pod.uid: pod for unit in victims for pod in unit.pods}
            returned: dict[str, dict[str, int]] = {}
            for uid in pods:
                if uid in charged:  # still counted in its queue's usage
                    owner, amounts = charged[uid]
                    add_amounts(returned.setdefault(owner, {}), amounts)

            def free() -> dict[str, int]:
                amounts = self.snapshot.free_capacity()
                for uid, pod in pods.items():
                    if self.snapshot.node_of(uid) is not None:  # not yet taken out
                        add_amounts(amounts, pod.requests)
                return amounts

            return self.quotas.admit(queue, need, free, returned=returned, held=held) is None

        return admits

    def _with_volumes(self, decision: Decision) -> Decision:
        """Give the placed members' first-consumer claims their volumes, or undo the placement.

        Undone only when a member's node turns out to offer its claim nothing
        (its volumes reserved by another member or group meanwhile): the group
        is retried, the reservations given back.
        """
        actions: list[VolumeAction] = []
        for binding in decision.bindings:
            pod = self.snapshot.pod(binding.uid)
            if pod is None or not pod.volume_binds:
                continue
            node = self.snapshot.node(binding.node)
            if node is None:
                continue
            assigned = self.volumes.assign(pod, node)
            if assigned is None:
                self.volumes.release(actions)
                for undone in decision.bindings:
                    self.snapshot.forget(undone.uid)
                message = f"pod {pod.key}: {NO_VOLUME_TO_BIND} near node {node.name} any more"
                return dataclasses.replace(
                    decision,
                    status=Status(Code.UNSCHEDULABLE, Reason.VOLUME_NOT_READY, message),
                    bindings=(),
                    admitted=False,
                    pending=tuple(p.key for p in self.members(decision.group)[0]),
                    unplaced=None,
                )
            actions.extend(assigned)
        return dataclasses.replace(decision, volume_actions=tuple(actions)) if actions else decision

    def _plan(
        self,
        key: GroupKey,
        pending: list[PodInfo],
        bound: list[PodInfo],
        elapsed: float | None = None,
    ) -> Decision:
        if any(pod.claims for pod in pending):
            pending = [self.volumes.resolve(pod, self._claim_used_by_other) for pod in pending]
        return plan(
            self.snapshot,
            key,
            self.policy(key),
            pending,
            bound,
            strategy=self.settings.strategy,
            weights=self.settings.weights,
            elapsed=elapsed,
        )

    def _reclaim_rule(self, who: Preemptor) -> VictimRule | None:
        """Victims of other queues for a preemptor whose queue takes back its nominal."""
        taker = who.queue
        need: dict[str, int] = {}
        for pod in who.pending:
            add_amounts(need, pod.requests)
        if taker is not None:
            # Counted now, or two of its groups each take back the same nominal.
            add_amounts(need, self._held_for(taker, who.key))
        if taker is None or not self.quotas.wants_back(taker, need):
            return None

        def rule(victim: Victim, chosen: Sequence[Victim]) -> bool:
            queue = victim.group.queue
            if queue is None:
                return False
            # A gang's whole unit and its units above minMember share pods: once each.
            pods = {
                pod.uid: pod
                for unit in (*chosen, victim)
                if unit.group.queue == queue
                for pod in unit.pods
            }
            removed: dict[str, int] = {}
            for pod in pods.values():
                add_amounts(removed, pod.requests)
            return self.quotas.may_reclaim(taker, queue, removed)

        return rule

    def _preemptor(
        self, key: GroupKey, pending: list[PodInfo], bound: list[PodInfo]
    ) -> Preemptor | None:
        policy = self.policy(key)
        if policy is None or not pending:
            return None
        if any(pod.claims for pod in pending):
            pending = [self.volumes.resolve(pod, self._claim_used_by_other) for pod in pending]
        priority = policy.priority
        if priority is None:
            priority = max(pod.priority for pod in pending)
        return Preemptor(policy, pending, bound, priority, self.queue_name(key))

    def _membership(self, pod: PodInfo) -> tuple[GroupKey | None, str | None]:
        """Rules 1-5: the pod's group and whether it is pending or bound there."""
        if pod.scheduler_name != self.settings.scheduler_name or pod.terminal:
            return None, None
        key = GroupKey.of_pod(pod)
        labelled = pod.group is not None  # rule 5: a group by owner is never skipped
        if self.settings.lone_when_group_missing and labelled and key not in self._policies:
            key = GroupKey(pod.namespace, pod.name, KIND_POD)
        if pod.node_name is not None or self.snapshot.is_assumed(pod.uid):
            return key, "bound"
        if pod.deleting or pod.gated:
            return None, None
        return key, "pending"

    def _file(self, pod: PodInfo, key: GroupKey | None, state: str | None) -> bool:
        """Put the pod in its group's pending or bound set; True if it was pending before."""
        previous = self._member_of.pop(pod.uid, None)
        was_pending = False
        accounting = self._accounting
        if accounting:
            self._uncharge(pod.uid)
        if previous is not None:
            members = self._members[previous]
            left = members.pending.pop(pod.uid, None)
            if left is not None and accounting:
                add_amounts(members.demand, left.requests, -1)
                claimed_in = self._claiming.get(previous)
                if claimed_in is not None:
                    self.quotas.add_demand(claimed_in, previous.namespace, left.requests, -1)
            was_pending = left is not None and previous == key
            members.bound.pop(pod.uid, None)
        if key is not None and state is not None:
            members = self._members.setdefault(key, _Members())
            (members.pending if state == "pending" else members.bound)[pod.uid] = pod
            self._member_of[pod.uid] = key
            if accounting and state == "pending":
                add_amounts(members.demand, pod.requests)
                claimed_in = self._claiming.get(key)
                if claimed_in is None:
                    self._claim(key, members)
                else:
                    self.quotas.add_demand(claimed_in, key.namespace, pod.requests)
            elif accounting:
                self._charge(pod, self.queue_name(key))
        if previous is not None and previous != key:
            self._sync(previous)
        if key is not None:
            self._sync(key)
        return was_pending

    def _charge(self, pod: PodInfo, queue: str) -> None:
        """Count a bound member's requests as its queue's usage."""
        self.quotas.charge(queue, pod.requests)
        self._charged[pod.uid] = (queue, pod.requests)

    def _uncharge(self, uid: str) -> None:
        """Give back what a pod was charged, if anything."""
        charged = self._charged.pop(uid, None)
        if charged is not None:
            self.quotas.charge(charged[0], charged[1], -1)

    def _claim(self, key: GroupKey, members: _Members) -> None:
        """Count the group's pending members as its queue's demand."""
        queue = self.queue_name(key)
        self.quotas.add_demand(queue, key.namespace, members.demand)
        self._claiming[key] = queue

    def _withdraw(self, key: GroupKey) -> None:
        """Stop counting the group's pending members as demand (until a member changes)."""
        queue = self._claiming.pop(key, None)
        members = self._members.get(key)
        if queue is not None and members is not None:
            self.quotas.add_demand(queue, key.namespace, members.demand, -1)

    def _recharge(self, key: GroupKey) -> None:
        """The group moved to another queue: its bound members' usage and its demand move too."""
        members = self._members.get(key)
        if members is None or not self._accounting:
            return
        queue = self.queue_name(key)
        for pod in members.bound.values():
            self._uncharge(pod.uid)
            self._charge(pod, queue)
        if key in self._claiming:
            self._withdraw(key)
            self._claim(key, members)

    def _sync(self, key: GroupKey) -> None:
        """Keep the queue entry in step with the group's pending members."""
        members = self._members.get(key)
        if members is None or not members.pending:
            self.preemptions.forget(self.snapshot, key)
            self.queue.remove(key)
            self._first_attempt.pop(key, None)
            self._withdraw(key)
            if members is None or not members.bound:
                self.preemptions.let_go(self.snapshot, key)
            if members is not None and not members.bound:
                del self._members[key]
            return
        policy = self._policies.get(key)
        if policy is not None and policy.priority is not None:
            priority = policy.priority
        else:
            priority = max(pod.priority for pod in members.pending.values())
        if policy is not None:
            created = policy.created
        else:
            created = min(pod.created for pod in members.pending.values())
        self.queue.add(key, priority, created, self.queue_name(key))
