"""Runs the table of kinds: discovery, then each stage listed whole, then the watches on.

Start-up, in order (issue #28 measures it; keep the order cheap to change):

1. Ask discovery about every optional kind at once (concurrently).
2. For each stage in order, start the watch of every kind of the stage and
   wait until each is listed (or refused: a kind the process may not read is
   logged and left out). Jobs are stage 0, so pods join their Job's gang
   from the first pod; every other kind is stage 1, listed concurrently.
3. Return: the loop starts only on the whole picture (a pod whose PodGroup
   was not listed yet would look orphaned); the watches go on.

Every event wakes the scheduling loop (``wake``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import structlog

from coscheduler.runtime.informers.base import Informer
from coscheduler.runtime.informers.registry import Informers, Kind
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.settings import Settings
from coscheduler.runtime.watch import Listed, StopWatching, Watch

__all__ = ["start"]

log = structlog.get_logger(__name__)


async def start(
    client: KubeClient,
    kinds: Sequence[Kind],
    informers: Informers,
    settings: Settings,
    *,
    tasks: asyncio.TaskGroup,
    wake: Callable[[], None],
    on_listed: Callable[[str], None] = lambda _kind: None,
) -> list[asyncio.Task[None]]:
    """Steps 1-3; the watch tasks, running in ``tasks``.

    ``on_listed(kind name)`` is called as each kind's first list is applied
    (the start-up line, :mod:`coscheduler.runtime.startup`).
    """
    paths = await asyncio.gather(*(kind.where(client, settings) for kind in kinds))
    chosen = [(kind, path) for kind, path in zip(kinds, paths, strict=True) if path is not None]
    started: list[asyncio.Task[None]] = []
    for stage in sorted({kind.stage for kind, _ in chosen}):
        listed: list[asyncio.Event] = []
        for kind, path in chosen:
            if kind.stage != stage:
                continue
            watch = Watch(
                client,
                path,
                timeout_seconds=settings.client.watch_timeout_seconds,
                missing_ok=kind.if_missing is not None,
                stop_if_forbidden=kind.if_forbidden is not None,
            )
            listed.append(asyncio.Event())
            feed = _feed(kind, watch, kind.informer(informers), listed[-1], wake, on_listed)
            started.append(tasks.create_task(feed, name=f"watch-{kind.name}"))
        await asyncio.gather(*(event.wait() for event in listed))
    log.info("cluster listed", kinds=[kind.name for kind, _ in chosen])
    return started


async def _feed(
    kind: Kind,
    watch: Watch,
    informer: Informer,
    listed: asyncio.Event,
    wake: Callable[[], None],
    on_listed: Callable[[str], None],
) -> None:
    try:
        async for item in watch:
            if isinstance(item, Listed):
                if not item.served:
                    log.error(kind.if_missing, path=watch.path)
                informer.replace(item.objects)
                if not listed.is_set():
                    on_listed(kind.name)
                listed.set()
            elif item.type == "DELETED":
                informer.remove(item.object)
            else:
                informer.upsert(item.object)
            wake()
    except StopWatching:
        log.error(kind.if_forbidden, path=watch.path)
        on_listed(kind.name)
        listed.set()
        # Not read, for the life of the process: the task stays (health counts it running).
        await asyncio.Event().wait()
