"""The core's one entry point for the runtime: state in, decisions out.

The runtime feeds every watch event in (nodes, pods, PodGroups) and asks for
the next decision; it executes the bindings and reports failed ones. This
class keeps the pieces consistent so the runtime never has to: the snapshot
(what is allocated where), the members of each group (pending and bound), the
queue (what to try next) and the time of each group's first attempt (for
``scheduleTimeoutSeconds``). It never awaits and never reads a clock other
than the one it is given.

The pieces, each in its own module: who is a member of which group, and
pending or bound (:mod:`~coscheduler.core.membership`, rules 1-5 and 2b);
what each group charges and claims of its queue, and admission
(:mod:`~coscheduler.core.accounting`); the steps of one attempt
(:mod:`~coscheduler.core.pipeline`). This class only routes what the
runtime tells it to them, in the right order, and keeps the queue in step
with each group's pending members.

Queues (:mod:`~coscheduler.core.accounting`): a group draws from its PodGroup's
``spec.queue``; its bound members are charged to it, its pending ones
counted as its demand, and an attempt is admitted by it whole or not at all.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from coscheduler.api.devices import (
    DEVICE_CLASS_RESOURCE,
    DeviceClassInfo,
    ResourceClaimInfo,
    ResourceClaimTemplateInfo,
    ResourceSliceInfo,
)
from coscheduler.api.disruption import DisruptionBudget
from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import DEFAULT_QUEUE
from coscheduler.core.accounting import Accounts
from coscheduler.core.device_charges import SharedClaimCharges
from coscheduler.core.group import KIND_POD_GROUP, GroupKey, GroupPolicy
from coscheduler.core.membership import Membership, State
from coscheduler.core.pipeline import NO_ROOM, Pipeline
from coscheduler.core.planner import Decision
from coscheduler.core.positions import Position
from coscheduler.core.preemption import (
    PreemptionPlan,
    Preemptions,
    RunningPriorities,
)
from coscheduler.core.preemption.mode import Mode
from coscheduler.core.queue import ClusterEvent, GroupQueue
from coscheduler.core.quota import QueuePolicy, Quotas
from coscheduler.core.requeue import Wants, wants_of, woken
from coscheduler.core.scheduler_reads import SchedulerReads
from coscheduler.core.scoring import Scoring
from coscheduler.core.settings import SchedulerSettings
from coscheduler.core.snapshot import Snapshot
from coscheduler.core.statement import Binding, VolumeAction
from coscheduler.core.status import Code
from coscheduler.core.volumes import VolumeIndex

__all__ = ["Scheduler", "SchedulerSettings"]


class Scheduler(SchedulerReads):
    """Snapshot, members, queue and planner, kept consistent."""

    #: A bound member staying bound in its group does not re-sync the group's queue
    #: entry (:meth:`_file`); False only in tests that compare with the full sync.
    skip_unchanged_sync = True

    def __init__(
        self,
        clock: Callable[[], float],
        settings: SchedulerSettings | None = None,
        *,
        wall_clock: Callable[[], float] | None = None,
    ) -> None:
        """``wall_clock``: seconds since the epoch, for how long preemption's victims have
        run (their start times are the API's); None when ``clock`` is one already."""
        self.settings = settings = settings or SchedulerSettings()
        self.clock = clock
        self.snapshot = Snapshot()
        self.quotas = Quotas(clock, settings.usage_half_life_seconds)
        self.quotas.set_namespace_labels(self.snapshot.topology.namespace_labels)
        self.queue = GroupQueue(clock, settings.queue, share=self.quotas.share)
        self._capacity_stale = True
        self.volumes = VolumeIndex()
        self.preemptions = Preemptions(settings.preemption, wall_clock)
        self._membership = Membership(
            settings.scheduler_name,
            lone_when_group_missing=settings.lone_when_group_missing,
            assumed=self.snapshot.is_assumed,
            doomed=self.preemptions.doomed,
        )
        self._accounts = Accounts(self.quotas, self.snapshot, self._membership, self.preemptions)
        #: Which pod each shared claim's devices count on (queues).
        self._shared_claims = SharedClaimCharges()
        #: Nothing runs below its lowest: no victim search for a group at or under it.
        self._running_priorities = RunningPriorities()
        self._pipeline = Pipeline(
            clock,
            Scoring(settings.strategy, dict(settings.weights)),
            self.snapshot,
            self._membership,
            self._accounts,
            self.quotas,
            self.preemptions,
            self.volumes,
            self._running_priorities,
        )
        #: Groups short of members: since when each gathers them (:meth:`_gathering`).
        self._short_since: dict[GroupKey, float] = {}
        #: Inside :meth:`batch`: the groups whose queue entries wait for its end, in order.
        self._unsynced: dict[GroupKey, None] | None = None

    # -- reading -------------------------------------------------------------

    def pod(self, uid: str) -> PodInfo | None:
        return self._membership.pod(uid)

    def pods(self) -> Iterable[PodInfo]:
        """Every pod known (ours or not), as last told."""
        return self._membership.pods.values()

    def groups(self) -> Iterable[GroupKey]:
        """Every group with a member known."""
        return self._membership.groups()

    def policy(self, key: GroupKey) -> GroupPolicy | None:
        """The group's policy; a lone pod's is derived from the pod."""
        return self._membership.policy(key)

    def members(self, key: GroupKey) -> tuple[list[PodInfo], list[PodInfo]]:
        """The group's pending and bound members (:mod:`~coscheduler.core.membership`)."""
        return self._membership.members(key)

    def standing(self, key: GroupKey) -> tuple[list[PodInfo], list[PodInfo]]:
        """The group's pending members, and the bound ones it can count on: not being
        deleted and not ordered evicted (rule 2b of :mod:`~coscheduler.core.membership`)."""
        return self._membership.standing(key)

    def is_waiting(self, uid: str) -> bool:
        """True while the pod waits: known, not bound, nor assumed with a binding in flight."""
        pod = self._membership.pod(uid)
        return pod is not None and not pod.bound and not self.snapshot.is_assumed(uid)

    def group_of(self, uid: str) -> GroupKey | None:
        return self._membership.group_of(uid)

    def queue_name(self, key: GroupKey) -> str:
        """The queue a group draws from."""
        return self._membership.queue_name(key)

    def lowest_running_priority(self) -> int | None:
        """No group runs below it (a bound, see :class:`RunningPriorities`)."""
        return self._running_priorities.lowest()

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

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Apply many changes (a list), keeping each touched group's queue entry once, at the end.

        Inside, a group's entry (its order: the priority and age of its pending
        members) is not refreshed at each member filed, which costs the group's
        size each time (a gang's list, its size squared). The queue's order is a
        function of the groups' state alone, so the end state is the same as
        change by change. Nothing is decided inside.
        """
        if self._unsynced is not None:  # nested: the outer batch syncs
            yield
            return
        self._unsynced = {}
        try:
            yield
        finally:
            unsynced, self._unsynced = self._unsynced, None
            for key in unsynced:
                self._sync(key)

    def upsert_pod(self, pod: PodInfo) -> None:
        recount: set[str] = set()
        if pod.device_claims:
            recount = self._shared_claims.update(pod)
            # Queues count its devices per DeviceClass, as resources (a shared claim once).
            requests = {
                name: amount
                for name, amount in pod.requests.items()
                if not name.startswith(DEVICE_CLASS_RESOURCE)
            }
            charged = self._shared_claims.charged_to(pod.uid)
            counted = self.snapshot.devices.counted(pod.namespace, pod.device_claims, charged)
            if counted or len(requests) != len(pod.requests):
                pod = dataclasses.replace(pod, requests={**requests, **counted})
        if pod.claims and pod.bound:
            # What it attaches counts against its node's volume limits.
            pod = dataclasses.replace(pod, volume_attach=self.volumes.attachments(pod))
        membership = self._membership
        before = membership.pods.get(pod.uid)
        self.snapshot.update_pod(pod)
        membership.pods[pod.uid] = pod
        self._running_priorities.pod(pod)
        membership.use_claims(pod)
        key, state = membership.place_of(pod)
        was_pending = self._file(pod, key, state)
        if before is not None and before.bound and not before.terminal and pod.terminal:
            self.queue.on_event(ClusterEvent.POD_FINISHED)
        claims_resolved = before is not None and before.device_claims != pod.device_claims
        if key is not None and state is State.PENDING and (not was_pending or claims_resolved):
            # New, or its claims were made from their templates (DRA): worth a try now.
            self.queue.on_event(ClusterEvent.GROUP_CHANGED, key)
        self._recount(recount)

    def _recount(self, uids: set[str]) -> None:
        """Count these pods' devices again: a shared claim they name moved to or from them."""
        for uid in sorted(uids):
            other = self._membership.pods.get(uid)
            if other is not None:
                self.upsert_pod(other)

    def remove_pod(self, uid: str) -> None:
        """A pod was deleted."""
        membership = self._membership
        pod = membership.pods.pop(uid, None)
        self._running_priorities.remove_pod(uid)
        self.preemptions.gone(uid)
        held = self.snapshot.node_of(uid)
        in_flight = self.snapshot.is_assumed(uid)
        self.snapshot.remove_pod(uid)
        key = None
        if pod is not None:
            key = membership.group_of(uid)
            self._file(pod, None, None)
            if in_flight and key is not None and held is not None:  # held: it was assumed
                self._keep_room_if_short(key, pod, held)
            membership.release_claims(pod)
        if held is not None:
            self.queue.on_event(ClusterEvent.POD_DELETED)
            if key is not None:
                # A member gone: its room may be held for its group (or its group
                # placed short, so it must be told); either way worth a try.
                self.queue.on_event(ClusterEvent.GROUP_CHANGED, key)
        self._recount(self._shared_claims.remove(uid))

    def _keep_room_if_short(self, key: GroupKey, pod: PodInfo, node: str) -> None:
        """A member on its way to ``node`` was lost: if that leaves its gang's standing
        members above none but below its minMember, its room waits for the replacement."""
        policy = self._membership.policies.get(key)
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

    def remove_namespace(self, name: str) -> None:
        self.snapshot.topology.namespace_labels.pop(name, None)

    # -- queues --------------------------------------------------------------

    def upsert_queue(self, queue: QueuePolicy) -> None:
        if self.quotas.upsert_queue(queue):
            self._accounts.start()
            self.queue.on_event(ClusterEvent.QUEUE_CHANGED)

    def remove_queue(self, name: str) -> None:
        if self.quotas.remove_queue(name):
            self.queue.on_event(ClusterEvent.QUEUE_CHANGED)

    # -- volumes -------------------------------------------------------------

    def volumes_changed(self) -> None:
        """A claim, volume or storage class changed: groups waiting on one may go now."""
        for uid in self._membership.claim_users():
            pod = self._membership.pod(uid)
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

    # -- devices (DRA) -----------------------------------------------------------

    def upsert_resource_slice(self, resource_slice: ResourceSliceInfo) -> None:
        self.snapshot.devices.upsert_slice(resource_slice)
        self.queue.on_event(ClusterEvent.DEVICE_CHANGED)

    def remove_resource_slice(self, name: str) -> None:
        self.snapshot.devices.remove_slice(name)
        self.queue.on_event(ClusterEvent.DEVICE_CHANGED)

    def upsert_device_class(self, device_class: DeviceClassInfo) -> None:
        self.snapshot.devices.upsert_class(device_class)
        self.queue.on_event(ClusterEvent.DEVICE_CHANGED)

    def remove_device_class(self, name: str) -> None:
        self.snapshot.devices.remove_class(name)
        self.queue.on_event(ClusterEvent.DEVICE_CHANGED)

    def upsert_resource_claim(self, claim: ResourceClaimInfo) -> None:
        before = self.snapshot.devices.claims.get(claim.key)
        self.snapshot.devices.upsert_claim(claim)
        charger = None if before is not None else self._shared_claims.charger(claim.key)
        if charger is not None:
            self._recount({charger})  # its spec is known now: queues count it
        if before is None:
            # A new claim frees no device: it can let in only the pods that name it.
            for uid in self._membership.device_claim_users(claim.key):
                self.queue.on_event(ClusterEvent.GROUP_CHANGED, self._membership.group_of(uid))
        elif _frees_devices(before, claim):
            self.queue.on_event(ClusterEvent.DEVICE_CHANGED)

    def remove_resource_claim(self, key: str) -> None:
        before = self.snapshot.devices.claims.get(key)
        self.snapshot.devices.remove_claim(key)
        if before is not None and before.allocation is not None:  # its devices are free
            self.queue.on_event(ClusterEvent.DEVICE_CHANGED)

    def upsert_claim_template(self, template: ResourceClaimTemplateInfo) -> None:
        """A template: pending pods that use it count its devices (queues) from now on."""
        self.snapshot.devices.templates[template.key] = template.spec
        for pod in list(self._membership.pods.values()):
            if not pod.bound and any(c.template == template.name for c in pod.device_claims):
                self.upsert_pod(pod)

    def remove_claim_template(self, key: str) -> None:
        self.snapshot.devices.templates.pop(key, None)

    def resource_claim(self, key: str) -> ResourceClaimInfo | None:
        """A claim as last seen (the runtime writes its status from it)."""
        return self.snapshot.devices.claims.get(key)

    # -- disruption budgets ------------------------------------------------------

    def replace_budgets(self, budgets: Iterable[DisruptionBudget]) -> None:
        self.preemptions.budgets.clear()
        for budget in budgets:
            self.preemptions.upsert_budget(budget)

    def upsert_budget(self, budget: DisruptionBudget) -> None:
        self.preemptions.upsert_budget(budget)

    def remove_budget(self, key: str) -> None:
        """A budget (namespace/name) is gone."""
        self.preemptions.remove_budget(key)

    # -- groups --------------------------------------------------------------

    def upsert_group(self, policy: GroupPolicy) -> None:
        key = policy.key
        policies = self._membership.policies
        before = policies.get(key)
        if before == policy:
            return
        policies[key] = policy
        self._running_priorities.group(key, policy.priority)
        if (before.queue if before is not None else DEFAULT_QUEUE) != policy.queue:
            self._accounts.recharge(key)
        self._sync(key)
        self.queue.on_event(ClusterEvent.GROUP_CHANGED, key)

    def remove_group(self, namespace: str, name: str, kind: str = KIND_POD_GROUP) -> None:
        key = GroupKey(namespace, name, kind)
        policy = self._membership.policies.pop(key, None)
        if policy is None:
            return
        self._running_priorities.remove_group(key)
        self._pipeline.first_attempt.pop(key, None)
        if policy.queue != DEFAULT_QUEUE:
            self._accounts.recharge(key)
        self._sync(key)
        # Its waiting members are told at once that their group is gone.
        self.queue.on_event(ClusterEvent.GROUP_CHANGED, key)

    # -- deciding ------------------------------------------------------------

    def next_decision(self) -> Decision | None:
        """Try the next group in the queue; None when no group is ready."""
        self._refresh_capacity()
        self.preemptions.expire(self.snapshot, self.clock())
        self._wake_by_hints()
        while True:
            key = self.queue.pop()
            if key is None:
                return None
            pending, bound = self.standing(key)
            if not pending:
                self.queue.remove(key)
                continue
            if self._room_went_before(key) or self._gathering(key, len(pending) + len(bound)):
                continue
            try:
                return self._decide(key, pending, bound)
            except Exception as error:  # one group's bug must not stop every other group
                decision = self._pipeline.failed(key, pending, bound, error)
                self.queue.done(key, Code.ERROR)
                return decision

    def try_group(self, key: GroupKey) -> Decision:
        """What an attempt would decide now, leaving every state unchanged."""
        with self._own_trials():
            decision = self._pipeline.plan(key, *self.standing(key))
            for binding in decision.bindings:
                self.snapshot.forget(binding.uid)
        return decision

    def binding_failed(self, binding: Binding) -> None:
        """The runtime could not bind: forget the assumption and back off the group."""
        if not self.snapshot.forget(binding.uid):
            return
        pod = self._membership.pod(binding.uid)
        if pod is None:
            return
        key, state = self._membership.place_of(pod)
        self._file(pod, key, state)
        if key is not None:
            self._keep_room_if_short(key, pod, binding.node)
        self.queue.on_event(ClusterEvent.BINDING_FAILED)
        if key is not None:
            self.queue.requeue(key, Code.ERROR)

    def release_volumes(self, actions: Sequence[VolumeAction]) -> None:
        """Give back the volumes a decision reserved (its bindings were not carried out)."""
        self.volumes.release(actions)

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

    def queue_positions(self) -> dict[GroupKey, Position]:
        """As :meth:`SchedulerReads.queue_positions`, with the shares the next attempt sees: a
        borrowing queue's share depends on the capacity, refreshed first as there."""
        self._refresh_capacity()
        return super().queue_positions()

    # -- internals -----------------------------------------------------------

    def _wake_by_hints(self) -> None:
        """Wake the groups refused for room that a change since the last call can help
        (:mod:`~coscheduler.core.requeue`)."""
        snapshot = self.snapshot
        if not snapshot.opened:
            return
        opened, broadly = frozenset(snapshot.opened), snapshot.anti_affinity_left
        relabelled = snapshot.relabelled
        snapshot.opened, snapshot.anti_affinity_left, snapshot.relabelled = set(), False, False
        parked = self.queue.parked()
        if broadly:
            for key, _ in parked:
                self.queue.wake(key)
            return
        if relabelled:
            # A relabelled node holding a group's members moves the domain the group is
            # kept in onto nodes no hint looked at: every group kept in one is tried.
            for key, wants in parked:
                if wants.within is not None:
                    self.queue.wake(key)
            parked = [(key, wants) for key, wants in parked if wants.within is None]
        for key in woken(snapshot, parked, opened):
            self.queue.wake(key, opened)

    def _room_went_before(self, key: GroupKey) -> bool:
        """A group a hint woke, popped: when no node it was woken for (nor any opened
        since) takes one of its members any more, the room went to a group tried before
        it. It waits unschedulable again, unattempted: True."""
        hint = self.queue.woken(key)
        snapshot = self.snapshot
        if hint is None or snapshot.anti_affinity_left:
            return False
        if woken(snapshot, [(key, hint.wants)], hint.opened | snapshot.opened):
            return False
        self.queue.park(key, hint)
        return True

    def _gathering(self, key: GroupKey, members: int) -> bool:
        """A popped group short of its minMember, popped before ``gather_seconds`` passed
        since it was first popped short or last tried short: it gathers members,
        unattempted (True). Once the time is up it is tried, and the time counts again."""
        policy = self._membership.policies.get(key)
        if policy is None or members >= policy.min_member:
            self._short_since.pop(key, None)
            return False
        now = self.clock()
        since = self._short_since.setdefault(key, now)
        until = since + self.queue.settings.gather_seconds
        if now < until:
            self.queue.gather(key, until)
            return True
        self._short_since[key] = now
        return False

    @contextlib.contextmanager
    def _own_trials(self) -> Iterator[None]:
        """An attempt assumes and forgets members on its nodes: that frees nothing for
        anybody else, so the nodes it touched are not taken for opened ones."""
        snapshot = self.snapshot
        opened, left = snapshot.opened, snapshot.anti_affinity_left
        snapshot.opened = set()
        try:
            yield
        finally:
            snapshot.opened, snapshot.anti_affinity_left = opened, left

    def _wants(self, key: GroupKey, decision: Decision, code: Code) -> Wants | None:
        """What a group refused for room waits for; None when it backs off instead."""
        if code is not Code.UNSCHEDULABLE or decision.preemption is not None:
            return None
        reason = decision.status.reason
        if not decision.status.ok and reason not in NO_ROOM:
            return None
        if self.preemptions.hold(key) is not None or self.preemptions.restored(key) is not None:
            return None  # its own held room changes with time
        policy = self._membership.policy(key)
        if policy is None or policy.schedule_timeout_seconds:
            return None  # its timeout comes with time alone
        pending, bound = self.standing(key)
        if self._may_preempt(policy, pending):
            return None
        # Roles kept in domains of their own need room per role: the group-wide check only.
        levels = () if policy.role_topology else policy.topology_levels
        return wants_of(pending, len(bound), policy.min_member, levels[-1] if levels else None)

    def _may_preempt(self, policy: GroupPolicy, pending: list[PodInfo]) -> bool:
        """Whether a victim search may find room for the group later without a change a
        hint sees (a victim's Binding landing, a search's memory ageing): it backs off."""
        if (
            self.preemptions.settings.mode is Mode.OFF
            or policy.no_preemption is not None
            or not pending
        ):
            return False
        if self._accounts.on:
            return True  # a queue under its nominal may reclaim, whatever the priorities
        lowest = self._running_priorities.lowest()
        priority = policy.priority
        if priority is None:
            priority = max(pod.priority for pod in pending)
        return lowest is not None and priority > lowest

    def _refresh_capacity(self) -> None:
        if self._capacity_stale:
            self.quotas.set_capacity(self.snapshot.capacity())
            self._capacity_stale = False

    def _decide(self, key: GroupKey, pending: list[PodInfo], bound: list[PodInfo]) -> Decision:
        """One attempt (:mod:`~coscheduler.core.pipeline`); then file the placed members
        as bound and tell the queue how the attempt ended."""
        with self._own_trials():
            decision = self._pipeline.decide(key, pending, bound)
        pods = self._membership.pods
        for binding in decision.bindings:
            self._file(pods[binding.uid], key, State.BOUND, sync=False)
        if decision.bindings:
            self._sync(key)  # once for the whole gang: the queue entry ends the same
        code = decision.status.code
        if code is Code.SUCCESS and decision.pending:
            code = Code.UNSCHEDULABLE
        if code is Code.WAITING:
            # Waiting for members (or its group, or its queue): it could not use capacity
            # now, so it claims none of its queue's nominal until a member changes.
            self._accounts.withdraw(key)
        self.queue.done(key, code, self._wants(key, decision, code))
        return decision

    def _file(
        self, pod: PodInfo, key: GroupKey | None, state: State | None, *, sync: bool = True
    ) -> bool:
        """File the pod (membership, then its queue's ledger), and keep the queue in step
        with the groups it left and joined unless the caller does (``sync``); True if it
        was pending before."""
        accounts = self._accounts
        if accounts.on:  # nothing is charged or claimed before the first Queue
            accounts.uncharge(pod.uid)
        filed = self._membership.file(pod, key, state)
        if accounts.on:
            accounts.filed(pod, key, state, filed)
        previous = filed.previous
        if previous is not None and previous != key:
            self._sync(previous)
        if key is not None and sync and not (filed.stayed_bound and self.skip_unchanged_sync):
            # A bound member's progress (bound, running) leaves its group's pending
            # members, and so what _sync would do, as they were: about a tenth of each
            # such update's CPU.
            self._sync(key)
        return filed.was_pending

    def _sync(self, key: GroupKey) -> None:
        """Keep the queue entry in step with the group's pending members."""
        if self._unsynced is not None:
            self._unsynced[key] = None  # at the batch's end
            return
        members = self._membership.record(key)
        if members is None or not members.pending:
            self.preemptions.forget(self.snapshot, key)
            self.queue.remove(key)
            self._pipeline.first_attempt.pop(key, None)
            self._short_since.pop(key, None)
            self._accounts.withdraw(key)
            if members is None or not members.bound:
                self.preemptions.let_go(self.snapshot, key)
            self._membership.drop_if_empty(key)
            return
        policy = self._membership.policies.get(key)
        if policy is not None and policy.priority is not None:
            priority = policy.priority
        else:
            priority = max(pod.priority for pod in members.pending.values())
        if policy is not None:
            created = policy.created
        else:
            created = min(pod.created for pod in members.pending.values())
        self.queue.add(key, priority, created, self._membership.queue_name(key))


def _frees_devices(before: ResourceClaimInfo, after: ResourceClaimInfo) -> bool:
    """Whether a known claim's change can let a waiting pod in: its allocation went or
    moved, or a consumer left it. A claim allocated (our own write's echo, mostly) or
    reserved for one more pod takes devices and frees none: the groups waiting for
    devices are not woken by it.
    """
    if before.allocation is not None and after.allocation != before.allocation:
        return True
    return not set(before.consumers) <= set(after.consumers)
