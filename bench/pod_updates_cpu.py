"""CPU per pod update on the watch path alone: decode, pod handler, core (issue #28).

    python -m bench.pod_updates_cpu [--reps 5]

The steady state's pod updates (:mod:`bench.steady_state_server`'s pods, 2,048
in gangs of 64 on 1,000 nodes, every pod assumed where the planner put it)
replayed in this process: each pod's bound then running line is decoded and
fed to the pod handler, as the watch does. No sockets, no event loop, no
writes: the part of :mod:`bench.steady_state_cpu` that the pod watch costs,
measured as the best of ``--reps`` (a shared machine's load inflates CPU time;
the best of several is the least disturbed). Compare trees by running it
with ``PYTHONPATH=<tree> python -P``, interleaved.
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from typing import Any

import orjson

from bench.steady_state_server import bound, node_object, pod_object, podgroup_object, running
from coscheduler.api.adapters import sigs
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import InvalidObject
from coscheduler.runtime.handlers.registry import Handlers


class _Unreported:
    """Nothing here is unreadable; the handlers need someone to tell."""

    def invalid(self, obj: InvalidObject) -> None:
        raise AssertionError(obj.message)

    def waiting(self, uid: str, waits: bool) -> None:
        pass


def _prepared(nodes: int, gangs: int, gang_size: int) -> tuple[Handlers, list[bytes]]:
    """Handlers with every kind listed and every pod assumed; the watch lines to replay."""
    scheduler = Scheduler(clock=time.monotonic)
    handlers = Handlers.build(
        scheduler,
        complaints=_Unreported(),
        group_changed=lambda _key: None,
        queue_changed=lambda _name: None,
        owner_changed=lambda _owner: None,
    )
    handlers.nodes.replace([node_object(i, 32) for i in range(nodes)])
    names = [f"gang-{g}" for g in range(gangs)]
    handlers.podgroups[sigs.ADAPTER.api].replace([podgroup_object(n, gang_size) for n in names])
    pods: list[dict[str, Any]] = [pod_object(i, n) for n in names for i in range(gang_size)]
    handlers.pods.replace(orjson.loads(orjson.dumps(pods)))
    node_of: dict[str, str] = {}
    while (decision := scheduler.next_decision()) is not None:
        node_of.update((binding.uid, binding.node) for binding in decision.bindings)
    lines = []
    for index, pod in enumerate(pods):
        was_bound = bound(pod, node_of[pod["metadata"]["uid"]], 2000 + 2 * index)
        lines.append(orjson.dumps({"type": "MODIFIED", "object": was_bound}))
        lines.append(orjson.dumps({"type": "MODIFIED", "object": running(was_bound, 2001)}))
    return handlers, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gangs", type=int, default=32)
    parser.add_argument("--gang-size", type=int, default=64)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    spent = []
    for _ in range(args.reps):
        handlers, lines = _prepared(args.nodes, args.gangs, args.gang_size)
        gc.collect()
        upsert = handlers.pods.upsert
        started = time.process_time()
        for line in lines:
            upsert(orjson.loads(line)["object"])
        spent.append((time.process_time() - started) / len(lines))
    print(
        f"us CPU per pod update: best {1e6 * min(spent):.1f} "
        f"(worst {1e6 * max(spent):.1f}) of {args.reps}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
