"""CPU of the first lists' apply and the first decision, in one interpreter (issue #28).

    python -m bench.list_apply [--trees main=/tmp/main-tree,ours=.] [--reps 7] [--profile OUT]

What start-up spends between the lists' bytes and the first decision, without the
network: each rep is a fresh interpreter (``python -P`` with the tree on ``PYTHONPATH``,
so each tree's own code runs) that

1. imports the start path and the deciding side (``coscheduler.app``,
   ``coscheduler.operator``), timed apart;
2. decodes the first lists as the watch gets them (one ``orjson.loads`` of a list's
   body: 1,000 KWOK-shaped nodes, 2,048 pending pods in gangs of 64 with their
   PodGroups: :mod:`bench.steady_state_server`'s shapes);
3. applies them to the handlers of one :class:`~coscheduler.operator.Operator`'s
   kind (``Handlers.build`` over a ``Scheduler``): nodes, PodGroups, pods, in the
   order a start usually applies them;
4. asks the core for its first decision (``next_decision``).

CPU-seconds (``time.process_time``) of each step, medians of ``--reps`` reps, the trees
interleaved rep by rep (a shared machine: compare within one run). ``--profile OUT``
writes one rep's cProfile of steps 2-4 (this tree only). ``--gc-paused`` holds the
cyclic collector off in steps 2 and 3, as the runtime does (``runtime/gc_pause.py``:
while a list is decoded, and since issue #28's second pass while it is applied).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

STEPS = ("import", "decode", "nodes", "podgroups", "pods", "first_decision")


def _bodies(nodes: int, gangs: int, gang_size: int) -> dict[str, bytes]:
    """The three lists' bodies, as the API server sends them (managedFields included)."""
    import orjson

    from bench.steady_state_server import node_object, pod_object, podgroup_object

    names = [f"gang-{g}" for g in range(gangs)]
    return {
        "nodes": orjson.dumps({"items": [node_object(i, 32) for i in range(nodes)]}),
        "podgroups": orjson.dumps({"items": [podgroup_object(n, gang_size) for n in names]}),
        "pods": orjson.dumps(
            {"items": [pod_object(i, n) for n in names for i in range(gang_size)]}
        ),
    }


def _child(bodies_dir: Path, profile: Path | None, *, gc_paused: bool = False) -> dict[str, float]:
    """One rep (see the module docstring); CPU-seconds per step."""
    clock = time.process_time
    spent: dict[str, float] = {}
    started = clock()
    import coscheduler.app
    import coscheduler.operator  # noqa: F401 - timed: the start path and the deciding side

    spent["import"] = clock() - started
    import orjson

    from coscheduler.api.adapters import sigs
    from coscheduler.core.scheduler import Scheduler
    from coscheduler.runtime.handlers.registry import Handlers

    class Unreported:
        def invalid(self, obj: Any) -> None:
            raise AssertionError(obj.message)

        def waiting(self, uid: str, waits: bool) -> None:
            pass

    raw = {
        name: (bodies_dir / f"{name}.json").read_bytes() for name in ("nodes", "podgroups", "pods")
    }
    scheduler = Scheduler(clock=time.monotonic)
    handlers = Handlers.build(scheduler, complaints=Unreported())
    profiler = None
    if profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    if gc_paused:
        gc.disable()
    started = clock()
    lists = {name: orjson.loads(body)["items"] for name, body in raw.items()}
    for item in (obj for items in lists.values() for obj in items):
        item["metadata"].pop("managedFields", None)  # as the watch keeps them
    spent["decode"] = clock() - started
    for name, handler in (
        ("nodes", handlers.nodes),
        ("podgroups", handlers.podgroups[sigs.ADAPTER.api]),
        ("pods", handlers.pods),
    ):
        started = clock()
        handler.replace(lists[name])
        spent[name] = clock() - started
    gc.enable()
    started = clock()
    decision = scheduler.next_decision()
    spent["first_decision"] = clock() - started
    if profiler is not None and profile is not None:
        profiler.disable()
        profiler.dump_stats(str(profile))
    assert decision is not None, "the first decision binds a gang"
    assert decision.bindings, "the first decision binds a gang"
    spent["bound"] = len(decision.bindings)
    return spent


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.list_apply", description=__doc__)
    parser.add_argument("--trees", default=f"this={Path(__file__).resolve().parents[1]}")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gangs", type=int, default=32)
    parser.add_argument("--gang-size", type=int, default=64)
    parser.add_argument("--profile", type=Path, help="cProfile of one rep's steps 2-4")
    parser.add_argument("--gc-paused", action="store_true", help="no cyclic GC in steps 2-3")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child is not None:
        print(json.dumps(_child(options.child, options.profile, gc_paused=options.gc_paused)))
        return 0
    import tempfile

    from bench.runtime_venv import runtime_python

    python = runtime_python()
    trees = dict(item.split("=", 1) for item in options.trees.split(","))
    with tempfile.TemporaryDirectory(prefix="list-apply-") as scratch:
        bodies = Path(scratch)
        for name, body in _bodies(options.nodes, options.gangs, options.gang_size).items():
            (bodies / f"{name}.json").write_bytes(body)
        here = str(Path(__file__).resolve())
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        reps = 1 if options.profile else options.reps
        for _ in range(reps):
            for name, tree in trees.items():
                argv_child = [here, "--child", str(bodies)]
                if options.profile:
                    argv_child += ["--profile", str(options.profile)]
                if options.gc_paused:
                    argv_child.append("--gc-paused")
                out = subprocess.run(
                    [str(python), "-P", *argv_child],
                    env={
                        **os.environ,
                        "PYTHONPATH": f"{Path(tree).resolve()}:{Path(here).parents[1]}",
                    },
                    check=True,
                    capture_output=True,
                    text=True,
                )
                samples[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {reps} reps")
    print("| tree | " + " | ".join(STEPS) + " | total after imports |")
    print("|---" * (len(STEPS) + 2) + "|")
    for name, rows in samples.items():
        medians = [statistics.median(row[step] for row in rows) for step in STEPS]
        after = statistics.median(sum(row[s] for s in STEPS[1:]) for row in rows)
        cells = " | ".join(f"{value:.3f}" for value in medians)
        print(f"| {name} | {cells} | {after:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
