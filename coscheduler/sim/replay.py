"""Replaying a workload in simulated time, with our planner or a baseline.

A discrete-event loop: the only events are gang arrivals and gang
completions; between two events nothing changes, so time jumps from one to
the next (no sleeping, no ticks). At each event time:

1. completions free their pods (removed from the core);
2. arrivals enter the core (their PodGroup and pods);
3. a *sweep* asks the core for decisions (:meth:`Scheduler.next_decision`)
   until none is ready, exactly as ``coscheduler run``'s loop does: the
   core's own queue chooses (priority, creation, name; with queues, the
   queue with the lowest weighted share first), a group that does not fit
   waits until a completion frees room one of its members fits in;
4. the rates (useful and partially held cpu) are sampled for the timeline.

Two policies, both placed by the same core (:class:`Scheduler`, same
scoring), differing only in what the core is told a group needs:

- ``gang``: each gang is a PodGroup with its ``minMember``; the planner binds
  all of them together or none; members beyond ``minMember`` follow one by
  one as capacity allows.
- ``baseline``: each gang is a group with ``minMember: 1``, so every pod is
  placed on its own as soon as it fits, in order: what a default scheduler
  does (pods of a gang are tried one after the other, each on the best node
  at that moment, with the same scoring). Bound pods of a gang that has not
  reached its ``minMember`` wait there, holding their resources.

In both, a gang *starts* when ``minMember`` of its pods are bound, runs for
its ``runSeconds``, then all its pods finish (members still pending are
dropped). The replay ends when no event is left; gangs that never started
are *stuck*, and stuck gangs holding pods are *deadlocked* (nothing that
could free their resources remains).

With queues (a scenario that defines any), the ``gang`` policy gives each
gang its queue: quota is checked for the whole gang, a refused group backs
off like any other. The ``baseline`` knows no queues, as a default scheduler
does not: it shows what the shares are without them. Either way, each
queue's allocated cpu is sampled after every event time.

Devices (DRA), when the scenario has any, go through the core's allocator
(:mod:`~coscheduler.sim.devices`): each node's slices and the classes are
fed first, each pod comes with its own claim; a gang's devices are found in
the same trial as its nodes, and go back when its pods are removed.

The replay reaches the core only through its facade (nodes, queues, groups
and pods in; decisions out), so what it shows is the queue discipline users
get. The cost is the core's: after a completion, only the waiting groups
whose members the freed nodes can take are tried again (as in production,
:mod:`~coscheduler.core.requeue`), each failing attempt one planner run.

Bindings stay *assumed* in the core (the snapshot counts assumed and bound
pods alike, and the core files both as bound members), and a finished gang's
pods are removed: one core call per pod over its life, instead of three
(pending, Running, Succeeded) for the same decisions.
"""

from __future__ import annotations

import dataclasses
import enum
import heapq
from dataclasses import dataclass, field

from coscheduler.api.labels import POD_GROUP_LABEL
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import DEFAULT_QUEUE
from coscheduler.core.decision import Decision
from coscheduler.core.group import GroupKey, GroupPolicy
from coscheduler.core.quota import QueuePolicy, Quotas
from coscheduler.core.scheduler import Scheduler, SchedulerSettings
from coscheduler.core.strategy import Strategy
from coscheduler.sim import devices
from coscheduler.sim.model import Gang, Scenario

__all__ = ["GangOutcome", "Policy", "Replay", "ReplayError", "replay"]

_COMPLETION, _ARRIVAL = 0, 1


class Policy(enum.Enum):
    """What the core is told about gangs."""

    GANG = "gang"
    BASELINE = "baseline"


class ReplayError(RuntimeError):
    """The replay and the core disagree: a bug, never a property of the workload."""


@dataclass(slots=True)
class GangOutcome:
    """What happened to one gang; times in seconds of simulated time."""

    gang: Gang
    start: float | None = None
    finish: float | None = None
    #: Pods bound when it started, or at the end of the replay if it never did.
    bound: int = 0
    #: Whether it ever held some, but fewer than minMember, bound pods.
    partial: bool = False
    #: The nodes its pods were on when it started.
    nodes: frozenset[str] = frozenset()
    #: Its place in line once it and the gangs arriving with it were queued, before
    #: any of them was placed: in its queue, and across the cluster (1 is tried first).
    queue_position: int | None = None
    cluster_position: int | None = None

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.gang.arrival


