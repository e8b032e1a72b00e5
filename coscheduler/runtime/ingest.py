"""Runs the table of kinds: every kind read at once, applied stage by stage, then watched on.

Start-up, in order:

1. Every kind starts at once: an optional kind asks discovery where it is
   served, then lists; a core kind lists straight away. Nothing waits on
   another kind's round trips.
2. A kind's list is applied only once every kind of the earlier stages is
   applied (or refused: a kind the process may not read is logged and left
   out). Jobs are stage 0, so pods join their Job's
   gang from the first pod; every other kind is stage 1. Each kind is
   watched on after its list.
3. Return once every kind is applied: the loop starts only on the whole
   picture (a pod whose PodGroup was not listed yet would look orphaned);
   the watches go on. What the lists built is frozen out of the garbage
   collector's passes (``gc.freeze``): it lives as long as the process.
   The collector is held off while each list is applied, as while it is
   decoded (:mod:`coscheduler.runtime.gc_pause`).

Every event wakes the scheduling loop (``wake``).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

import structlog

from coscheduler.runtime import gc_pause
from coscheduler.runtime.handlers.kinds import Kind
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.settings import Settings
from coscheduler.runtime.watch import Listed, StopWatching, Watch

__all__ = ["start"]

log = structlog.get_logger(__name__)


async def start(
    client: KubeClient,
    kinds: Sequence[Kind],
    settings: Settings,
    *,
    tasks: asyncio.TaskGroup,
    wake: Callable[[], None],
    on_listed: Callable[[str], None] = lambda _kind: None,
) -> list[asyncio.Task[None]]:
    """Steps 1-3; the watch tasks of the kinds read, running in ``tasks``.

    ``on_listed(kind name)`` is called as each kind's first list is applied
    (the start-up line, :mod:`coscheduler.runtime.startup`).
    """
    done = {kind.name: asyncio.Event() for kind in kinds}
    read: dict[str, asyncio.Task[None]] = {}

    async def earlier_stages_applied(stage: int) -> None:
        await asyncio.gather(*(done[k.name].wait() for k in kinds if k.stage < stage))

    async def run(kind: Kind) -> None:
        path = await kind.where(client, settings)
        if path is None:
            done[kind.name].set()
            return
        watch = Watch(
            client,
            path,
            timeout_seconds=settings.client.watch_timeout_seconds,
            missing_ok=kind.if_missing is not None,
            stop_if_forbidden=kind.if_forbidden is not None,
        )
        gate = partial(earlier_stages_applied, kind.stage)
        await _feed(kind, watch, gate, done[kind.name], wake, on_listed)

    for kind in kinds:
        read[kind.name] = tasks.create_task(run(kind), name=f"watch-{kind.name}")
    await asyncio.gather(*(event.wait() for event in done.values()))
    # What the lists built (the core's picture of every node and pod) lives on: keep
    # it out of the collector's full passes, each of which would walk all of it again
    # (about a tenth of the steady state's CPU at 2,048 pods).
    gc.freeze()
    # A kind not read has ended by now; the watches of the others run on.
    started = {name: task for name, task in read.items() if not task.done()}
    log.info("cluster listed", kinds=list(started))
    return list(started.values())


async def _feed(
    kind: Kind,
    watch: Watch,
    gate: Callable[[], Awaitable[None]],
    listed: asyncio.Event,
    wake: Callable[[], None],
    on_listed: Callable[[str], None],
) -> None:
    handler = kind.handler
    try:
        async for item in watch:
            if isinstance(item, Listed):
                if not item.served:
                    log.error(kind.if_missing, path=watch.path)
                if not listed.is_set():
                    await gate()
                # No cyclic collection while a list is applied either: each full one
                # would walk every object decoded so far, with nothing to collect (a
                # third of the apply at 50,000 pods).
                with gc_pause.paused():
                    handler.replace(item.objects)
                if not listed.is_set():
                    on_listed(kind.name)
                listed.set()
            elif item.type == "DELETED":
                handler.remove(item.object)
            else:
                handler.upsert(item.object)
            wake()
    except StopWatching:
        log.error(kind.if_forbidden, path=watch.path)
        await gate()
        on_listed(kind.name)
        listed.set()
        # Not read, for the life of the process: the task stays (health counts it running).
        await asyncio.Event().wait()
