"""core/scheduler.py: pods applied in a batch (a list) decide as applied one by one (hypothesis)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.pod import PodInfo
from coscheduler.core import Scheduler
from tests.builders import gang
from tests.core.test_properties import World, drain, feed, worlds

Outcome = list[tuple[str, str, tuple[tuple[str, str], ...]]]


def _outcome(scheduler: Scheduler) -> tuple[object, Outcome]:
    positions = sorted(
        (str(key), position) for key, position in scheduler.queue_positions().items()
    )
    decisions = [
        (str(d.group), d.status.message, tuple((b.name, b.node) for b in d.bindings))
        for d in drain(scheduler)
    ]
    return positions, decisions


def _relist(world: World, rng: random.Random) -> tuple[list[PodInfo], list[str]]:
    """A later list of the same pods: some gone, some of another priority or age."""
    kept, gone = [], []
    for pod in world.pods:
        roll = rng.random()
        if roll < 0.2:
            gone.append(pod.uid)
        elif roll < 0.4:
            kept.append(
                dataclasses.replace(pod, priority=pod.priority + 3, created=pod.created - 1)
            )
        else:
            kept.append(pod)
    return kept, gone


def _apply(scheduler: Scheduler, pods: list[PodInfo], gone: list[str], batched: bool) -> Scheduler:
    def apply() -> None:
        for pod in pods:
            scheduler.upsert_pod(pod)
        for uid in gone:
            scheduler.remove_pod(uid)

    if batched:
        with scheduler.batch():
            apply()
    else:
        apply()
    return scheduler


@given(worlds(), st.randoms(use_true_random=False), st.integers(0, 2))
def test_a_batch_decides_as_pod_by_pod(world: World, rng: random.Random, decided: int) -> None:
    """The first list in a batch, then (after some decisions) a relist in a batch: the queue's
    positions and every decision after are those of the same changes applied one by one."""
    without_pods = dataclasses.replace(world, pods=[])
    later, gone = _relist(world, rng)

    def run(batched: bool) -> tuple[object, Outcome]:
        scheduler = _apply(feed(without_pods), world.pods, [], batched)
        for _ in range(decided):
            scheduler.next_decision()
        return _outcome(_apply(scheduler, later, gone, batched))

    assert run(batched=True) == run(batched=False)


def test_a_batch_refreshes_each_group_once_at_its_end() -> None:
    scheduler = feed(World(nodes=[], groups=[], pods=[]))
    synced: list[str] = []
    original: Callable[..., None] = scheduler._sync

    def counting(key: object) -> None:
        synced.append(str(key))
        original(key)

    scheduler._sync = counting  # type: ignore[method-assign]
    with scheduler.batch():
        for pod in gang("g", 5):
            scheduler.upsert_pod(pod)
        assert scheduler.queue_positions() == {}  # not yet in the queue
        with scheduler.batch():  # nested: the outer one refreshes
            scheduler.upsert_pod(gang("h", 1)[0])
    assert len(scheduler.queue_positions()) == 2
    assert synced.count("default/g") == 6  # 5 deferred, then the one at the end
