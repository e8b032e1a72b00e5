"""The runtime's EventRecorder against a real API server: merged repeats, current messages."""

from __future__ import annotations

import asyncio

import pytest

from coscheduler.runtime.events import EventRecorder, ObjectRef
from coscheduler.runtime.kube import KubeClient
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.waiting import async_wait_for

pytestmark = pytest.mark.e2e


def _subject(cluster: Cluster, namespace: str, name: str) -> ObjectRef:
    """A ConfigMap to write events about."""
    created = cluster.api.create(
        f"/api/v1/namespaces/{namespace}/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}},
    )
    return ObjectRef("v1", "ConfigMap", namespace, name, created["metadata"]["uid"])


async def test_repeats_are_counted_and_a_new_message_replaces_the_old(
    cluster: Cluster, namespace: str, client: KubeClient
) -> None:
    ref = _subject(cluster, namespace, "subject")
    recorder = EventRecorder(client, interval_seconds=1.0)
    writer = asyncio.create_task(recorder.run())

    def events() -> list[Json]:
        path = f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name=subject"
        items: list[Json] = cluster.api.get(path)["items"]
        return items

    try:
        for _ in range(5):
            recorder.record(ref, "Warning", "FailedScheduling", "first reason")
        (first,) = await async_wait_for(events, lambda items: len(items) == 1, describe="one event")
        assert first["message"] == "first reason"

        recorder.record(ref, "Warning", "FailedScheduling", "second reason", change_interval=0.5)
        (latest,) = await async_wait_for(
            events,
            lambda items: len(items) == 1 and items[0]["message"] == "second reason",
            describe="the same event, now with the second reason",
            timeout=10,
        )
        assert latest["count"] >= 2
        assert latest["reason"] == "FailedScheduling"
        assert latest["source"]["component"] == "coscheduler"
    finally:
        writer.cancel()


async def test_a_held_warning_does_not_hold_up_other_events(
    cluster: Cluster, namespace: str, client: KubeClient
) -> None:
    """While bindings are in flight warnings wait; a Scheduled event recorded after one
    is written at once, and the warning follows when the bindings are done."""
    subjects = {name: _subject(cluster, namespace, name) for name in ("waiting", "bound")}
    idle = asyncio.Event()  # cleared: bindings are in flight
    recorder = EventRecorder(client)
    writer = asyncio.create_task(recorder.run(idle))

    def reasons() -> set[str]:
        items: list[Json] = cluster.api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
        return {item["reason"] for item in items}

    try:
        recorder.record(subjects["waiting"], "Warning", "FailedScheduling", "no room yet")
        recorder.record(subjects["bound"], "Normal", "Scheduled", "assigned to n1")
        await async_wait_for(reasons, lambda seen: "Scheduled" in seen, describe="Scheduled")
        assert "FailedScheduling" not in reasons()

        idle.set()
        await async_wait_for(
            reasons, lambda seen: "FailedScheduling" in seen, describe="the held warning"
        )
    finally:
        writer.cancel()


async def test_concurrent_writers_keep_one_event_per_series_in_order(
    cluster: Cluster, namespace: str, client: KubeClient
) -> None:
    """Several writers at once: many objects' events all land, and messages of one series
    recorded before it exists are written one after another into one Event, the last one
    winning and every one counted."""
    refs = [_subject(cluster, namespace, f"subject-{i}") for i in range(30)]
    recorder = EventRecorder(client, writers=4)
    writer = asyncio.create_task(recorder.run())

    def events() -> list[Json]:
        items: list[Json] = cluster.api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
        return items

    try:
        for step in range(8):
            recorder.record(refs[0], "Normal", "Progress", f"step {step}", change_interval=0)
        for ref in refs[1:]:
            recorder.record(ref, "Normal", "Scheduled", f"assigned {ref.name}")
        items = await async_wait_for(
            events,
            lambda items: (
                len(items) == len(refs)
                and any(i["reason"] == "Progress" and i["count"] == 8 for i in items)
            ),
            describe="one event per object, the series counted to 8",
            timeout=30,
        )
        by_object = {item["involvedObject"]["name"]: item for item in items}
        assert set(by_object) == {ref.name for ref in refs}
        assert by_object["subject-0"]["message"] == "step 7"
        assert all(by_object[ref.name]["message"] == f"assigned {ref.name}" for ref in refs[1:])
    finally:
        writer.cancel()
