"""``coscheduler run``: the whole operator, started in the order that binds soonest.

Start-up, in order, and why:

1. Connect to the API server. This module and what it imports are the light
   part of the program (the settings, the client, the table of kinds): the
   first requests leave before the rest is imported.
2. Read the cluster (:mod:`coscheduler.runtime.ingest` runs the table of
   kinds, :data:`~coscheduler.runtime.informers.kinds.KINDS`): every kind
   listed at once, each list applied once the informers exist and, for
   Jobs, before every other kind (pods join their Job's gang from the first
   pod), then watched on. Bound pods count as placed, pending ones are
   queued: a gang half-bound by a previous leader is completed, never bound
   twice.
3. Meanwhile, import the deciding side (:mod:`coscheduler.operator`: NumPy,
   the core, the informers, the controller) in a worker thread: the
   interpreter imports while the API server answers (issue #28); the GIL
   changes hands every 0.5 ms meanwhile, not 5, so the lists' socket calls
   do not each wait out the import's turn, and the cyclic collector waits
   until it is done. Then build
   it, which makes the informers the lists wait for; serve ``/metrics``,
   ``/healthz``, ``/readyz``, so probes answer while this replica waits for
   the Lease.
4. Campaign for the Lease (unless leader election is off) while reading: a
   standby keeps its picture of the cluster current (a warm standby), so a
   takeover goes straight to deciding instead of importing and listing
   again. Losing the Lease ends the process, and a restart rebuilds all
   state from the API server.
5. While leading, once every kind is listed (nothing is decided on a partial
   picture), start the scheduling loop; then, once it has made its first
   decision that binds or found nothing to do, the status writers (PodGroups,
   Queues), the event and pod condition writers, and the maker of Jobs'
   PodGroups: the first Bindings do not share the start with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import structlog

from coscheduler.runtime import gc_pause, ingest
from coscheduler.runtime.health import Health
from coscheduler.runtime.informers.kinds import KINDS
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.settings import Settings
from coscheduler.runtime.startup import Startup

if TYPE_CHECKING:
    from coscheduler.runtime.informers.registry import Informers

__all__ = ["run"]

log = structlog.get_logger(__name__)


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
    health = Health()
    wake = asyncio.Event()  # anything that may make a group placeable wakes the loop
    listed = asyncio.Event()  # every kind listed: the loop may start
    informers: asyncio.Future[Informers] = asyncio.get_running_loop().create_future()
    reading = asyncio.create_task(
        _read(client, settings, informers, health, startup, wake=wake, listed=listed),
        name="reading",
    )
    # The first Bindings find their connections open (issue #28); the Binder opens
    # the rest as it needs them, after the first decision instead of during the lists.
    warming = asyncio.create_task(
        client.warm_writes(min(WARM_BEFORE_DECIDING, settings.client.bind_concurrency)),
        name="warming",
    )
    server = None
    kopf_task: asyncio.Task[None] | None = None
    try:
        # No cyclic collection during the import either (the lists' decode holds it off
        # too): its ~100,000 new objects, classes and functions nearly all kept, made the
        # collector walk them again and again for nothing, a fifth of the import's CPU.
        with gc_pause.paused(), _short_switch_interval():
            await asyncio.to_thread(_import_operator)
        # Imported by now (cheap here); named here so that this module stays light.
        from coscheduler.operator import Operator
        from coscheduler.runtime.leader import LeaderElector
        from coscheduler.runtime.metrics import Metrics
        from coscheduler.runtime.serving import HealthServer

        metrics = Metrics()
        operator = Operator(settings, client, metrics, startup, wake=wake, listed=listed)
        informers.set_result(operator.informers)
        startup.mark("built")
        server = HealthServer(metrics, alive=health.alive, ready=health.ready)
        await server.start(settings.serving.address, settings.serving.port)
        log.info("serving", address=settings.serving.address, port=server.port)

        def on_leading(leading: bool) -> None:
            health.leading = leading
            metrics.leader.set(1 if leading else 0)

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
        main = asyncio.current_task()
        kopf_task = asyncio.create_task(
            operator.run_kopf(health, on_signal=None if main is None else main.cancel),
            name="kopf",
        )
        health.tasks.append(kopf_task)
        await _first_to_end(reading, asyncio.create_task(leading, name="campaign"))
    finally:
        reading.cancel()  # ended already when the campaign ended; not yet if building failed
        warming.cancel()
        if kopf_task is not None:
            kopf_task.cancel()
        await asyncio.gather(
            reading, warming, *([] if kopf_task is None else [kopf_task]), return_exceptions=True
        )
        if server is not None:
            await server.stop()
        await client.close()


#: Write connections opened while the lists come in, for the first decision's
#: first Bindings. Each TLS handshake costs ~1.5 ms of this process's CPU and some
#: of the API server's: all ``bind_concurrency`` of them (64) took that CPU from
#: the lists (issue #28). A connection the Binder opens later is kept as well.
WARM_BEFORE_DECIDING = 8


#: The GIL's switch interval while the worker thread imports (the default is 5 ms).
START_SWITCH_INTERVAL_SECONDS = 0.0005


@contextlib.contextmanager
def _short_switch_interval() -> Iterator[None]:
    """Hand the GIL over sooner while the worker thread imports, then restore the default.

    The event loop's thread lets go of the GIL in every socket call (each TLS
    handshake step, each chunk of a list) and waits to take it back. Meanwhile
    the worker thread imports pure Python and yields only when asked, after the
    switch interval: at the default 5 ms, each such call of the lists could wait
    5 ms (issue #28). Once the import is done one thread runs Python again and
    the default serves the steady state.
    """
    default = sys.getswitchinterval()
    sys.setswitchinterval(START_SWITCH_INTERVAL_SECONDS)
    try:
        yield
    finally:
        sys.setswitchinterval(default)


def _import_operator() -> None:
    """Import the deciding side (run in a worker thread while the lists are on their way).

    Meanwhile the event loop's thread only reads (the client, the watches,
    the table of kinds, all imported already): importing any of these
    modules there would wait on this thread's import locks.
    """
    import coscheduler.operator
    import coscheduler.runtime.leader  # noqa: F401 (the campaign's, not the operator's)


async def _read(
    client: KubeClient,
    settings: Settings,
    informers: asyncio.Future[Informers],
    health: Health,
    startup: Startup,
    *,
    wake: asyncio.Event,
    listed: asyncio.Event,
) -> None:
    """List and watch every kind, for the life of the process (leading or not)."""
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
        listed.set()


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
