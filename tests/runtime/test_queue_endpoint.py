"""/debug/queue beside the metrics, and ``coscheduler queue`` reading it (loopback)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

from click.testing import CliRunner

from coscheduler.api.reasons import Reason
from coscheduler.cli import main, queue_table
from coscheduler.core.group import GroupKey
from coscheduler.core.quota import QueuePolicy
from coscheduler.core.scheduler import Scheduler
from coscheduler.core.status import Code, Status
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.queue_listing import QueueListing
from coscheduler.runtime.serving import HealthServer
from tests.builders import Clock, gang, group


def waiting_line() -> Scheduler:
    """No node: groups a, b (queue left) and c, d (queue right) all wait."""
    scheduler = Scheduler(Clock())
    everyone = frozenset(["default", "other"])
    for name in ("left", "right"):
        scheduler.upsert_queue(QueuePolicy(name, namespaces=everyone))
    lines = {"a": ("left", 0), "b": ("left", 9), "c": ("right", 0), "d": ("right", 0)}
    for index, (name, (queue, priority)) in enumerate(lines.items()):
        namespace = "other" if name == "d" else "default"
        scheduler.upsert_group(
            group(name, 2, queue=queue, priority=priority, created=index, namespace=namespace)
        )
        for member in gang(name, 2, namespace=namespace):
            scheduler.upsert_pod(member)
    return scheduler


@contextlib.asynccontextmanager
async def serving(listing: QueueListing | None) -> AsyncIterator[HealthServer]:
    served = HealthServer(Metrics(), alive=lambda: True, ready=lambda: True, listing=listing)
    await served.start("127.0.0.1", 0)
    try:
        yield served
    finally:
        await served.stop()


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["queue", *args])
    return result.exit_code, result.output


async def test_a_standby_has_no_queue_to_show() -> None:
    listing = QueueListing(waiting_line(), lambda _key: None, leading=lambda: False)
    async with serving(listing) as server:
        code, output = await asyncio.to_thread(cli, "--endpoint", f"http://127.0.0.1:{server.port}")
    assert code == 1
    assert "HTTP 503" in output
    assert "does not lead" in output


async def test_the_line_in_cluster_order_with_both_positions() -> None:
    scheduler = waiting_line()
    waits = Status(Code.UNSCHEDULABLE, Reason.NOT_ENOUGH_RESOURCES, "no node")
    async with serving(QueueListing(scheduler, {GroupKey("default", "a"): waits}.get)) as server:
        await _the_line(f"http://127.0.0.1:{server.port}")


async def _the_line(endpoint: str) -> None:
    code, output = await asyncio.to_thread(cli, "--endpoint", endpoint, "-o", "json")
    assert code == 0, output
    rows = json.loads(output)
    assert [(r["name"], r["queue"], r["queuePosition"], r["clusterPosition"]) for r in rows] == [
        ("b", "left", 1, 1),
        ("a", "left", 2, 2),
        ("c", "right", 1, 3),
        ("d", "right", 2, 4),
    ]
    assert rows[0]["priority"] == 9
    assert rows[0]["state"] == "active"
    assert (rows[1]["reason"], rows[1]["message"]) == ("NotEnoughResources", "no node")
    # Filters choose rows and keep their numbers.
    code, output = await asyncio.to_thread(
        cli, "--endpoint", endpoint, "-o", "json", "--queue", "right", "--namespace", "other"
    )
    assert [(r["name"], r["queuePosition"], r["clusterPosition"]) for r in json.loads(output)] == [
        ("d", 2, 4)
    ]
    code, output = await asyncio.to_thread(cli, "--endpoint", endpoint)
    lines = output.splitlines()
    assert lines[0].split()[:5] == ["POSITION", "QUEUE", "IN-QUEUE", "NAMESPACE", "NAME"]
    assert [line.split()[4] for line in lines[1:]] == ["b", "a", "c", "d"]


async def test_nothing_pending_says_so() -> None:
    async with serving(QueueListing(Scheduler(Clock()), lambda _key: None)) as server:
        code, output = await asyncio.to_thread(cli, "--endpoint", f"http://127.0.0.1:{server.port}")
    assert (code, output.strip()) == (0, "no pending groups")


def test_the_table_leaves_unknown_cells_empty() -> None:
    table = queue_table([{"clusterPosition": 1, "queue": "q", "name": "g", "reason": None}])
    assert table.splitlines()[1].split() == ["1", "q", "g"]