@dataclass(slots=True)
class Replay:
    """The outcome of one replay (see :mod:`coscheduler.sim.report` for the summary)."""

    policy: Policy
    gangs: list[GangOutcome]
    #: Millicores of schedulable nodes.
    cpu_capacity: int
    #: First arrival and the last event (the end of the replay), in seconds.
    begin: float
    end: float
    #: Millicore-seconds used by started gangs, and held by gangs not started yet.
    useful_cpu_ms: float
    partial_cpu_ms: float
    #: (time, useful millicores, partially held millicores) after each event time.
    timeline: list[tuple[float, int, int]] = field(default_factory=list)
    #: The scenario's queues; empty when it defines none (then nothing below is sampled).
    queues: tuple[QueuePolicy, ...] = ()
    #: The queues gangs draw from, in the order of the samples below.
    queue_names: tuple[str, ...] = ()
    #: After each event time: (time, millicores bound per queue, whether each is backlogged).
    #: Backlogged: an arrived gang that has not started waits in it, and it is Open.
    queue_timeline: list[tuple[float, tuple[int, ...], tuple[bool, ...]]] = field(
        default_factory=list
    )


@dataclass(slots=True)
class _Live:
    """A gang during the replay."""

    outcome: GangOutcome
    key: GroupKey
    policy: GroupPolicy
    template: PodInfo
    #: Its queue's place in the per-queue samples (-1: not sampled).
    slot: int = -1
    #: Pending pods the core knows, by uid.
    pending: dict[str, PodInfo] = field(default_factory=dict)
    #: Uids of the bound pods, and the nodes they are on.
    bound: list[str] = field(default_factory=list)
    nodes: set[str] = field(default_factory=set)


def _template(gang: Gang) -> PodInfo:
    """The gang's first pod, parsed as the API would deliver it."""
    uid = f"{gang.name}-0"
    return PodInfo.from_object(
        {
            "metadata": {
                "name": f"{gang.name}-0",
                "namespace": gang.namespace,
                "uid": f"{gang.name}-0",
                "labels": {POD_GROUP_LABEL: gang.name},
            },
            "spec": {
                "schedulerName": "coscheduler",
                "priority": gang.priority,
                **({"resourceClaims": devices.pod_entries(gang.name)} if gang.devices else {}),
                "nodeSelector": dict(gang.node_selector),
                "tolerations": [dict(t) for t in gang.tolerations],
                **_apart(gang),
                "containers": [
                    {
                        "name": "main",
                        "resources": {"requests": {k: str(v) for k, v in _quantities(gang)}},
                    }
                ],
            },
            "status": {
                "phase": "Pending",
                **(
                    {"resourceClaimStatuses": [{"name": "devices", "resourceClaimName": uid}]}
                    if gang.devices
                    else {}
                ),
            },
        }
    )


def _apart(gang: Gang) -> dict[str, object]:
    """The required anti-affinity that keeps a gang's members one per domain of ``onePer``."""
    if gang.one_per is None:
        return {}
    term = {
        "labelSelector": {"matchLabels": {POD_GROUP_LABEL: gang.name}},
        "topologyKey": gang.one_per,
    }
    return {
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    }


def _quantities(gang: Gang) -> list[tuple[str, str]]:
    # Back to quantity strings: cpu in millicores, the rest in units.
    return [
        (name, f"{amount}m" if name == "cpu" else str(amount))
        for name, amount in gang.requests.items()
    ]


