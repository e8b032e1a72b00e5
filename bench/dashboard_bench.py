"""What the dashboard costs at scale: its overview's CPU and size, and a page's load time.

    .venv/bin/python -m bench.dashboard_bench [--nodes 5000] [--groups 10000] [--repeat 5]

No API server: one scheduler's handlers are fed ``--nodes`` KWOK-shaped nodes
(:mod:`bench.steady_state_server`'s, 8 cpu, in zones of 100 and racks of 20, the
key gangs ask for) and
``--groups`` PodGroups of 4 members in 8 queues, half of them running (bound),
half waiting; the same :class:`~coscheduler.dashboard.model.PageData` the
scheduler serves reads them. It prints

* the CPU (``time.process_time``, median of ``--repeat``) of one overview
  round, made and encoded as the publisher makes it, its size, and the share
  of the event loop the publisher then takes (it spaces its rounds to at most
  5 %, ``server.BUDGET``);
* the page's load time in Chromium (Debian's, driven by Playwright): from
  navigation until the page has drawn its first overview (queues, line and
  room), median of ``--repeat`` fresh pages, the server in this process; and
  in the page its ``DOMContentLoaded``, the room drawn again with its layout
  and the count of its elements.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
from typing import Any

import orjson

from bench.steady_state_server import (
    NAMESPACE,
    bound,
    node_object,
    pod_object,
    podgroup_object,
    running,
)
from coscheduler.api.adapters import sigs
from coscheduler.core.scheduler import Scheduler
from coscheduler.dashboard.model import PageData
from coscheduler.dashboard.server import BUDGET, DashboardServer
from coscheduler.runtime.handlers.base import InvalidObject
from coscheduler.runtime.handlers.registry import Handlers
from coscheduler.runtime.queue_listing import QueueListing
from coscheduler.runtime.readmodel import ReadModel
from e2e import browser

ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"
QUEUES = 8
MEMBERS = 4


class _Complaints:
    def invalid(self, obj: InvalidObject) -> None:
        raise AssertionError(obj)

    def waiting(self, uid: str, waits: bool) -> None:
        pass


def _queue(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "Queue",
        "metadata": {"name": f"team-{index}", "uid": f"uid-q{index}"},
        "spec": {"namespaces": [NAMESPACE], "weight": 1 + index % 3, "nominal": {"cpu": "4000"}},
    }


def page_data(nodes: int, groups: int) -> PageData:
    """The dashboard's data over a fed scheduler (module docstring)."""
    scheduler = Scheduler(time.monotonic)
    handlers = Handlers.build(
        scheduler,
        complaints=_Complaints(),
        group_changed=lambda _key: None,
        queue_changed=lambda _name: None,
        owner_changed=lambda _owner: None,
    )
    kwok = [node_object(i, 8) for i in range(nodes)]
    for index, node in enumerate(kwok):
        node["metadata"]["labels"].update(
            {ZONE: f"zone-{index // 100}", RACK: f"rack-{index // 20}"}
        )
    handlers.nodes.replace(kwok)
    handlers.queues.replace([_queue(i) for i in range(QUEUES)])
    names = [f"g{index:05d}" for index in range(groups)]
    podgroups = [podgroup_object(name, MEMBERS) for name in names]
    for index, podgroup in enumerate(podgroups):
        podgroup["spec"].update(queue=f"team-{index % QUEUES}", topology={"preferred": [RACK]})
    handlers.podgroups[sigs.ADAPTER.api].replace(podgroups)
    pods = []
    for index, name in enumerate(names):
        for member in range(MEMBERS):
            pod = pod_object(member, name)
            if index % 2 == 0:  # half running, 8 one-cpu pods to a node
                node = kwok[(index * MEMBERS + member) // 8 % nodes]["metadata"]["name"]
                pod = running(bound(pod, node, 1), 2)
            pods.append(pod)
    handlers.pods.replace(pods)
    view = ReadModel(scheduler, handlers)
    return PageData(
        view, QueueListing(scheduler, view.verdict), clock=time.time, role=lambda: "leader"
    )


def overview_cpu(data: PageData, repeat: int) -> tuple[float, dict[str, int]]:
    """CPU of one round (median) and each part's size in bytes."""
    spent, sizes = [], {}
    for _ in range(repeat):
        started = time.process_time()
        sizes = {name: len(orjson.dumps(part)) for name, part in data.overview().items()}
        spent.append(time.process_time() - started)
    return statistics.median(spent), sizes


#: In the page once drawn: its elements, and the room drawn again (ms, median of 5).
_IN_PAGE = """() => {
  const spent = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    renderRoom();
    document.body.offsetHeight;  // the layout too
    spent.push(performance.now() - started);
  }
  const nav = performance.getEntriesByType("navigation")[0];
  return {elements: document.getElementsByTagName("*").length,
          room: spent.sort((a, b) => a - b)[2], ready: nav.domContentLoadedEventEnd};
}"""


def page_loads(data: PageData, repeat: int) -> tuple[list[float], list[dict[str, float]]]:
    """Seconds from navigation to the first overview drawn, one fresh page each, and
    what :data:`_IN_PAGE` finds in each."""
    loop = asyncio.new_event_loop()
    server = DashboardServer(data)
    loop.run_until_complete(server.start("127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    loads, found = [], []
    try:
        for _ in range(repeat):
            with browser.page() as page:
                started = time.monotonic()
                page.goto(f"http://127.0.0.1:{server.port}/")
                page.wait_for_selector("body[data-loaded=true]", timeout=60_000)
                loads.append(time.monotonic() - started)
                found.append(page.evaluate(_IN_PAGE))
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
    return loads, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-browser", action="store_true", help="skip the page's load time")
    args = parser.parse_args()
    started = time.process_time()
    data = page_data(args.nodes, args.groups)
    fed = time.process_time() - started
    print(f"fed {args.nodes:,} nodes, {args.groups:,} groups in {fed:.1f} s CPU")
    cpu, sizes = overview_cpu(data, args.repeat)
    interval = max(2.0, cpu / BUDGET)
    print(
        f"overview: {cpu * 1000:.0f} ms CPU per round (median of {args.repeat}), "
        f"{sum(sizes.values()) / 1e6:.2f} MB (room {sizes['room'] / 1e6:.2f} MB); rounds every "
        f"{interval:.1f} s with a page open: {cpu / interval:.1%} of one core"
    )
    if not args.no_browser:
        loads, found = page_loads(data, args.repeat)
        print(
            f"page load to first overview drawn: median {statistics.median(loads):.2f} s, "
            f"max {max(loads):.2f} s ({len(loads)} fresh pages); in the page: DOMContentLoaded "
            f"at {statistics.median(f['ready'] for f in found):.0f} ms, the room drawn "
            f"again {statistics.median(f['room'] for f in found):.0f} ms, "
            f"{found[-1]['elements']:.0f} elements"
        )


if __name__ == "__main__":
    main()
