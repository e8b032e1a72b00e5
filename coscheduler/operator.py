"""The deciding side of ``coscheduler run``: the core, the loop, the writers, wired.

:func:`coscheduler.app.run` builds one :class:`Operator` once connected, in
dependency order and by constructor arguments only: the core, the reporter
(events, pod conditions, metrics), the controller's inboxes, the handlers
(one per kind), the controller's read model, the preempter and the
scheduling loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial

import structlog

from coscheduler.api.adapters.apis import SIGS
from coscheduler.api.podgroup import PodGroupStatus
from coscheduler.controller.jobgroups import JobGroupMaker
from coscheduler.controller.kueue_conditions import KueueConditionWriter
from coscheduler.controller.positions import PositionPublisher
from coscheduler.controller.queues import QueueStatusWriter
from coscheduler.controller.writer import StatusWriter
from coscheduler.core.group import KIND_KUEUE, GroupKey
from coscheduler.core.preemption import PreemptionSettings
from coscheduler.core.queue import QueueSettings
from coscheduler.core.scheduler import Scheduler, SchedulerSettings
from coscheduler.runtime.binder import Binder
from coscheduler.runtime.device_writer import DeviceWriter
from coscheduler.runtime.groups import Groups
from coscheduler.runtime.handlers.registry import Handlers
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.loop import SchedulingLoop
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.preemption import Preempter, group_ref
from coscheduler.runtime.readmodel import Changes, Marks, ReadModel
from coscheduler.runtime.reporter import Reporter
from coscheduler.runtime.settings import Settings
from coscheduler.runtime.startup import Startup
from coscheduler.runtime.volume_binder import VolumeBinder

__all__ = ["Operator"]

log = structlog.get_logger(__name__)


def _import_the_controller() -> None:
    """Kopf and the controller's modules that use it (:meth:`Operator.run_kopf`)."""
    import kopf  # noqa: F401

    from coscheduler.controller import embedded, handlers, login  # noqa: F401


def _scheduler(settings: Settings) -> Scheduler:
    return Scheduler(
        time.monotonic,
        SchedulerSettings(
            scheduler_name=settings.scheduler_name,
            strategy=settings.score_strategy,
            queue=QueueSettings(
                initial_backoff_seconds=settings.backoff.initial_seconds,
                max_backoff_seconds=settings.backoff.max_seconds,
                unschedulable_flush_seconds=settings.backoff.unschedulable_flush_seconds,
                gather_seconds=settings.backoff.gather_seconds,
            ),
            preemption=PreemptionSettings(mode=settings.preemption),
            usage_half_life_seconds=settings.usage_half_life_seconds,
        ),
        wall_clock=time.time,
    )


