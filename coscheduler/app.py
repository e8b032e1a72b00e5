"""``coscheduler run``: the whole operator, started in the order that binds soonest.

Start-up, in order, and why:

1. Connect to the API server and build the deciding side
   (:class:`~coscheduler.operator.Operator`: the core, the handlers, the
   controller); serve ``/metrics``, ``/healthz``, ``/readyz``, so probes
   answer while this replica waits for the Lease.
2. Read the cluster (:mod:`coscheduler.runtime.ingest` runs the table of
   kinds, :func:`~coscheduler.runtime.handlers.kinds.kinds`): every kind
   listed at once, Jobs applied before every other kind (pods join their
   Job's gang from the first pod), then watched on. Bound pods count as
   placed, pending ones are queued: a gang half-bound by a previous leader
   is completed, never bound twice.
3. Campaign for the Lease (unless leader election is off) while reading: a
   standby keeps its picture of the cluster current (a warm standby), so a
   takeover goes straight to deciding instead of listing again. Losing the
   Lease ends the process, and a restart rebuilds all state from the API
   server.
4. While leading, once every kind is listed (nothing is decided on a partial
   picture), start the scheduling loop; then, once it has made its first
   decision that binds or found nothing to do, the status writers (PodGroups,
   Queues), the event and pod condition writers, and the maker of Jobs'
   PodGroups: the first Bindings do not share the start with them.
5. Kopf (:meth:`~coscheduler.operator.Operator.run_kopf`): on a leader after
   that first pass, its handlers then writing our PodGroups' and Queues'
   status; on a standby once every kind is listed, serving admission only.
   A process that only reads (``coscheduler dashboard``) starts no Kopf.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from coscheduler.operator import Operator
from coscheduler.runtime import ingest
from coscheduler.runtime.handlers.kinds import kinds
from coscheduler.runtime.handlers.registry import Handlers
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.leader import LeaderElector
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.queue_listing import QueueListing
from coscheduler.runtime.serving import HealthServer
from coscheduler.runtime.settings import Settings
from coscheduler.runtime.startup import Startup

__all__ = ["run"]

log = structlog.get_logger(__name__)


async def run(settings: Settings, startup: Startup | None = None, *, decide: bool = True) -> None:
    """Run until cancelled, or until the Lease is lost (then raise).

    ``startup`` collects the phases of start-up and logs them at the first
    Binding (:mod:`coscheduler.runtime.startup`); the CLI makes it first thing.
    Without ``decide`` the process only reads, never campaigns nor writes
    (``coscheduler dashboard``).
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
    wake = asyncio.Event()  # anything that may make a group placeable wakes the loop
    listed = asyncio.Event()  # every kind listed: the loop may start
    metrics = Metrics()
    try:
        operator = Operator(settings, client, metrics, startup, wake=wake, listed=listed)
    except BaseException:
        await client.close()
        raise
    startup.mark("built")
    watches: list[asyncio.Task[None]] = []
    reading = asyncio.create_task(
        _read(client, settings, operator.handlers, watches, startup, wake=wake, listed=listed),
        name="reading",
    )
    # The first Bindings find their connections open; the Binder opens the rest
    # as it needs them, after the first decision instead of during the lists.
    warming = asyncio.create_task(
        client.warm_writes(min(WARM_BEFORE_DECIDING, settings.client.bind_concurrency)),
        name="warming",
    )
    elector = None
    if decide and settings.leader_election.enabled:
        # A rate limit of its own, as kube-scheduler's leader-election client: behind
        # a burst of bindings in the shared FIFO limiter, renewals missed their
        # deadline and the leader lost the Lease (the fault soak showed it).
        elector = LeaderElector(
            client.sibling(),
            settings.leader_election,
            on_change=lambda leading: metrics.leader.set(1 if leading else 0),
        )

    def alive() -> bool:
        kopf_ended = kopf_task is not None and kopf_task.done()
        return not kopf_ended and not any(task.done() for task in watches) and operator.alive()

    def ready() -> bool:
        # A standby (or a process that only reads) is ready: it serves nothing but probes.
        return (
            not decide
            or operator.deciding.is_set()
            or (elector is not None and not elector.is_leader)
        )

    server = page = None
    kopf_task: asyncio.Task[None] | None = None
    try:
        listing = QueueListing(
            operator.scheduler, operator.view.verdict, leading=operator.deciding.is_set
        )
        server = HealthServer(metrics, alive=alive, ready=ready, listing=listing)
        await server.start(settings.serving.address, settings.serving.port)
        log.info("serving", address=settings.serving.address, port=server.port)
        if settings.dashboard.enabled:
            from coscheduler.dashboard.server import serve_page

            def role() -> str:
                if not decide:
                    return "viewer"
                return "leader" if elector is None or elector.is_leader else "standby"

            page = await serve_page(
                operator.view,
                operator.scheduler,
                settings.dashboard,
                role=role,
                events=operator.reporter.events,
            )
        if not decide:
            leading = _never()
        elif elector is not None:
            leading = elector.run(operator.lead)
        else:
            metrics.leader.set(1)
            leading = operator.lead()
        main = asyncio.current_task()
        if decide:  # a process that only reads serves no admission and writes nothing
            kopf_task = asyncio.create_task(
                operator.run_kopf(
                    lambda: elector is None or elector.is_leader,
                    on_signal=None if main is None else main.cancel,
                ),
                name="kopf",
            )
        await _first_to_end(reading, asyncio.create_task(leading, name="campaign"))
    finally:
        reading.cancel()  # ended already when the campaign ended; not yet if serving failed
        warming.cancel()
        if kopf_task is not None:
            kopf_task.cancel()
        await asyncio.gather(
            reading, warming, *([] if kopf_task is None else [kopf_task]), return_exceptions=True
        )
        if page is not None:
            await page.stop()
        if server is not None:
            await server.stop()
        await client.close()


#: Write connections opened while the lists come in, for the first decision's
#: first Bindings. Each TLS handshake costs ~1.5 ms of this process's CPU and some
#: of the API server's: opening all ``bind_concurrency`` of them (64) at start
#: takes that CPU from the lists. A connection the Binder opens later is kept as well.
WARM_BEFORE_DECIDING = 8


async def _read(
    client: KubeClient,
    settings: Settings,
    handlers: Handlers,
    watches: list[asyncio.Task[None]],
    startup: Startup,
    *,
    wake: asyncio.Event,
    listed: asyncio.Event,
) -> None:
    """List and watch every kind, for the life of the process (leading or not); the
    watch tasks go into ``watches`` (the liveness probe)."""
    async with asyncio.TaskGroup() as tasks:
        watches += await ingest.start(
            client,
            kinds(handlers),
            settings,
            tasks=tasks,
            wake=wake.set,
            on_listed=startup.listed,
        )
        startup.mark("listed")
        listed.set()


async def _never() -> None:
    """What a process that only reads does instead of campaigning: wait to be cancelled."""
    await asyncio.get_running_loop().create_future()


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
