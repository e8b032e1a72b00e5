"""controller/embedded.py: Kopf inside our process, which keeps its signals and its tasks.

Kopf runs here against an address nobody answers (its login succeeds, its
requests fail and are retried): what is tested is what Kopf's start and stop
do to the rest of the process.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator

import kopf
import pytest

from coscheduler.controller import embedded


@pytest.fixture
def loop_signals() -> Iterator[None]:
    yield
    loop = asyncio.get_event_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.remove_signal_handler(signum)


def nowhere(**_: object) -> kopf.ConnectionInfo:
    return kopf.ConnectionInfo(server="https://127.0.0.1:1")


@pytest.mark.usefixtures("loop_signals")
async def test_our_signal_handlers_and_tasks_outlive_kopf() -> None:
    registry = kopf.OperatorRegistry()
    kopf.on.login(id="login", registry=registry)(nowhere)
    stop = asyncio.Event()
    signalled: list[str] = []
    kopf_running = asyncio.create_task(
        embedded.run(registry, on_signal=lambda: signalled.append("ours"), stop=stop)
    )
    await asyncio.sleep(0.5)
    ours = asyncio.create_task(asyncio.sleep(3600), name="started while Kopf runs")

    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.sleep(0.2)
    assert signalled == ["ours"], "the signal reached our handler, not Kopf's"
    assert not kopf_running.done()

    stop.set()
    await asyncio.wait_for(kopf_running, timeout=30)
    assert not ours.done(), "Kopf's stop left our task alone"
    ours.cancel()


@pytest.mark.usefixtures("loop_signals")
async def test_kopf_runs_again_after_it_was_stopped() -> None:
    """A standby's Kopf (admission only) stops when it takes over, and starts again."""
    for _ in range(2):
        registry = kopf.OperatorRegistry()
        kopf.on.login(id="login", registry=registry)(nowhere)
        stop = asyncio.Event()
        running = asyncio.create_task(embedded.run(registry, stop=stop))
        await asyncio.sleep(0.3)
        assert not running.done()
        stop.set()
        await asyncio.wait_for(running, timeout=30)


@pytest.mark.usefixtures("loop_signals")
async def test_kopf_cancelled_leaves_no_kill_behind() -> None:
    """Kopf's own CLI SIGKILLs the thread it ran in 10 minutes after its task is cancelled;
    ours is the process's main thread, which goes on (a test session's did, and died)."""
    registry = kopf.OperatorRegistry()
    kopf.on.login(id="login", registry=registry)(nowhere)
    running = asyncio.create_task(embedded.run(registry))
    await asyncio.sleep(0.3)
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)
    loop = asyncio.get_running_loop()
    # The loop's timers are private to asyncio: read here only to find Kopf's.
    timers = getattr(loop, "_scheduled")  # noqa: B009
    assert not [t for t in timers if getattr(t, "_callback", None) is signal.pthread_kill]
