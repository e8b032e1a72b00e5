"""One attempt for one group, step by step: the decision pipeline.

The scheduler pops a group from its queue and hands its standing members
(:meth:`~coscheduler.core.membership.Membership.standing`) to
:meth:`Pipeline.decide`, which goes, in order:

1. the queue's gate (exists, valid, Open, allows the namespace): a closed
   gate ends the attempt, and the group claims none of its queue;
2. preemption's room for the group: restored room past its time is let go,
   and the group's own held room is lifted for its attempt;
3. the planner (:func:`~coscheduler.core.planner.plan`), on the members with
   their claims resolved;
4. the queue's admission (:meth:`~coscheduler.core.accounting.Accounts.within_quota`),
   or, with no room, whether its queue's max would refuse it anyway;
5. volumes for the placed members' first-consumer claims, or the placement
   undone;
6. preemption (:meth:`~coscheduler.core.preemption.Preemptions.settle`):
   the hold, or a victim search for a group that failed for room; an order
   to evict (or a plan to tell) travels with the decision;
7. the time of the first attempt (for ``scheduleTimeoutSeconds``).

The scheduler then files the bindings' pods as bound and tells the queue
how the attempt ended.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from coscheduler.api.native_podgroup import PodGroupClaim
from coscheduler.api.pod import PodInfo
from coscheduler.api.reasons import Reason
from coscheduler.core.accounting import Accounts
from coscheduler.core.decision import Decision
from coscheduler.core.devices import DeviceRefusalError
from coscheduler.core.group import GroupKey
from coscheduler.core.membership import Membership
from coscheduler.core.planner import plan
from coscheduler.core.preemption import Preemptions, RunningPriorities
from coscheduler.core.preemption.running import running_groups
from coscheduler.core.preemption.search import Admits, Preemptor
from coscheduler.core.quota import Quotas
from coscheduler.core.scoring import Scoring
from coscheduler.core.snapshot import Snapshot
from coscheduler.core.statement import VolumeAction
from coscheduler.core.status import Code, Status
from coscheduler.core.victims import RunningGroup, VictimRule
from coscheduler.core.volumes import NO_VOLUME_TO_BIND, VolumeIndex

__all__ = ["NO_ROOM", "Pipeline"]

#: The planner's reasons for a group that found no room.
NO_ROOM = frozenset({Reason.NOT_ENOUGH_RESOURCES, Reason.MIN_RESOURCES_UNAVAILABLE})


@dataclasses.dataclass(slots=True)
class Pipeline:
    """The steps of one attempt (module docstring), over the scheduler's parts."""

    clock: Callable[[], float]
    scoring: Scoring
    snapshot: Snapshot
    membership: Membership
    accounts: Accounts
    quotas: Quotas
    preemptions: Preemptions
    volumes: VolumeIndex
    running_priorities: RunningPriorities
    #: The time of each group's first attempt since it last was admitted or timed out.
    first_attempt: dict[GroupKey, float] = dataclasses.field(default_factory=dict)

    def decide(self, key: GroupKey, pending: list[PodInfo], bound: list[PodInfo]) -> Decision:
        """Steps 1-7 for the group's standing members."""
        now = self.clock()
        first = self.first_attempt.setdefault(key, now)
        queue = self.membership.queue_name(key)
        closed = self.quotas.gate(queue, key.namespace)
        if closed is not None:
            self.accounts.withdraw(key)
            return self.preemptions.told(
                Decision(
                    key,
                    closed,
                    members=len(pending) + len(bound),
                    bound=len(bound),
                    pending=tuple(pod.key for pod in pending),
                )
            )
        self.preemptions.expire(self.snapshot, now)
        self.preemptions.lift(self.snapshot, key)
        decision = self.plan(key, pending, bound, elapsed=now - first)
        accounting = self.accounts.on
        if decision.bindings and accounting:
            # Without Queue objects only the implicit default exists: it refuses nothing.
            decision = self.accounts.within_quota(decision, queue)
        elif accounting and decision.status.reason in NO_ROOM:
            decision = self.accounts.max_first(decision, queue, pending)
        if any(pod.claims for pod in pending):
            decision = self._with_volumes(decision)
        if any(pod.device_claims for pod in pending):
            decision = self._with_devices(decision, pending, bound)
        decision = self.preemptions.settle(
            self.snapshot, decision, now, _Attempted(self, key, pending, bound)
        )
        if decision.admitted:
            self.first_attempt.pop(key, None)
        elif decision.status.reason is Reason.TIMEOUT:
            self.first_attempt[key] = now
        return decision

    def failed(
        self, key: GroupKey, pending: list[PodInfo], bound: list[PodInfo], error: Exception
    ) -> Decision:
        """Undo what the failed attempt assumed, and say why.

        Pending members were not assumed before the attempt, so forgetting them
        leaves the snapshot as it was.
        """
        for pod in pending:
            self.snapshot.forget(pod.uid)
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

    def plan(
        self,
        key: GroupKey,
        pending: list[PodInfo],
        bound: list[PodInfo],
        elapsed: float | None = None,
    ) -> Decision:
        """Step 3: the planner, on the members with their claims resolved."""
        if any(pod.claims for pod in pending):
            used = self.membership.claim_used_by_other
            pending = [self.volumes.resolve(pod, used) for pod in pending]
        return plan(
            self.snapshot,
            key,
            self.membership.policy(key),
            pending,
            bound,
            scoring=self.scoring,
            elapsed=elapsed,
        )

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
                    pending=tuple(p.key for p in self.membership.members(decision.group)[0]),
                    unplaced=None,
                )
            actions.extend(assigned)
        return dataclasses.replace(decision, volume_actions=tuple(actions)) if actions else decision

    def _with_devices(
        self, decision: Decision, pending: list[PodInfo], bound: list[PodInfo]
    ) -> Decision:
        """The claims to write before the bindings; or, placing none, the claims to let go."""
        devices = self.snapshot.devices
        policy = self.membership.policy(decision.group)
        consumer = policy.consumer if policy is not None else None
        if decision.bindings:
            group_claims: dict[str, tuple[str, str]] = {}
            if policy is not None and consumer is not None:
                group_claims = _group_claim_keys(policy.shared_claims, consumer, pending)
            writes = devices.writes_for([(b.name, b.uid) for b in decision.bindings], group_claims)
            return dataclasses.replace(decision, device_writes=writes)
        waiting: list[tuple[str, Sequence[str]]] = []
        if consumer is not None and not bound:
            # Upstream's rule: with no member bound, the group's own claims may be let go.
            waiting.append((consumer[1], ()))
        for pod in pending:
            if not pod.device_claims or self.snapshot.is_assumed(pod.uid):
                continue
            try:
                keys = devices.claim_keys(pod.namespace, pod.name, pod.device_claims)
            except DeviceRefusalError:
                continue
            waiting.append((pod.uid, keys))
        stale = devices.stale(waiting)
        return dataclasses.replace(decision, device_releases=stale) if stale else decision


