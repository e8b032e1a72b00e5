"""Carrying out the core's preemption plans: budgets, evictions, and saying so.

The core (:mod:`coscheduler.core.preemption`) decides and holds the room;
this module does the I/O, in this order, for a plan to carry out:

1. Disruption budgets are judged for the plan as a whole *before* the first
   eviction, from a fresh list of the victims' namespaces' budgets (the
   core judged them from its watch; this closes the race): if one would be
   exceeded, nothing is evicted, the groups it protects are spared and the
   preemptor is tried again (another plan, or none).
2. The preemptor's members get ``status.nominatedNodeName`` (as
   kube-scheduler writes it).
3. Each victim gets a ``DisruptionTarget`` condition naming the preemptor
   and an event, then is evicted through the Eviction API (``policy/v1``),
   so a budget still holds at the last moment; a victim PodGroup gets an
   event too. Victim groups go one after the other, each by one member
   first, then the rest (:meth:`Preempter._evict_by_group`): a refusal (a
   budget that changed meanwhile, or any other error answer) stops the plan
   there, releases the room and spares that group; only a refusal after a
   group's first member leaves it short. The core is told which pods went
   and holds their room for the short gang's recreated members (so the
   preemptor's next plan cannot take it, and the gang is whole again); the
   gang gets a ``RoomHeld`` event.

Plans that are not carried out (``dry-run``, or no plan) are told on the
waiting group: the core writes the plan, or why there is none, into the
decision's message, which its ``Unschedulable`` condition and
``FailedScheduling`` event carry; a dry-run's plan is an event as well.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable

import structlog

from coscheduler.api.pod import PodInfo
from coscheduler.api.reasons import Reason
from coscheduler.api.timestamps import rfc3339
from coscheduler.core.group import KIND_COMPOSITE, KIND_NATIVE_POD_GROUP, GroupKey
from coscheduler.core.planner import Decision
from coscheduler.core.preemption import Mode, Order, PreemptionPlan
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.statement import Binding
from coscheduler.runtime.errors import ApiError, Conflict, NotFound, TooManyRequests
from coscheduler.runtime.events import EventKind, ObjectRef
from coscheduler.runtime.groups import Groups
from coscheduler.runtime.handlers.budgets import read_budget
from coscheduler.runtime.kube import STRATEGIC_MERGE_PATCH, KubeClient
from coscheduler.runtime.reporter import Reporter

__all__ = ["Preempter", "group_ref"]

log = structlog.get_logger(__name__)


class Preempter:
    """Carries out orders (see the module docstring); feeds the core the budgets."""

    def __init__(
        self,
        *,
        scheduler: Scheduler,
        client: KubeClient,
        reporter: Reporter,
        group_ref: Callable[[GroupKey], ObjectRef | None],
        wake: Callable[[], None],
        preempted: Callable[[GroupKey, str], None] = lambda _key, _message: None,
    ) -> None:
        self._scheduler = scheduler
        #: Told each group that lost members to a preemption (its status says so).
        self._preempted = preempted
        self._client = client
        self._reporter = reporter
        self._reporting = reporter.client
        self._events = reporter.events
        self._metrics = reporter.metrics
        self._group_ref = group_ref
        self._wake = wake
        self._tasks: set[asyncio.Task[None]] = set()
        #: Why the Eviction API refused a victim (by uid), until the plan tells it.
        self._refusals: dict[str, str] = {}
        #: Groups whose pods carry a nominatedNodeName of ours, and where.
        self._nominated: dict[GroupKey, tuple[Binding, ...]] = {}

    @property
    def mode(self) -> Mode:
        return self._scheduler.preemption_settings.mode

    # -- after each decision --------------------------------------------------

    def take(self, decision: Decision) -> None:
        """Carry out this decision's preemption order, and count what preemption did."""
        if decision.preemption_found is not None:
            self._metrics.preemption_attempts.inc()
            outcome = "found" if decision.preemption_found else "none"
            self._metrics.preemption_plans.labels(outcome=outcome).inc()
        if decision.preemption_waited is not None:
            self._metrics.preemption_to_placed.observe(decision.preemption_waited)
        if decision.preemption is not None:
            self._take(decision.preemption)
        key = decision.group
        if decision.admitted:
            self._nominated.pop(key, None)
        elif key in self._nominated and self._scheduler.hold(key) is None:
            self._unnominate(key)  # the hold ran out: the pods are nominated nowhere now

    def _take(self, order: Order) -> None:
        plan = order.plan
        if not order.evict:
            if plan.found:
                message = f"dry-run: {plan.summary}"
                self._tell_group(plan.preemptor, "Normal", Reason.PREEMPTING, message)
            return
        task = asyncio.create_task(self._carry_out(plan))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for plans being carried out (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- carrying out a plan ----------------------------------------------------

    async def _carry_out(self, plan: PreemptionPlan) -> None:
        if not await self._budgets_allow(plan):
            return
        key = plan.preemptor
        self._tell_group(
            key, "Normal", Reason.PREEMPTING, plan.summary.replace("would preempt", "preempting")
        )
        self._nominated[key] = plan.nominated
        await asyncio.gather(*(self._nominate(b.namespace, b.name, b.node) for b in plan.nominated))
        who = f"pod {key}" if key.lone else f"PodGroup {key}"
        message = f"preempted by {who} (priority {plan.priority}) to place it whole"
        results = await self._evict_by_group(plan, message)
        gone = {uid for uid, ok in results if ok}
        refused_pods = {uid for uid, ok in results if not ok}
        self._tell_evicted(plan, gone, message)
        log.info(
            "preempting",
            group=str(key),
            plan=plan.summary,
            evicted=len(gone),
            refused=len(results) - len(gone),
        )
        refused_groups = {
            victim.group.key
            for victim in plan.victims
            if any(pod.uid in refused_pods for pod in victim.pods)
        }
        if refused_groups:
            self._spare_refused(plan, who, gone, refused_pods, refused_groups)

    async def _budgets_allow(self, plan: PreemptionPlan) -> bool:
        """Judge the disruption budgets for the whole plan before the first eviction.

        When a budget would be exceeded, or the budgets cannot be read, nothing is
        evicted: the preemptor is told why and tried again, sparing those groups.
        """
        key = plan.preemptor
        try:
            refused = await self._refused_by_budgets(plan)
        except ApiError as error:
            log.warning("budgets not read: nothing evicted", group=str(key), error=str(error))
            self._fail(key, (), {victim.group.key for victim in plan.victims})
            return False
        if not refused:
            return True
        names = ", ".join(sorted(str(group) for group in refused))
        why = "; ".join(f"{group}: {refused[group]}" for group in sorted(refused))
        log.info("preemption refused by a disruption budget", group=str(key), spared=names)
        self._tell_group(
            key,
            "Warning",
            Reason.EVICTION_REFUSED,
            f"not preempting {why}; looking for other victims",
        )
        self._fail(key, refused, {victim.group.key for victim in plan.victims} - set(refused))
        return False

    def _tell_evicted(self, plan: PreemptionPlan, gone: set[str], message: str) -> None:
        """Count the evicted pods and groups; a `Preempted` event on each victim gang."""
        self._metrics.preemption_evicted_pods.inc(len(gone))
        lost: dict[tuple[GroupKey, str], int] = {}
        for victim in plan.victims:
            count = sum(1 for pod in victim.pods if pod.uid in gone)
            if not (victim.group.gang and count):
                continue
            key = victim.group.key
            if victim.role is not None and key.kind == KIND_COMPOSITE:
                # A composite's child evicted apart: the child PodGroup is told, its
                # siblings run on.
                key = GroupKey(key.namespace, victim.role, KIND_NATIVE_POD_GROUP)
            if victim.role is not None:
                part = "the whole gang" if count == len(victim.pods) else "of the gang"
            elif not victim.whole:
                part = "above its minMember"
            elif count == len(victim.pods):
                part = "the whole gang"
            else:
                part = "of the gang; the others' eviction was refused"
            slot = (key, part)
            lost[slot] = lost.get(slot, 0) + count
        self._metrics.preemption_evicted_groups.inc(len({group for group, _ in lost}))
        for (group, part), count in lost.items():
            what = f"{count} pod{'s' if count != 1 else ''} ({part})"
            self._tell_group(group, "Warning", Reason.PREEMPTED, f"{what} {message}")
            self._preempted(group, f"{what} {message}")

    def _spare_refused(
        self,
        plan: PreemptionPlan,
        who: str,
        gone: set[str],
        refused_pods: set[str],
        refused_groups: set[GroupKey],
    ) -> None:
        """An eviction was refused: tell the preemptor, spare those groups and the
        untouched ones, and hold the room of a gang the refusal left short."""
        key = plan.preemptor
        why = "; ".join(self._refusals.pop(uid) for uid in refused_pods if uid in self._refusals)
        names = ", ".join(sorted(str(group) for group in refused_groups))
        self._tell_group(
            key,
            "Warning",
            Reason.EVICTION_REFUSED,
            f"not preempting {names}: eviction refused ({why}); looking for other victims",
        )
        touched = {
            victim.group.key
            for victim in plan.victims
            if any(pod.uid in gone or pod.uid in refused_pods for pod in victim.pods)
        }
        untouched = {victim.group.key for victim in plan.victims} - touched
        restored = self._fail(key, refused_groups, untouched, plan=plan, evicted=gone)
        hold_seconds = self._scheduler.preemption_settings.hold_seconds
        for group, count in restored.items():
            pods = f"{count} pod{'s' if count != 1 else ''}"
            self._tell_group(
                group,
                "Normal",
                Reason.ROOM_HELD,
                f"below its minMember: {pods} evicted for {who}, then an eviction was "
                f"refused; the room of the evicted is held for their recreated pods "
                f"(up to {hold_seconds:.0f} s) so the gang is whole again",
            )

    async def _evict_by_group(self, plan: PreemptionPlan, message: str) -> list[tuple[str, bool]]:
        """Evict the victims group by group, each first by one member, then the rest.

        A refusal stops the plan there: the groups after it keep every member
        (the plan cannot place the preemptor without the refused one anyway), and
        a refusal of a group's first member costs that group nothing. Only a
        refusal after its first member leaves a group short; the core then holds
        the room of its evicted members for their recreated pods.
        """
        by_group: dict[GroupKey, dict[str, PodInfo]] = {}
        for victim in plan.victims:
            by_group.setdefault(victim.group.key, {}).update({p.uid: p for p in victim.pods})
        results: list[tuple[str, bool]] = []
        for pods in by_group.values():
            first, *rest = pods.values()
            results.append(await self._evict(first.namespace, first.name, first.uid, message))
            if not results[-1][1]:
                break
            results.extend(
                await asyncio.gather(
                    *(self._evict(pod.namespace, pod.name, pod.uid, message) for pod in rest)
                )
            )
            if not all(ok for _, ok in results):
                break
        return results

    async def _refused_by_budgets(self, plan: PreemptionPlan) -> dict[GroupKey, str]:
        """Victim groups a budget would stop halfway, and why, from a fresh list of them."""
        refused: dict[GroupKey, str] = {}
        group_of = {pod.uid: victim.group.key for victim in plan.victims for pod in victim.pods}
        budgets_of: dict[str, list[str]] = {}
        for namespace in sorted({pod.namespace for pod in plan.pods}):
            answer = await self._client.call(
                "GET", f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"
            )
            for raw in answer.get("items") or ():
                budget = read_budget(raw, self._reporter)
                if budget is None:
                    continue
                covered = [p for p in plan.pods if budget.covers(p.namespace, p.labels)]
                for pod in covered:
                    budgets_of.setdefault(pod.uid, []).append(budget.key)
                if len(covered) > budget.allowed:
                    why = (
                        f"PodDisruptionBudget {budget.key} allows {budget.allowed} "
                        f"eviction{'s' if budget.allowed != 1 else ''}, the plan needs "
                        f"{len(covered)}"
                    )
                    refused.update({group_of[p.uid]: why for p in covered})
        # The Eviction API refuses a pod that more than one budget covers (500).
        names = {pod.uid: f"{pod.namespace}/{pod.name}" for pod in plan.pods}
        for uid, keys in budgets_of.items():
            if len(keys) > 1:
                refused[group_of[uid]] = (
                    f"pod {names[uid]} is under {len(keys)} PodDisruptionBudgets "
                    f"({', '.join(sorted(keys))}), which the Eviction API refuses to evict"
                )
        return refused

    async def _nominate(self, namespace: str, name: str, node: str | None) -> None:
        body = {"status": {"nominatedNodeName": node}}
        try:
            await self._reporting.send(
                "PATCH",
                f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                body=body,
                content_type=STRATEGIC_MERGE_PATCH,
            )
        except (NotFound, Conflict):
            pass
        except ApiError as error:
            log.warning(
                "nominatedNodeName not written", pod=f"{namespace}/{name}", error=str(error)
            )

    async def _evict(self, namespace: str, name: str, uid: str, message: str) -> tuple[str, bool]:
        """Mark the victim, evict it, tell it; (uid, False) when the eviction was refused
        (its condition then says so, and no event says it was preempted)."""
        pod_path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": Reason.PREEMPTION_BY_SCHEDULER.value,
            "message": f"coscheduler: {message}",
            "lastTransitionTime": rfc3339(),
        }
        try:
            await self._client.send(
                "PATCH",
                f"{pod_path}/status",
                body={"metadata": {"uid": uid}, "status": {"conditions": [condition]}},
                content_type=STRATEGIC_MERGE_PATCH,
            )
        except (NotFound, Conflict):
            return uid, True  # gone already
        except ApiError as error:
            log.warning("DisruptionTarget not written", pod=f"{namespace}/{name}", error=str(error))
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": uid}},
        }
        try:
            await self._client.send("POST", f"{pod_path}/eviction", body=eviction)
        except (NotFound, Conflict):
            return uid, True
        except ApiError as error:
            what = "refused" if isinstance(error, TooManyRequests) else "failed"
            log.warning("eviction " + what, pod=f"{namespace}/{name}", error=str(error))
            self._refusals[uid] = f"{namespace}/{name}: {error.message}"
            # The pod stays: its condition must not say it is going.
            kept = {
                **condition,
                "status": "False",
                "reason": Reason.EVICTION_REFUSED.value,
                "message": f"coscheduler: eviction {what} ({error.message}); the pod stays",
                "lastTransitionTime": rfc3339(),
            }
            with contextlib.suppress(ApiError):
                await self._client.send(
                    "PATCH",
                    f"{pod_path}/status",
                    body={"metadata": {"uid": uid}, "status": {"conditions": [kept]}},
                    content_type=STRATEGIC_MERGE_PATCH,
                )
            return uid, False
        self._events.record(
            ObjectRef("v1", "Pod", namespace, name, uid),
            "Normal",
            Reason.PREEMPTED,
            message[0].upper() + message[1:],
        )
        return uid, True

    def _fail(
        self,
        key: GroupKey,
        refused: Iterable[GroupKey],
        untouched: Iterable[GroupKey] = (),
        *,
        plan: PreemptionPlan | None = None,
        evicted: Iterable[str] = (),
    ) -> dict[GroupKey, int]:
        self._unnominate(key)
        restored = self._scheduler.preemption_failed(
            key, refused, untouched, plan=plan, evicted=evicted
        )
        self._wake()
        return restored

    def _unnominate(self, key: GroupKey) -> None:
        for binding in self._nominated.pop(key, ()):
            task = asyncio.create_task(self._nominate(binding.namespace, binding.name, None))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _tell_group(self, key: GroupKey, kind: EventKind, reason: str, message: str) -> None:
        ref = self._group_ref(key)
        if ref is not None:
            self._events.record(ref, kind, reason, message)


def group_ref(scheduler: Scheduler, groups: Groups, key: GroupKey) -> ObjectRef | None:
    """Where events about a group go: its PodGroup, or a lone pod itself."""
    if key.lone:
        pending, bound = scheduler.members(key)
        pods = pending or bound
        return ObjectRef("v1", "Pod", key.namespace, key.name, pods[0].uid) if pods else None
    group = groups.podgroups.get(key)
    if group is None:
        return None
    return ObjectRef(
        group.api.api_version, group.api.kind, group.namespace, group.name, group.uid or ""
    )
