"""The scheduling loop: ask the core for the next decision, carry it out.

Order of work, and why:

1. The core decides synchronously (``Scheduler.next_decision``); its bindings
   are already assumed in the snapshot, so the next decision sees them.
2. Bindings go out in a background task and the loop goes on to the next
   group at once: the API server's latency never stalls planning. A failed
   binding is reported back to the core (``binding_failed``), which forgets
   the assumption and backs the group off; a pod gone (404) or bound
   elsewhere (409) is left to its own watch event. A pod's Binding waits for
   a ``PodScheduled=False`` write about it already in flight, so the True the
   API server sets on binding is the last word (``podstatus`` rule 5).
3. A group that cannot be placed gets its verdict recorded (the status
   controller writes it on the PodGroup). Every member of ours left pending by
   an attempt, whatever the outcome (a failed gang, members beyond minMember
   or of a running group that do not fit, a lone pod, a missing group), gets
   ``PodScheduled=False`` with a reason and message, and a ``FailedScheduling``
   event (both deduplicated and rate-limited); the binding clears it.
4. Between decisions the loop yields to the event loop, so watch events are
   applied while a long queue is worked through: after every decision that
   binds (its Bindings leave while the next group is planned, instead of
   waiting behind a backlog's next decisions), and after 16 that do not.
5. With nothing ready, it sleeps until the queue's next backoff or flush is
   due (:meth:`Scheduler.ready_at`) or a watch event wakes it. A watch event
   only feeds the core: which waiting groups it can help, the core decides
   (:mod:`~coscheduler.core.requeue`), so while nothing that could place a
   group happens, no group is tried and nothing is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from functools import partial

import structlog

from coscheduler.api.reasons import Reason
from coscheduler.api.workload_ref import WorkloadRef
from coscheduler.core.devices import ClaimWrite
from coscheduler.core.group import (
    KIND_COMPOSITE,
    KIND_KUEUE,
    KIND_NATIVE_POD_GROUP,
    KIND_WORKLOAD,
    GroupKey,
)
from coscheduler.core.planner import Decision
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.statement import Binding, VolumeAction
from coscheduler.core.status import Status
from coscheduler.runtime.binder import Binder, BindOutcome, BindResult
from coscheduler.runtime.device_writer import DeviceWriter
from coscheduler.runtime.events import ObjectRef
from coscheduler.runtime.groups import Groups
from coscheduler.runtime.handlers.jobs import JobOwners
from coscheduler.runtime.metrics import members_class
from coscheduler.runtime.preemption import Preempter
from coscheduler.runtime.reporter import Reporter
from coscheduler.runtime.volume_binder import VolumeBinder

__all__ = ["SchedulingLoop"]

log = structlog.get_logger(__name__)

# Decisions between two yields to the event loop (rule 4).
_DECISIONS_PER_YIELD = 16


def _pod_reason(why: Status) -> Reason:
    """The reason on a waiting pod's ``PodScheduled=False`` condition.

    ``Unschedulable`` when more room would help, as kube-scheduler writes it
    and the cluster-autoscaler reads it; otherwise what the pod waits for (its
    members, its group), so that no node is added for a pod room cannot place.
    """
    return Reason.UNSCHEDULABLE if why.room_would_help else why.cause or why.reason


def _pod_message(key: GroupKey, why: Status, unreadable: str | None = None) -> str:
    """What a waiting pod says about itself.

    While a group gathers members, the planner's count ("3/4 members exist")
    changes with every pod created; written on each pod it would cost a write
    per pod per new member. The pods say where to look instead, in words that
    stay the same; the PodGroup's condition carries the counts.
    """
    waiting_for = why.cause or why.reason
    if key.kind == KIND_WORKLOAD:
        return _workload_pod_message(key, waiting_for) or why.message
    if key.kind == KIND_NATIVE_POD_GROUP:
        return _native_pod_message(key, waiting_for, unreadable) or why.message
    if key.kind == KIND_COMPOSITE:
        return _composite_pod_message(key, waiting_for) or why.message
    if key.kind == KIND_KUEUE:
        return _kueue_pod_message(key, waiting_for) or why.message
    if waiting_for is Reason.NOT_ENOUGH_MEMBERS:
        return (
            f"waiting for more members of PodGroup {key}: see kubectl describe podgroup "
            f"{key.name} -n {key.namespace}"
        )
    if waiting_for is Reason.GROUP_NOT_FOUND:
        if unreadable is not None:
            # It exists, but coscheduler cannot read it: saying "does not exist" would mislead.
            return f"PodGroup {key} cannot be read, so it is treated as missing: {unreadable}"
        return (
            f"PodGroup {key} does not exist: create it, or correct the pod's label "
            f"scheduling.sigs.k8s.io/pod-group"
        )
    return why.message


def _workload_pod_message(key: GroupKey, waiting_for: Reason) -> str | None:
    """:func:`_pod_message` for a pod of a native Workload's gang (None: the planner's)."""
    workload = WorkloadRef.from_gang_name(key.name).workload
    if waiting_for is Reason.NOT_ENOUGH_MEMBERS:
        return (
            f"waiting for more members of {key.title}: see kubectl describe workload "
            f"{workload} -n {key.namespace}"
        )
    if waiting_for is Reason.GROUP_NOT_FOUND:
        return (
            f"{key.title} is not known: create the Workload with that podGroup, or correct "
            "the pod's spec.workloadRef"
        )
    return None


def _composite_pod_message(key: GroupKey, waiting_for: Reason) -> str | None:
    """:func:`_pod_message` for a member of a CompositePodGroup's gang (None: the planner's)."""
    if waiting_for is Reason.NOT_ENOUGH_MEMBERS:
        return (
            f"waiting for more members or child PodGroups of {key.title}: see kubectl "
            f"describe compositepodgroup {key.name} -n {key.namespace}"
        )
    if waiting_for is Reason.GROUP_NOT_FOUND:
        return (
            f"{key.title}, the parent the pod's PodGroup names, does not exist: create it, "
            "or correct the PodGroup's spec.parentCompositePodGroupName"
        )
    return None


def _kueue_pod_message(key: GroupKey, waiting_for: Reason) -> str | None:
    """:func:`_pod_message` for a member of a gang Kueue admits (None: the planner's)."""
    if waiting_for is Reason.NOT_ENOUGH_MEMBERS:
        return (
            f"waiting for more members of {key.title}: see kubectl describe "
            f"workloads.kueue.x-k8s.io {key.name} -n {key.namespace}"
        )
    if waiting_for is Reason.GROUP_NOT_FOUND:
        return f"{key.title} is not known or not admitted by Kueue: the pod waits for its admission"
    return None


def _native_pod_message(key: GroupKey, waiting_for: Reason, unreadable: str | None) -> str | None:
    """:func:`_pod_message` for a member of a native PodGroup (None: the planner's)."""
    if waiting_for is Reason.NOT_ENOUGH_MEMBERS:
        return (
            f"waiting for more members of {key.title}: see kubectl describe "
            f"podgroups.scheduling.k8s.io {key.name} -n {key.namespace}"
        )
    if waiting_for is Reason.GROUP_NOT_FOUND:
        if unreadable is not None:
            return f"{key.title} cannot be read, so it is treated as missing: {unreadable}"
        return (
            f"{key.title} does not exist: create it, or correct the pod's "
            "spec.schedulingGroup.podGroupName"
        )
    return None


def _pod_ref(namespace: str, name: str, uid: str) -> ObjectRef:
    return ObjectRef("v1", "Pod", namespace, name, uid)


class SchedulingLoop:
    def __init__(
        self,
        *,
        scheduler: Scheduler,
        groups: Groups,
        owners: JobOwners,
        binder: Binder,
        volume_binder: VolumeBinder,
        reporter: Reporter,
        wake: asyncio.Event,
        wall_clock: Callable[[], float] = time.time,
        preempter: Preempter | None = None,
        on_decided: Callable[[], None] = lambda: None,
        on_idle: Callable[[], None] = lambda: None,
        device_writer: DeviceWriter | None = None,
    ) -> None:
        self._scheduler = scheduler
        self._device_writer = device_writer
        #: Called with each decision that binds (the start-up line's first decision).
        self._on_decided = on_decided
        #: Called each time the core has nothing ready (the first time ends the first pass).
        self._on_idle = on_idle
        self._groups = groups
        self._owners = owners
        self._binder = binder
        self._volume_binder = volume_binder
        self._events = reporter.events
        self._pod_conditions = reporter.pod_conditions
        self._metrics = reporter.metrics
        self._wall_clock = wall_clock
        self._preempter = preempter
        #: Set by anything that may make a group placeable (watch events, the preempter).
        self._wake = wake
        self._binds: set[asyncio.Task[None]] = set()
        #: Set while no binding is in flight: the reporting writers wait for it.
        self.binds_idle = asyncio.Event()
        self.binds_idle.set()
        # When each group waiting to be admitted was first tried (gang wait).
        self._first_tried: dict[GroupKey, float] = {}
        #: The queue's sizes as last set on the gauges.
        self._queue_reported: dict[str, int] = {}
        self.decisions = 0

    def wake(self) -> None:
        """Something changed that may make a group placeable: look again."""
        self._wake.set()

    async def run(self) -> None:
        since_yield = 0
        while True:
            self._wake.clear()
            started = time.perf_counter()
            decision = self._scheduler.next_decision()
            if decision is None:
                self._on_idle()
                self._report_queue()
                await self._sleep_until_ready()
                since_yield = 0
                continue
            self._metrics.planner_duration.labels(members=members_class(decision.members)).observe(
                time.perf_counter() - started
            )
            if self._preempter is not None:
                self._preempter.take(decision)
            self.decisions += 1
            self._carry_out(decision)
            since_yield += 1
            if decision.bindings or since_yield >= _DECISIONS_PER_YIELD:
                since_yield = 0
                await asyncio.sleep(0)

    async def drain(self) -> None:
        """Wait for bindings in flight (used at shutdown and by tests)."""
        while self._binds:
            await asyncio.gather(*self._binds, return_exceptions=True)

    def _bind_done(self, task: asyncio.Task[None]) -> None:
        self._binds.discard(task)
        if not self._binds:
            self.binds_idle.set()

    def _report_queue(self) -> None:
        # Each watch event wakes the loop: the gauges are set only when a size moved.
        sizes = self._scheduler.queue_sizes()
        if sizes == self._queue_reported:
            return
        self._queue_reported = sizes
        for pool, size in sizes.items():
            self._metrics.queue_length.labels(pool=pool).set(size)

    async def _sleep_until_ready(self) -> None:
        ready_at = self._scheduler.ready_at()
        timeout = None if ready_at is None else max(0.0, ready_at - self._scheduler.clock())
        # Not asyncio.wait_for: on Python 3.11 it can swallow a cancellation that
        # arrives as the wake-up does, and the loop would run on after shutdown.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._wake.wait()

    # -- carrying out one decision -------------------------------------------

    def _carry_out(self, decision: Decision) -> None:
        key = decision.group
        status = decision.status
        if decision.error is not None:
            error = decision.error
            log.error("deciding failed; the group backs off", group=str(key), exc_info=error)
        result = "scheduled" if decision.bindings else status.code.value.lower()
        self._metrics.scheduling_attempts.labels(result=result).inc()
        if decision.bindings:
            self._on_decided()
            task = asyncio.create_task(
                self._bind(key, decision.bindings, decision.volume_actions, decision.device_writes)
            )
            self._binds.add(task)
            self.binds_idle.clear()
            task.add_done_callback(self._bind_done)
        if decision.device_releases and self._device_writer is not None:
            release = asyncio.create_task(self._device_writer.release(decision.device_releases))
            self._binds.add(release)
            self.binds_idle.clear()
            release.add_done_callback(self._bind_done)
        if decision.admitted:
            first = self._first_tried.pop(key, None)
            if decision.bindings:
                self._metrics.gang_wait.observe(
                    0.0 if first is None else self._wall_clock() - first
                )
                if decision.needed:
                    queue = self._scheduler.queue_name(key)
                    self._metrics.queue_admitted_groups.labels(queue=queue).inc()
            self._groups.set_verdict(key, None)
        elif not status.ok:
            self._first_tried.setdefault(key, self._wall_clock())
            if not key.lone and status.reason is not Reason.GROUP_NOT_FOUND:
                self._groups.set_verdict(key, status)
        why = decision.why_pending
        if why is None:
            return
        log.info(
            "members not placed",
            group=str(key),
            reason=why.reason.value,
            message=why.message,
            members=decision.members,
            bound=decision.bound + len(decision.bindings),
            pending=len(decision.pending),
        )
        message = _pod_message(key, why, self._groups.unreadable_group(key))
        if (why.cause or why.reason) is Reason.GROUP_NOT_FOUND:
            # A Job's pods carry no label to correct: say what they wait for.
            message = self._owners.wait_message(key) or message
        self._tell_pending_pods(key, _pod_reason(why), message)

    def _tell_pending_pods(self, key: GroupKey, reason: Reason, message: str) -> None:
        pending, _ = self._scheduler.members(key)
        for pod in pending:
            self._pod_conditions.explain(pod.uid, pod.namespace, pod.name, reason, message)
            self._events.record(
                _pod_ref(pod.namespace, pod.name, pod.uid),
                "Warning",
                Reason.FAILED_SCHEDULING,
                message,
                still_true=partial(self._scheduler.is_waiting, pod.uid),
            )

    async def _bind(
        self,
        key: GroupKey,
        bindings: tuple[Binding, ...],
        volume_actions: tuple[VolumeAction, ...] = (),
        device_writes: tuple[ClaimWrite, ...] = (),
    ) -> None:
        if volume_actions:
            why = await self._volume_binder.prepare(volume_actions)
            if why is not None:
                # Nothing is bound: the group goes back whole, its volumes given back.
                self._scheduler.release_volumes(volume_actions)
                for binding in bindings:
                    self._scheduler.binding_failed(binding)
                log.warning("volumes not ready, no member bound", group=str(key), why=why)
                self._tell_pending_pods(key, Reason.VOLUME_NOT_READY, why)
                self.wake()
                return
        if device_writes:
            writer = self._device_writer
            why = "no device writer" if writer is None else await writer.write(device_writes)
            if why is not None:
                # Nothing is bound and no claim keeps what was written: the gang goes back whole.
                for binding in bindings:
                    self._scheduler.binding_failed(binding)
                log.warning("claims not written, no member bound", group=str(key), why=why)
                self.wake()
                return
        live = []
        for binding in bindings:
            if self._scheduler.pod(binding.uid) is None:  # deleted since the decision
                self._scheduler.binding_failed(binding)
                continue
            live.append(binding)
        # A PodScheduled=False already on its way must reach the server before the
        # Binding (which sets it True), or it would stay on the bound pod.
        await self._pod_conditions.settled(binding.uid for binding in live)
        started = self._wall_clock()
        results = await self._binder.bind_all(live)
        failed = 0
        for result in results:
            failed += self._record(result, started)
        if failed:
            log.warning("bindings failed", group=str(key), failed=failed, total=len(results))
            self.wake()

    def _record(self, result: BindResult, started: float) -> int:
        binding = result.binding
        if result.outcome is BindOutcome.BOUND:
            self._metrics.pods_bound.inc()
            pod = self._scheduler.pod(binding.uid)
            if pod is not None and pod.created:
                self._metrics.scheduling_latency.observe(max(0.0, started - pod.created))
            self._pod_conditions.forget(binding.uid)
            message = f"Successfully assigned {binding.namespace}/{binding.name} to {binding.node}"
            self._events.record(
                _pod_ref(binding.namespace, binding.name, binding.uid),
                "Normal",
                Reason.SCHEDULED,
                message,
            )
            return 0
        self._metrics.bind_errors.labels(outcome=result.outcome.value).inc()
        if result.outcome is BindOutcome.FAILED:
            log.warning(
                "binding failed",
                pod=f"{binding.namespace}/{binding.name}",
                node=binding.node,
                error=result.detail,
            )
            self._scheduler.binding_failed(binding)
            return 1
        # Gone or bound elsewhere: the pod's watch event corrects the snapshot.
        return 0