def _group_claim_keys(
    shared: Sequence[PodGroupClaim], consumer: tuple[str, str], members: Sequence[PodInfo]
) -> dict[str, tuple[str, str]]:
    """The claims of a native PodGroup its members use (key -> the group), as ``BindTo`` decides."""
    found: dict[str, tuple[str, str]] = {}
    for pod in members:
        for entry in pod.device_claims:
            if entry.claim is None:
                continue
            claim_name = entry.claim if entry.template is None else None
            if any(c.matches(entry.name, claim_name, entry.template) for c in shared):
                found[f"{pod.namespace}/{entry.claim}"] = consumer
    return found


@dataclasses.dataclass(slots=True)
class _Attempted:
    """What preemption asks about the group just tried (its ``Attempted``)."""

    pipeline: Pipeline
    key: GroupKey
    pending: list[PodInfo]
    bound: list[PodInfo]

    @property
    def scoring(self) -> Scoring:
        return self.pipeline.scoring

    @property
    def lowest(self) -> int | None:
        return self.pipeline.running_priorities.lowest()

    def preemptor(self) -> Preemptor | None:

        pipeline, pending = self.pipeline, self.pending
        policy = pipeline.membership.policy(self.key)
        if policy is None or not pending:
            return None
        if any(pod.claims for pod in pending):
            used = pipeline.membership.claim_used_by_other
            pending = [pipeline.volumes.resolve(pod, used) for pod in pending]
        priority = policy.priority
        if priority is None:
            priority = max(pod.priority for pod in pending)
        return Preemptor(
            policy, pending, self.bound, priority, pipeline.membership.queue_name(self.key)
        )

    def running(self) -> list[RunningGroup]:

        membership = self.pipeline.membership
        return running_groups(
            membership.pods.values(),
            self.pipeline.snapshot,
            membership.group_of,
            membership.policy,
            self.key,
            membership.queue_name,
            self.pipeline.preemptions.doomed,
        )

    def reclaim(self, who: Preemptor) -> VictimRule | None:
        return self.pipeline.accounts.reclaim_rule(who)

    def admits(self, who: Preemptor) -> Admits | None:
        return self.pipeline.accounts.admits_rule(who)