class _Engine:
    def __init__(self, scenario: Scenario, policy: Policy, strategy: Strategy) -> None:
        self.policy = policy
        self.now = 0.0
        self.scheduler = Scheduler(
            lambda: self.now,
            SchedulerSettings(
                strategy=strategy, usage_half_life_seconds=scenario.usage_half_life_seconds
            ),
        )
        for node in scenario.nodes:
            self.scheduler.upsert_node(node)
        for name, counts in sorted(scenario.node_devices.items()):
            for resource_slice in devices.slices(name, counts):
                self.scheduler.upsert_resource_slice(resource_slice)
        classes = {name for counts in scenario.node_devices.values() for name in counts}
        for device_class in devices.device_classes(classes):
            self.scheduler.upsert_device_class(device_class)
        #: Gangs draw from their queues (module docstring): only gangs, with queues defined.
        self.queued = policy is Policy.GANG and bool(scenario.queues)
        if self.queued:
            for queue in scenario.queues:
                self.scheduler.upsert_queue(queue)
        self.queues = scenario.queues
        self.queue_names = scenario.queue_names if scenario.queues else ()
        slot = {name: number for number, name in enumerate(self.queue_names)}
        quotas = Quotas()
        quotas.set_queues(scenario.queues)
        # Gangs in a Closed queue (or under one) can wait but never start: not backlogged.
        self.queue_open = tuple(not quotas.gate_blocked(name) for name in self.queue_names)
        self.queue_used = [0] * len(self.queue_names)
        self.queue_waiting = [0] * len(self.queue_names)
        self.queue_timeline: list[tuple[float, tuple[int, ...], tuple[bool, ...]]] = []
        self.gangs: list[_Live] = []
        for gang in scenario.gangs:
            template = _template(gang)
            key = GroupKey(gang.namespace, gang.name)
            min_member = gang.min_member if policy is Policy.GANG else 1
            self.gangs.append(
                _Live(
                    outcome=GangOutcome(gang),
                    key=key,
                    slot=slot.get(gang.queue, -1),
                    policy=GroupPolicy(
                        namespace=gang.namespace,
                        name=gang.name,
                        queue=gang.queue if self.queued else DEFAULT_QUEUE,
                        min_member=min_member,
                        priority=gang.priority,
                        created=gang.arrival,
                        topology_levels=gang.topology_levels if policy is Policy.GANG else (),
                    ),
                    template=template,
                )
            )
        self.numbers = {live.key: number for number, live in enumerate(self.gangs)}
        self.cpu_capacity = scenario.cpu_capacity
        self.events: list[tuple[float, int, int]] = [
            (gang.arrival, _ARRIVAL, number) for number, gang in enumerate(scenario.gangs)
        ]
        heapq.heapify(self.events)
        self.useful = 0  # millicores bound to started gangs
        self.partial = 0  # millicores bound to gangs not started yet
        self.useful_integral = 0.0
        self.partial_integral = 0.0
        self.timeline: list[tuple[float, int, int]] = []

    def run(self) -> Replay:
        begin = self.events[0][0] if self.events else 0.0
        self.now = begin
        while self.events:
            moment = self.events[0][0]
            self._advance(moment)
            arrived: list[int] = []
            while self.events and self.events[0][0] == moment:
                _, kind, number = heapq.heappop(self.events)
                if kind == _COMPLETION:
                    self._complete(number)
                else:
                    self._arrive(number)
                    arrived.append(number)
            if arrived:
                self._note_positions(arrived)
            self._sweep()
            self.timeline.append((self.now, self.useful, self.partial))
            if self.queue_names:
                self.queue_timeline.append(
                    (
                        self.now,
                        tuple(self.queue_used),
                        tuple(
                            bool(waiting) and is_open
                            for waiting, is_open in zip(
                                self.queue_waiting, self.queue_open, strict=True
                            )
                        ),
                    )
                )
        for live in self.gangs:
            if live.outcome.start is None:
                live.outcome.bound = len(live.bound)
        return Replay(
            policy=self.policy,
            gangs=[live.outcome for live in self.gangs],
            cpu_capacity=self.cpu_capacity,
            begin=begin,
            end=self.now,
            useful_cpu_ms=self.useful_integral,
            partial_cpu_ms=self.partial_integral,
            timeline=self.timeline,
            queues=self.queues,
            queue_names=self.queue_names,
            queue_timeline=self.queue_timeline,
        )

    # -- time ----------------------------------------------------------------

    def _advance(self, moment: float) -> None:
        elapsed = moment - self.now
        self.useful_integral += self.useful * elapsed
        self.partial_integral += self.partial * elapsed
        self.now = moment

    # -- arriving and placing -----------------------------------------------

    def _arrive(self, number: int) -> None:
        live = self.gangs[number]
        if live.slot >= 0:
            self.queue_waiting[live.slot] += 1
        self._enter_core(live)

    def _note_positions(self, arrived: list[int]) -> None:
        """Where the gangs that just arrived stand in line (what ``status.queuePosition``
        would say of them before the next pass)."""
        placed = self.scheduler.queue_positions()
        for number in arrived:
            live = self.gangs[number]
            position = placed.get(live.key)
            if position is not None:
                live.outcome.queue_position = position.in_queue
                live.outcome.cluster_position = position.in_cluster

    def _sweep(self) -> None:
        """Ask the core for decisions until no group is ready (module docstring)."""
        while (decision := self.scheduler.next_decision()) is not None:
            if decision.bindings:
                self._bound(self.numbers[decision.group], decision)

    # -- placing and finishing -----------------------------------------------

    def _enter_core(self, live: _Live) -> None:
        scheduler = self.scheduler
        scheduler.upsert_group(live.policy)
        gang = live.outcome.gang
        if gang.devices:
            scheduler.upsert_claim_template(
                devices.template(gang.namespace, gang.name, gang.devices)
            )
        # A plain constructor call per member: dataclasses.replace costs 5x more.
        head = live.template
        fields = {f.name: getattr(head, f.name) for f in dataclasses.fields(PodInfo)}
        for i in range(gang.size):
            uid = f"{gang.name}-{i}"
            if i == 0:
                pod = head
            else:
                # Each pod has its own claim, made from the gang's template.
                own = {"device_claims": devices.pod_claims(gang.name, uid)} if gang.devices else {}
                pod = PodInfo(**{**fields, "name": uid, "uid": uid, **own})
            if gang.devices:
                scheduler.upsert_resource_claim(devices.claim(gang.namespace, uid, gang.devices))
            live.pending[uid] = pod
            scheduler.upsert_pod(pod)

    def _bound(self, number: int, decision: Decision) -> None:
        """Account for the members the core just bound."""
        live = self.gangs[number]
        nodes = set()
        for binding in decision.bindings:
            del live.pending[binding.uid]
            live.bound.append(binding.uid)
            nodes.add(binding.node)
        live.nodes |= nodes
        cpu = live.outcome.gang.cpu * len(decision.bindings)
        if live.slot >= 0:
            self.queue_used[live.slot] += cpu
        outcome = live.outcome
        if outcome.start is not None:
            self.useful += cpu
        elif len(live.bound) >= outcome.gang.min_member:
            self.partial -= outcome.gang.cpu * (len(live.bound) - len(decision.bindings))
            self.useful += outcome.gang.cpu * len(live.bound)
            outcome.start = self.now
            outcome.bound = len(live.bound)
            if live.slot >= 0:
                self.queue_waiting[live.slot] -= 1
            outcome.nodes = frozenset(live.nodes)
            heapq.heappush(self.events, (self.now + outcome.gang.run, _COMPLETION, number))
        else:
            self.partial += cpu
            outcome.partial = True

    def _complete(self, number: int) -> None:
        live = self.gangs[number]
        live.outcome.finish = self.now
        scheduler = self.scheduler
        gang = live.outcome.gang
        # The PodGroup goes with its pods (a finished Job's), first: a member still
        # counted as on its way would otherwise have its room held for a replacement.
        scheduler.remove_group(gang.namespace, gang.name)
        for uid in live.pending:
            scheduler.remove_pod(uid)  # members still pending are dropped
        live.pending.clear()
        for uid in live.bound:
            scheduler.remove_pod(uid)
        if gang.devices:
            # Its claims go with its pods (kube-controller-manager deletes a template's).
            for i in range(gang.size):
                scheduler.remove_resource_claim(f"{gang.namespace}/{gang.name}-{i}")
        self.useful -= live.outcome.gang.cpu * len(live.bound)
        if live.slot >= 0:
            self.queue_used[live.slot] -= live.outcome.gang.cpu * len(live.bound)
        live.bound.clear()
        live.nodes.clear()


def replay(
    scenario: Scenario, policy: Policy, strategy: Strategy = Strategy.MOST_ALLOCATED
) -> Replay:
    """Replay the scenario's workload on its cluster under one policy."""
    return _Engine(scenario, policy, strategy).run()