def record_status(
    groups: Groups, kueue: Marks[GroupKey], key: GroupKey, status: PodGroupStatus, stored: object
) -> None:
    """The status writer's record of what it derived and wrote; a Kueue gang's record is
    news for the writer of its condition on Kueue's Workload (controller/kueue_conditions.py),
    which reads what was recorded."""
    groups.set_status(key, status, stored)
    if key.kind == KIND_KUEUE:
        kueue.mark(key)


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
        self.wake = wake
        self.listed = listed
        #: Set by the loop's first decision that binds, or its first finding nothing to do.
        self.first_pass = asyncio.Event()
        #: Set once the writers run beside the loop: this replica decides (readiness).
        self.deciding = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        reporter = self.reporter = Reporter(
            client.sibling(),
            metrics=metrics,
            is_waiting=scheduler.is_waiting,
            event_interval_seconds=settings.event_interval_seconds,
        )
        changes = Changes()
        handlers = self.handlers = Handlers.build(
            scheduler,
            complaints=reporter,
            group_changed=changes.group,
            queue_changed=changes.queue,
            owner_changed=changes.owner,
            namespace_changed=changes.namespace,
            namespaces=frozenset(settings.namespaces),
            kueue_queue=settings.kueue_queue,
        )
        view = self.view = ReadModel(scheduler, handlers)
        preempter = Preempter(
            scheduler=scheduler,
            client=client,
            reporter=reporter,
            group_ref=partial(group_ref, scheduler, handlers.groups),
            wake=self.wake.set,
            preempted=handlers.groups.preempted,
        )
        self.loop = SchedulingLoop(
            scheduler=scheduler,
            groups=handlers.groups,
            owners=handlers.owners,
            binder=Binder(
                client, concurrency=settings.client.bind_concurrency, on_bound=startup.bound
            ),
            volume_binder=VolumeBinder(
                client,
                bound=scheduler.volumes.bound,
                timeout_seconds=settings.volume_bind_timeout_seconds,
            ),
            reporter=reporter,
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
            view=view,
            changed=changes.groups,
            reporter=reporter,
            written=partial(record_status, handlers.groups, changes.kueue),
            positions=self.positions.published,
            followed={SIGS},
        )
        self.queue_writer = QueueStatusWriter(
            view=view, changed=changes.queues, reporter=reporter, followed=True
        )
        self._changes = changes
        self.job_groups = JobGroupMaker(view=view, marked=changes.owners, reporter=reporter)
        self.kueue_conditions = KueueConditionWriter(
            view=view, marked=changes.kueue, client=reporter.client
        )

    def alive(self) -> bool:
        """No task started while leading has ended (the liveness probe)."""
        return not any(task.done() for task in self._tasks)

    def _decided(self) -> None:
        self.startup.decided()
        self.first_pass.set()

    async def lead(self) -> None:
        """Decide and write, from the moment the Lease is ours (or at once without election)."""
        if self.settings.leader_election.enabled:
            self.startup.mark("leading")
        await self.listed.wait()
        async with asyncio.TaskGroup() as tasks:
            self._tasks.append(tasks.create_task(self.loop.run(), name="scheduling-loop"))
            await self.first_pass.wait()
            for name, coroutine in {
                "status-writer": self.writer.run(),
                "queue-status-writer": self.queue_writer.run(),
                "events": self.reporter.run_events(self.loop.binds_idle),
                "pod-conditions": self.reporter.run_pod_conditions(self.loop.binds_idle),
                "job-podgroups": self.job_groups.run(),
                "kueue-conditions": self.kueue_conditions.run(),
                "queue-positions": self.positions.run(),
            }.items():
                self._tasks.append(tasks.create_task(coroutine, name=name))
            self.positions.publish()  # before the writer's first round (controller/positions.py)
            self.writer.mark_all()
            self.deciding.set()
            log.info("scheduling", scheduler_name=self.settings.scheduler_name)

    async def run_kopf(
        self, leading: Callable[[], bool], on_signal: Callable[[], object] | None
    ) -> None:
        """Kopf's webhooks on every replica, its followers on the leader (they write).

        A leader starts Kopf once its loop's first pass is done (``deciding``), off the
        path to the first Binding; a standby once every kind is listed, serving
        admission only, and starts it again with the followers when it takes over.

        Kopf and the controller are imported in a thread while the cluster is listed: on
        the event loop, that import (60-90 ms) held up the first Binding and the first
        Jobs' watch events. From the first decision to its Binding: 58-100 ms before,
        3-34 ms since (bench/RESULTS.md, "The first whole gang led").
        """
        imported = asyncio.create_task(asyncio.to_thread(_import_the_controller))
        await self.listed.wait()
        if leading():
            await self.deciding.wait()
        await imported
        import kopf

        from coscheduler.controller import embedded
        from coscheduler.controller.handlers import (
            Admission,
            GroupFollower,
            QueueFollower,
            handlers,
        )
        from coscheduler.controller.login import connection_info

        configuration = self.client.configuration

        async def login(**_: object) -> kopf.ConnectionInfo:
            # The transport's credentials, refreshed by the same hook (an exec plugin's token).
            return await connection_info(configuration)

        webhook = self.settings.webhook
        if webhook.cert_dir is None:
            admission, server = None, None
        else:
            admission = Admission(self.view, self.listed, self.settings.scheduler_name)
            server = embedded.webhook_server(webhook.address, webhook.port, webhook.cert_dir)
        served = partial(
            embedded.run,
            webhooks=server,
            namespaces=self.settings.namespaces,
            on_signal=on_signal,
        )
        if not self.deciding.is_set():
            await served(handlers(admission, login=login), stop=self.deciding)
            if not self.deciding.is_set():
                return  # Kopf ended by itself: /healthz says so
        followers = (
            GroupFollower(
                view=self.view,
                marks=self._changes.groups,
                writer=self.writer,
                writing=self.deciding,
            ),
            QueueFollower(
                view=self.view,
                marks=self._changes.queues,
                writer=self.queue_writer,
                writing=self.deciding,
            ),
        )
        registry = handlers(
            admission, followers=followers, namespaces=self.settings.namespaces, login=login
        )
        await served(registry)
