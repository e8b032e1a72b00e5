"""The deciding side of ``coscheduler run``: the core, the loop, the writers, wired.

Built by :func:`coscheduler.app.run` once this module is imported, which
imports nearly everything else (NumPy, the core, the informers, the
controller): :mod:`coscheduler.app` imports it in a worker thread while the
first lists are on their way (issue #28), then builds one :class:`Operator`.

Built in dependency order and by constructor arguments only: the core, the
reporter (events, pod conditions, metrics), the controller's inboxes, the
informers (one per kind), the controller's read model, the preempter and the
scheduling loop.
"""

from __future__ import annotations

import asyncio
import time
from functools import partial

import structlog

from coscheduler.controller.jobgroups import JobGroupMaker
from coscheduler.controller.kueue_conditions import KueueConditionWriter
from coscheduler.controller.positions import PositionPublisher
from coscheduler.controller.queues import QueueStatusWriter
from coscheduler.controller.writer import StatusWriter
from coscheduler.core.preemption import PreemptionSettings
from coscheduler.core.queue import QueueSettings
from coscheduler.core.scheduler import Scheduler, SchedulerSettings
from coscheduler.runtime.binder import Binder
from coscheduler.runtime.device_writer import DeviceWriter
from coscheduler.runtime.health import Health
from coscheduler.runtime.informers.registry import Informers
from coscheduler.runtime.kube import KubeClient
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

__all__ = ["Operator"]

log = structlog.get_logger(__name__)


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


class Operator:
    """What a replica decides and writes with, over the cluster :mod:`coscheduler.app` reads.

    ``wake`` is set by anything that may make a group placeable; ``listed``
    once every kind is listed (the loop starts on the whole picture only).
    """

    def __init__(
        self,
        settings: Settings,
        client: KubeClient,
        metrics: Metrics,
        startup: Startup,
        *,
        wake: asyncio.Event,
        listed: asyncio.Event,
    ) -> None:
        self.settings = settings
        self.client = client
        self.startup = startup
        metrics.count_connections(client.pools)
        scheduler = self.scheduler = _scheduler(settings)
        binds_idle = asyncio.Event()  # set while no binding is in flight (the loop keeps it)
        self.wake = wake
        self.listed = listed
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
            kueue_queue=settings.kueue_queue,
        )
        view = self.view = ReadModel(scheduler, informers, kueue=changes.kueue)
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
        self.kueue_conditions = KueueConditionWriter(
            view=view, marked=changes.kueue, client=reporter.client
        )

    def _decided(self) -> None:
        self.startup.decided()
        self.first_pass.set()

    async def lead(self, health: Health, server: HealthServer) -> None:
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
                "kueue-conditions": self.kueue_conditions.run(),
                "queue-positions": self.positions.run(),
            }.items():
                health.tasks.append(tasks.create_task(coroutine, name=name))
            self.positions.publish()  # before the writer's first round (controller/positions.py)
            self.writer.mark_all()
            server.listing = QueueListing(self.scheduler, self.view.verdict)
            health.synced = True
            log.info("scheduling", scheduler_name=self.settings.scheduler_name)
