"""``coscheduler run``: the whole operator, wired together.

Start-up, in order, and why:

1. Connect to the API server and serve ``/metrics``, ``/healthz``, ``/readyz``
   at once, so probes answer while this replica waits for the Lease.
2. Build, in dependency order and by constructor arguments only: the core,
   the reporter (events, pod conditions, metrics), the controller's inboxes,
   the informers (one per kind), the controller's read model, the preempter
   and the scheduling loop.
3. Read the cluster (:mod:`coscheduler.runtime.ingest` runs the table of
   kinds, :data:`~coscheduler.runtime.informers.registry.KINDS`): Jobs first,
   so that pods join their Job's gang from the first pod, then every other
   kind concurrently, each watched on after its list. Bound pods count as
   placed, pending ones are queued: a gang half-bound by a previous leader is
   completed, never bound twice.
4. Campaign for the Lease (unless leader election is off) while reading: a
   standby keeps its picture of the cluster current (a warm standby), so a
   takeover goes straight to deciding instead of importing and listing
   again (issue #28). Losing the Lease ends the process, and a restart
   rebuilds all state from the API server.
5. While leading, once every kind is listed (nothing is decided on a partial
   picture), start the scheduling loop; then, once it has made its first
   decision that binds or found nothing to do, the status writers (PodGroups,
   Queues), the event and pod condition writers, and the maker of Jobs'
   PodGroups: the first Bindings do not share the start with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from functools import partial
from typing import Any

import structlog

from coscheduler.controller.jobgroups import JobGroupMaker
from coscheduler.controller.positions import PositionPublisher
from coscheduler.controller.queues import QueueStatusWriter
from coscheduler.controller.writer import StatusWriter
from coscheduler.core.preemption import PreemptionSettings
from coscheduler.core.queue import QueueSettings
from coscheduler.core.scheduler import Scheduler, SchedulerSettings
from coscheduler.runtime import ingest
from coscheduler.runtime.binder import Binder
from coscheduler.runtime.device_writer import DeviceWriter
from coscheduler.runtime.informers.registry import KINDS, Informers
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.leader import LeaderElector
from coscheduler.runtime.loop import SchedulingLoop
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.preemption import Preempter, group_ref
from coscheduler.runtime.queue_listing import QueueListing
from coscheduler.runtime.readmodel import Changes, ReadModel
from coscheduler.runtime.reporter import Reporter
from coscheduler.runtime.serving import HealthServer
from coscheduler.runtime.settings import Settings
from coscheduler.runtime.startup import Startup
from coscheduler.runtime.volume_binder import VolumeBinder

__all__ = ["run"]

log = structlog.get_logger(__name__)


@dataclasses.dataclass
class _Health:
    leading: bool = False
    synced: bool = False
    tasks: list[asyncio.Task[Any]] = dataclasses.field(default_factory=list)

    def alive(self) -> bool:
        return not any(task.done() for task in self.tasks)

    def ready(self) -> bool:
        return self.synced or not self.leading


async def run(settings: Settings, startup: Startup | None = None) -> None:
    """Run until cancelled, or until the Lease is lost (then raise).

    ``startup`` collects the phases of start-up and logs them at the first
    Binding (:mod:`coscheduler.runtime.startup`); the CLI makes it first thing.
    """
    startup = startup or Startup()
    client = await KubeClient.connect(
        kubeconfig=settings.kubeconfig,
        qps=settings.client.qps,
        burst=settings.client.burst,
        timeout_seconds=settings.client.request_timeout_seconds,
        max_connections=settings.client.bind_concurrency + 16,
    )
    startup.mark("client")
    metrics = Metrics()
    health = _Health()
    server = HealthServer(metrics, alive=health.alive, ready=health.ready)
    await server.start(settings.serving.address, settings.serving.port)
    log.info("serving", address=settings.serving.address, port=server.port)

    def on_leading(leading: bool) -> None:
        health.leading = leading
        metrics.leader.set(1 if leading else 0)

    operator = _Operator(settings, client, metrics, startup)
    reading = asyncio.create_task(operator.read(health), name="reading")
    try:
        if settings.leader_election.enabled:
            # A rate limit of its own, as kube-scheduler's leader-election client: behind
            # a burst of bindings in the shared FIFO limiter, renewals missed their
            # deadline and the leader lost the Lease (the fault soak showed it).
            elector = LeaderElector(
                client.sibling(), settings.leader_election, on_change=on_leading
            )
            leading = elector.run(lambda: operator.lead(health, server))
        else:
            on_leading(True)
            leading = operator.lead(health, server)
        await _first_to_end(reading, asyncio.create_task(leading, name="campaign"))
    finally:
        await server.stop()
        await client.close()


async def _first_to_end(*tasks: asyncio.Task[None]) -> None:
    """Wait until one of ``tasks`` ends, cancel the others, and pass on how it ended."""
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    for task in done:
        task.result()


def _scheduler(settings: Settings) -> Scheduler:
    scheduler = Scheduler(
        time.monotonic,
        SchedulerSettings(
            scheduler_name=settings.scheduler_name,
            strategy=settings.score_strategy,
            queue=QueueSettings(
                initial_backoff_seconds=settings.backoff.initial_seconds,
                max_backoff_seconds=settings.backoff.max_seconds,
                unschedulable_flush_seconds=settings.backoff.unschedulable_flush_seconds,
            ),
            preemption=PreemptionSettings(mode=settings.preemption),
            usage_half_life_seconds=settings.usage_half_life_seconds,
        ),
    )
    scheduler.preemptions.wall_clock = time.time
    return scheduler


class _Operator:
    """Everything a replica runs: reading the cluster always, deciding while leading."""

    def __init__(
        self, settings: Settings, client: KubeClient, metrics: Metrics, startup: Startup
    ) -> None:
        self.settings = settings
        self.client = client
        self.startup = startup
        scheduler = self.scheduler = _scheduler(settings)
        binds_idle = asyncio.Event()  # set while no binding is in flight (the loop keeps it)
        self.wake = asyncio.Event()  # anything that may make a group placeable wakes the loop
        #: Set once every kind is listed: the loop starts on the whole picture only.
        self.listed = asyncio.Event()
        #: Set by the loop's first decision that binds, or its first finding nothing to do.
        self.first_pass = asyncio.Event()
        reporter = self.reporter = Reporter(
            client.sibling(),
            metrics=metrics,
            is_waiting=scheduler.is_waiting,
            binds_idle=binds_idle,
            event_interval_seconds=settings.event_interval_seconds,
        )
        changes = Changes()
        informers = self.informers = Informers.build(
            scheduler,
            complaints=reporter,
            group_changed=changes.group,
            queue_changed=changes.queue,
            owner_changed=changes.owner,
            namespaces=frozenset(settings.namespaces),
        )
        view = self.view = ReadModel(scheduler, informers)
        preempter = Preempter(
            scheduler=scheduler,
            client=client,
            reporter=reporter,
            group_ref=partial(group_ref, scheduler, informers.groups),
            wake=self.wake.set,
            preempted=informers.composites.composites.preempted,
        )
        self.loop = SchedulingLoop(
            scheduler=scheduler,
            groups=informers.groups,
            owners=informers.owners,
            binder=Binder(
                client, concurrency=settings.client.bind_concurrency, on_bound=startup.bound
            ),
            volume_binder=VolumeBinder(
                client,
                bound=scheduler.volumes.bound,
                timeout_seconds=settings.volume_bind_timeout_seconds,
            ),
            reporter=reporter,
            binds_idle=binds_idle,
            wake=self.wake,
            preempter=preempter,
            on_decided=self._decided,
            on_idle=self.first_pass.set,
            device_writer=DeviceWriter(client),
        )
        self.positions = PositionPublisher(
            positions=view.queue_positions, mark=changes.groups.mark, said=view.said_position
        )
        self.writer = StatusWriter(
            view=view, changed=changes.groups, reporter=reporter, positions=self.positions.published
        )
        self.queue_writer = QueueStatusWriter(view=view, changed=changes.queues, reporter=reporter)
        self.job_groups = JobGroupMaker(view=view, marked=changes.owners, reporter=reporter)

    def _decided(self) -> None:
        self.startup.decided()
        self.first_pass.set()

    async def read(self, health: _Health) -> None:
        """List and watch every kind, for the life of the process (leading or not)."""
        async with asyncio.TaskGroup() as tasks:
            health.tasks += await ingest.start(
                self.client,
                KINDS,
                self.informers,
                self.settings,
                tasks=tasks,
                wake=self.wake.set,
                on_listed=self.startup.listed,
            )
            self.startup.mark("listed")
            self.listed.set()

    async def lead(self, health: _Health, server: HealthServer) -> None:
        """Decide and write, from the moment the Lease is ours (or at once without election)."""
        if self.settings.leader_election.enabled:
            self.startup.mark("leading")
        await self.listed.wait()
        async with asyncio.TaskGroup() as tasks:
            health.tasks.append(tasks.create_task(self.loop.run(), name="scheduling-loop"))
            await self.first_pass.wait()
            for name, coroutine in {
                "status-writer": self.writer.run(),
                "queue-status-writer": self.queue_writer.run(),
                "events": self.reporter.run_events(),
                "pod-conditions": self.reporter.run_pod_conditions(),
                "job-podgroups": self.job_groups.run(),
                "queue-positions": self.positions.run(),
            }.items():
                health.tasks.append(tasks.create_task(coroutine, name=name))
            self.positions.publish()  # before the writer's first round (controller/positions.py)
            self.writer.mark_all()
            server.listing = QueueListing(self.scheduler, self.view.verdict)
            health.synced = True
            log.info("scheduling", scheduler_name=self.settings.scheduler_name)
