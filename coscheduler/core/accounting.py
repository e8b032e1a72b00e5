"""Queue accounting: what each group charges and claims of its queue, and admission.

A group draws from its PodGroup's ``spec.queue`` (a lone pod from its queue
label, else ``default``). Every bound member's requests are charged to that
queue (its *usage*), every pending member's counted as its *demand*
(claimed). An attempt first asks the queue's gate (exists, valid, Open,
allows the namespace), then plans, then asks the queue to admit the whole
gang's requests (the needed members', or ``minResources`` if larger); a
refused gang is undone whole. An admitted group's extra members are
admitted one by one; those over quota wait.

Counting starts with the first Queue object: until then only the implicit
default exists, which refuses nothing, and nothing is charged or claimed.

:class:`Accounts` keeps that ledger in step with :class:`~coscheduler.core.membership.Membership`
(the scheduler tells it every pod it files) and gives preemption the
queue's two rules: whether the preemptor's queue takes it once victims are
gone, and which victims of other queues a queue under its nominal may take
back (:meth:`~coscheduler.core.quota.Quotas.may_reclaim`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from coscheduler.api.pod import PodInfo
from coscheduler.core.group import GroupKey
from coscheduler.core.membership import Filed, Members, Membership, State
from coscheduler.core.planner import Decision
from coscheduler.core.preemption import Admits, Preemptions, Preemptor
from coscheduler.core.quota import Quotas, add_amounts
from coscheduler.core.snapshot import Snapshot
from coscheduler.core.status import Status
from coscheduler.core.victims import Victim, VictimRule

__all__ = ["Accounts"]


class Accounts:
    """Usage and demand per queue, as groups' members come and go; admission."""

    def __init__(
        self,
        quotas: Quotas,
        snapshot: Snapshot,
        membership: Membership,
        preemptions: Preemptions,
    ) -> None:
        self.quotas = quotas
        self._snapshot = snapshot
        self._membership = membership
        self._preemptions = preemptions
        #: Counting since the first Queue object (module docstring).
        self.on = False
        #: Each bound member's queue and requests, as charged.
        self._charged: dict[str, tuple[str, Mapping[str, int]]] = {}
        #: The groups whose pending members count as demand, and in which queue.
        self._claiming: dict[GroupKey, str] = {}

    # -- the ledger ------------------------------------------------------------

    def start(self) -> None:
        """Charge every bound member and count every pending one, once (the first Queue)."""
        if self.on:
            return
        self.on = True
        membership = self._membership
        for key in membership.groups():
            members = membership.record(key)
            assert members is not None
            queue = membership.queue_name(key)
            for pod in members.bound.values():
                self._charge(pod, queue)
            members.demand = {}
            for pod in members.pending.values():
                add_amounts(members.demand, pod.requests)
            if members.demand:
                self._claim(key, members)

    def uncharge(self, uid: str) -> None:
        """Give back what a pod was charged, if anything."""
        charged = self._charged.pop(uid, None)
        if charged is not None:
            self.quotas.charge(charged[0], charged[1], -1)

    def filed(self, pod: PodInfo, key: GroupKey | None, state: State | None, filed: Filed) -> None:
        """The pod was filed (after :meth:`uncharge`): count it where it is now."""
        if not self.on:
            return
        membership = self._membership
        previous, left = filed.previous, filed.left
        if previous is not None and left is not None:
            record = membership.record(previous)
            assert record is not None
            add_amounts(record.demand, left.requests, -1)
            claimed_in = self._claiming.get(previous)
            if claimed_in is not None:
                self.quotas.add_demand(claimed_in, previous.namespace, left.requests, -1)
        if key is None or state is None:
            return
        if state is State.PENDING:
            members = membership.record(key)
            assert members is not None
            add_amounts(members.demand, pod.requests)
            claimed_in = self._claiming.get(key)
            if claimed_in is None:
                self._claim(key, members)
            else:
                self.quotas.add_demand(claimed_in, key.namespace, pod.requests)
        else:
            self._charge(pod, membership.queue_name(key))

    def withdraw(self, key: GroupKey) -> None:
        """Stop counting the group's pending members as demand (until a member changes)."""
        queue = self._claiming.pop(key, None)
        members = self._membership.record(key)
        if queue is not None and members is not None:
            self.quotas.add_demand(queue, key.namespace, members.demand, -1)

    def recharge(self, key: GroupKey) -> None:
        """The group moved to another queue: its bound members' usage and its demand move too."""
        members = self._membership.record(key)
        if members is None or not self.on:
            return
        queue = self._membership.queue_name(key)
        for pod in members.bound.values():
            self.uncharge(pod.uid)
            self._charge(pod, queue)
        if key in self._claiming:
            self.withdraw(key)
            self._claim(key, members)

    def _charge(self, pod: PodInfo, queue: str) -> None:
        """Count a bound member's requests as its queue's usage."""
        self.quotas.charge(queue, pod.requests)
        self._charged[pod.uid] = (queue, pod.requests)

    def _claim(self, key: GroupKey, members: Members) -> None:
        """Count the group's pending members as its queue's demand."""
        queue = self._membership.queue_name(key)
        self.quotas.add_demand(queue, key.namespace, members.demand)
        self._claiming[key] = queue

    # -- admission -------------------------------------------------------------

    def within_quota(self, decision: Decision, queue: str) -> Decision:
        """Undo what the queue may not take: the whole gang, or extra members one by one."""
        pods = self._membership.pods
        requests = [pods[binding.uid].requests for binding in decision.bindings]
        memo: dict[str, object] = {}
        snapshot = self._snapshot

        def free() -> dict[str, int]:
            """Free capacity before this decision's bindings (asked at most once)."""
            if "free" not in memo:
                amounts = snapshot.free_capacity()
                for pod_requests in requests:
                    add_amounts(amounts, pod_requests)
                memo["free"] = amounts
            cached: dict[str, int] = memo["free"]  # type: ignore[assignment]
            return cached

        gang = decision.needed if decision.needed > 0 else 0
        need = self.gang_need(decision.group, requests[:gang])
        # Room held for the queue's preemptors is the queue's: no group takes its quota.
        held = self.held_for(queue, decision.group)
        refusal = self.quotas.admit(queue, need, free, memo, held=held) if gang else None
        if refusal is not None:
            for binding in decision.bindings:
                snapshot.forget(binding.uid)
            return dataclasses.replace(
                decision,
                status=refusal,
                bindings=(),
                admitted=False,
                pending=tuple(p.key for p in self._membership.members(decision.group)[0]),
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
            snapshot.forget(binding.uid)
            left.append(pods[binding.uid].key)
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

    def max_first(self, decision: Decision, queue: str, pending: list[PodInfo]) -> Decision:
        """No room, and its queue's max would refuse it anyway: that is the reason to give,
        since room freeing up would not let it in."""
        needed = decision.needed
        if needed <= 0:
            return decision
        need = self.gang_need(decision.group, [pod.requests for pod in pending[:needed]])
        over = self.quotas.over_max(queue, need, self.held_for(queue, decision.group))
        return decision if over is None else dataclasses.replace(decision, status=over)

    def gang_need(self, key: GroupKey, requests: Sequence[Mapping[str, int]]) -> dict[str, int]:
        """What the gang asks of its queue at once: its needed members, or its
        minResources less what its bound members hold, if larger."""
        need: dict[str, int] = {}
        for amounts in requests:
            add_amounts(need, amounts)
        policy = self._membership.policies.get(key)
        if requests and policy is not None:
            held = dict.fromkeys(policy.min_resources, 0)
            for pod in self._membership.standing(key)[1]:
                for resource in held:
                    held[resource] += pod.requests.get(resource, 0)
            for resource, amount in policy.min_resources.items():
                need[resource] = max(need.get(resource, 0), amount - held[resource])
        return need

    def held_for(self, queue: str, besides: GroupKey) -> dict[str, int]:
        """Room held for the queue's other preemptors, and restored for its gangs a refused
        eviction left short: its own once they bind."""
        held: dict[str, int] = {}
        queue_name = self._membership.queue_name
        for holder, pod in self._preemptions.held():
            if holder != besides and queue_name(holder) == queue:
                add_amounts(held, pod.requests)
        return held

    # -- preemption's queue rules ----------------------------------------------

    def admits_rule(self, who: Preemptor) -> Admits | None:
        """Whether the preemptor's queue takes its whole gang once given victims are gone."""
        queue = who.queue
        if not self.on or queue is None:
            return None
        needed = max(who.policy.min_member - len(who.bound), 0)
        need = self.gang_need(who.key, [pod.requests for pod in who.pending[:needed]])
        held = self.held_for(queue, who.key)
        charged = self._charged
        snapshot = self._snapshot

        def admits(victims: Sequence[Victim]) -> bool:
            # A gang's whole unit and its unit above minMember may share pods: once each.
            pods = {pod.uid: pod for unit in victims for pod in unit.pods}
            returned: dict[str, dict[str, int]] = {}
            for uid in pods:
                if uid in charged:  # still counted in its queue's usage
                    owner, amounts = charged[uid]
                    add_amounts(returned.setdefault(owner, {}), amounts)

            def free() -> dict[str, int]:
                amounts = snapshot.free_capacity()
                for uid, pod in pods.items():
                    if snapshot.node_of(uid) is not None:  # not yet taken out
                        add_amounts(amounts, pod.requests)
                return amounts

            return self.quotas.admit(queue, need, free, returned=returned, held=held) is None

        return admits

    def reclaim_rule(self, who: Preemptor) -> VictimRule | None:
        """Victims of other queues for a preemptor whose queue takes back its nominal."""
        if not self.on:
            return None
        taker = who.queue
        need: dict[str, int] = {}
        for pod in who.pending:
            add_amounts(need, pod.requests)
        if taker is not None:
            # Counted now, or two of its groups each take back the same nominal.
            add_amounts(need, self.held_for(taker, who.key))
        if taker is None or not self.quotas.wants_back(taker, need):
            return None
        quotas = self.quotas

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
            return quotas.may_reclaim(taker, queue, removed)

        return rule
