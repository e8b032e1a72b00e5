"""The dashboard beside a running scheduler on 5,000 KWOK nodes: its CPU, and a page's load.

    .venv/bin/python -m bench.dashboard_cluster [--nodes 5000] [--gangs 400] [--seconds 60]

1. A local control plane (the e2e harness's; KWOK's node Leases renewed every 10
   minutes, as the scale suite does, so that 5,000 nodes leave the API server time)
   with ``--nodes`` nodes of 8 cpu in zones of 100 and racks of 20.
2. ``coscheduler run --dashboard``, then ``--gangs`` ReplicaSets of 4 pods in PodGroups
   over two queues: half fit and run, half ask for 12 cpu a pod and wait in line.
3. The scheduler's CPU (``/proc``) over ``--seconds`` with no page open, then over
   ``--seconds`` with one page open (Debian's Chromium, driven by Playwright), and a
   fresh page's load, from navigation to its first overview drawn, three times.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench.list_bench import _process_cpu_seconds
from e2e import browser, build, nodes
from e2e import workloads as w
from e2e.controlplane import Cluster, ClusterOptions
from e2e.scheduler import SchedulerProcess
from e2e.waiting import wait_for

REPO = Path(__file__).resolve().parent.parent
NAMESPACE = "bench"
POOL = "dashboard"
ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"


def _populate(cluster: Cluster, node_count: int, gangs: int) -> None:
    for crd in ("podgroups.yaml", "queues.yaml"):
        cluster.apply(REPO / "crds" / crd)
    wait_for(lambda: cluster.api.get_or_none(w.QUEUES), describe="the Queue CRD to be served")
    specs = [
        nodes.NodeSpec(
            name=f"kwok-{i:05d}",
            labels={w.POOL_LABEL: POOL, ZONE: f"zone-{i // 100}", RACK: f"rack-{i // 20}"},
        )
        for i in range(node_count)
    ]
    cluster.add_nodes(specs)
    cluster.api.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    wait_for(
        lambda: cluster.api.get_or_none(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default"),
        describe="the namespace's default ServiceAccount",
    )
    for team in ("team-a", "team-b"):
        w.create_queue(cluster.api, team, namespaces=[NAMESPACE], nominal={"cpu": "8000"})
    for index in range(gangs):
        name = f"gang-{index:04d}"
        queue = "team-a" if index % 2 else "team-b"
        w.create_podgroup(
            cluster.api, NAMESPACE, name, 4, queue=queue, topology={"preferred": [RACK]}
        )
        cpu = "1" if index % 2 else "12"  # every other gang cannot fit any node
        w.create_replicaset(
            cluster.api, NAMESPACE, name, replicas=4, pool=POOL, cpu=cpu, group=name
        )


def _cpu_over(pid: int, seconds: float) -> float:
    before = _process_cpu_seconds([pid])
    time.sleep(seconds)
    return (_process_cpu_seconds([pid]) - before) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--gangs", type=int, default=400)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    build.ensure_built()
    state = Path(tempfile.mkdtemp(prefix="coscheduler-dashboard-"))
    cluster = Cluster.start(state, ClusterOptions(node_lease_seconds=600))
    scheduler: SchedulerProcess | None = None
    try:
        _populate(cluster, args.nodes, args.gangs)
        scheduler = SchedulerProcess(
            kubeconfig=cluster.kubeconfig,
            log_path=state / "coscheduler.log",
            args=[
                "--no-leader-elect",
                "--metrics-port",
                "0",
                "--dashboard",
                "--dashboard-port",
                "0",
            ],
        ).start()
        running = args.gangs // 2 * 4
        wait_for(
            lambda: len(
                [p for p in w.list_pods(cluster.api, NAMESPACE) if p["spec"].get("nodeName")]
            ),
            lambda bound: bound >= running,
            describe=f"{running} pods bound",
            timeout=600,
        )
        idle = _cpu_over(scheduler.pid, args.seconds)
        url = f"http://127.0.0.1:{scheduler.dashboard_port}/"
        loads = []
        with browser.page() as page:
            for _ in range(3):
                started = time.monotonic()
                page.goto(url)
                page.wait_for_selector("body[data-loaded=true]", timeout=60_000)
                loads.append(time.monotonic() - started)
                page.goto("about:blank")
            page.goto(url)
            page.wait_for_selector("body[data-loaded=true]", timeout=60_000)
            watched = _cpu_over(scheduler.pid, args.seconds)
            browser.screenshot(page, "dashboard-5000-nodes")
        print(
            f"{args.nodes:,} nodes, {args.gangs} gangs of 4 (half waiting): the scheduler's CPU "
            f"{idle:.1%} of a core with no page open, {watched:.1%} with one page open "
            f"(over {args.seconds:.0f} s each); page load to first overview drawn: "
            f"median {statistics.median(loads):.2f} s, max {max(loads):.2f} s"
        )
    finally:
        if scheduler is not None:
            scheduler.stop()
        cluster.stop()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
