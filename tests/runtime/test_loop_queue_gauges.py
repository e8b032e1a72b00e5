"""runtime/loop.py: the queue's gauges are set when a size moves, not on every wake-up."""

from __future__ import annotations

import asyncio
from typing import Any

from coscheduler.core import Scheduler
from coscheduler.runtime.binder import Binder
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.loop import SchedulingLoop
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.reporter import Reporter
from coscheduler.runtime.volume_binder import VolumeBinder
from tests.builders import Clock, pod_object
from tests.fed import Fed


async def test_the_gauges_follow_the_sizes_and_are_left_alone_while_they_hold(
    kube: KubeClient,
) -> None:
    scheduler = Scheduler(Clock())
    state = Fed(scheduler)
    metrics = Metrics()
    set_for: list[dict[str, Any]] = []
    labels = metrics.queue_length.labels

    def counted(**names: Any) -> Any:
        set_for.append(names)
        return labels(**names)

    metrics.queue_length.labels = counted  # type: ignore[method-assign,assignment]
    wake = asyncio.Event()
    loop = SchedulingLoop(
        scheduler=scheduler,
        groups=state.handlers.groups,
        owners=state.handlers.owners,
        binder=Binder(kube, concurrency=4),
        volume_binder=VolumeBinder(kube, bound=scheduler.volumes.bound, timeout_seconds=5.0),
        reporter=Reporter(kube, metrics=metrics, is_waiting=scheduler.is_waiting),
        wake=wake,
    )
    task = asyncio.create_task(loop.run())
    try:
        for _ in range(5):  # woken with nothing to do: the sizes hold
            loop.wake()
            await asyncio.sleep(0.01)
        assert len(set_for) == 4  # once per pool, at the first look
        # A lone pod and no node: it waits, and the gauges say so.
        state.handlers.pods.upsert(pod_object("lone"))
        loop.wake()
        for _ in range(200):
            if len(set_for) > 4:
                break
            await asyncio.sleep(0.01)
        assert len(set_for) == 8
        waiting = sum(
            metrics.registry.get_sample_value("coscheduler_queue_groups", {"pool": pool}) or 0
            for pool in ("active", "backoff", "unschedulable", "gathering")
        )
        assert waiting == 1
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
