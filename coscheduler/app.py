"""``coscheduler run``: the whole operator, wired together.

Start-up, in order, and why:

1. Connect to the API server and serve ``/metrics``, ``/healthz``, ``/readyz``
   at once, so probes answer while this replica waits for the Lease.
2. Campaign for the Lease (unless leader election is off). Everything below
   runs only while leading; losing the Lease ends the process, and a restart
   rebuilds all state from the API server.
3. Build, in dependency order and by constructor arguments only: the core,
   the reporter (events, pod conditions, metrics), the controller's inboxes,
   the informers (one per kind), the controller's read model, the preempter
   and the scheduling loop.
4. Read the cluster (:mod:`coscheduler.runtime.ingest` runs the table of
   kinds, :data:`~coscheduler.runtime.informers.registry.KINDS`): Jobs first,
   so that pods join their Job's gang from the first pod, then every other
   kind concurrently, each watched on after its list. Only when all are
   listed does the loop start, so that nothing is decided on a partial
   picture. Bound pods count as placed, pending ones are queued: a gang
   half-bound by a previous leader is completed, never bound twice.
5. Start the scheduling loop, the status writers (PodGroups, Queues), the
   event and pod condition writers, and the maker of Jobs' PodGroups.
"""

from __future__ import annotations

import asyncio
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

    try:
        if settings.leader_election.enabled:
            # A rate limit of its own, as kube-scheduler's leader-election client: behind
            # a burst of bindings in the shared FIFO limiter, renewals missed their
            # deadline and the leader lost the Lease (the fault soak showed it).
            elector = LeaderElector(
                client.sibling(), settings.leader_election, on_change=on_leading
            )
            await elector.run(lambda: _lead(settings, client, metrics, health, startup, server))
        else:
            on_leading(True)
            await _lead(settings, client, metrics, health, startup, server)
    finally:
        await server.stop()
        await client.close()


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


async def _lead(
    settings: Settings,
    client: KubeClient,
    metrics: Metrics,
    health: _Health,
    startup: Startup,
    server: HealthServer,
) -> None:
    if settings.leader_election.enabled:
        startup.mark("leading")
    scheduler = _scheduler(settings)
    binds_idle = asyncio.Event()  # set while no binding is in flight (the loop keeps it)
    wake = asyncio.Event()  # anything that may make a group placeable wakes the loop
    reporter = Reporter(
        client.sibling(),
        metrics=metrics,
        is_waiting=scheduler.is_waiting,
        binds_idle=binds_idle,
        event_interval_seconds=settings.event_interval_seconds,
    )
    changes = Changes()
    informers = Informers.build(
        scheduler,
        complaints=reporter,
        group_changed=changes.group,
        queue_changed=changes.queue,
        owner_changed=changes.owner,
        namespaces=frozenset(settings.namespaces),
    )
    view = ReadModel(scheduler, informers)
    preempter = Preempter(
        scheduler=scheduler,
        client=client,
        reporter=reporter,
        group_ref=partial(group_ref, scheduler, informers.groups),
        wake=wake.set,
        preempted=informers.composites.composites.preempted,
    )
    loop = SchedulingLoop(
        scheduler=scheduler,
        groups=informers.groups,
        owners=informers.owners,
        binder=Binder(client, concurrency=settings.client.bind_concurrency, on_bound=startup.bound),
        volume_binder=VolumeBinder(
            client,
            bound=scheduler.volumes.bound,
            timeout_seconds=settings.volume_bind_timeout_seconds,
        ),
        reporter=reporter,
        binds_idle=binds_idle,
        wake=wake,
        preempter=preempter,
        on_decided=startup.decided,
        device_writer=DeviceWriter(client),
    )
    positions = PositionPublisher(
        positions=view.queue_positions, mark=changes.groups.mark, said=view.said_position
    )
    writer = StatusWriter(
        view=view, changed=changes.groups, reporter=reporter, positions=positions.published
    )
    queue_writer = QueueStatusWriter(view=view, changed=changes.queues, reporter=reporter)
    job_groups = JobGroupMaker(view=view, marked=changes.owners, reporter=reporter)
    async with asyncio.TaskGroup() as tasks:
        health.tasks += await ingest.start(
            client,
            KINDS,
            informers,
            settings,
            tasks=tasks,
            wake=wake.set,
            on_listed=startup.listed,
        )
        startup.mark("listed")
        for name, coroutine in {
            "scheduling-loop": loop.run(),
            "status-writer": writer.run(),
            "queue-status-writer": queue_writer.run(),
            "events": reporter.run_events(),
            "pod-conditions": reporter.run_pod_conditions(),
            "job-podgroups": job_groups.run(),
            "queue-positions": positions.run(),
        }.items():
            health.tasks.append(tasks.create_task(coroutine, name=name))
        positions.publish()  # before the writer's first round (controller/positions.py)
        writer.mark_all()
        server.listing = QueueListing(scheduler, view.verdict)
        health.synced = True
        log.info("scheduling", scheduler_name=settings.scheduler_name)
