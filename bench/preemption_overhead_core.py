"""What gang preemption costs a failed attempt when nothing can be preempted (issue #18).

No API server: the scheduler's core alone. The cluster of ``bench/preemption_bench.py``
(5,000 nodes of 32 cpu, 20,000 running pods of 8 cpu in 2,000 gangs of 10), full, but
every gang of priority 0; then ``--waiting`` gangs of 16 x 8 cpu, priority 0 too, that do
not fit. Each is attempted in turn (the scheduler's own ``_decide``, as the loop calls it),
``--rounds`` times, with preemption off and on, interleaved; the scheduler's clock moves
``step`` seconds per attempt (how many attempts fail per second of the cluster's life: a
search's cost is paid per search, not per attempt). Figure: CPU time per failed attempt
(``time.process_time()``; the core is single-threaded), median of the rounds, and the
searches run.

    .venv/bin/python -m bench.preemption_overhead_core
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import time

from bench.preemption_bench import GANG_SIZE, GANGS, NODES, NOW, PODS_PER_NODE, make_node, make_pod
from coscheduler.core import GroupKey, GroupPolicy, Scheduler, SchedulerSettings
from coscheduler.core.preemption import Mode, PreemptionSettings


class _Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def cluster_of_equals(mode: Mode, waiting: int) -> tuple[Scheduler, _Clock, list[GroupKey]]:
    rng = random.Random(1)
    clock = _Clock()
    scheduler = Scheduler(clock, SchedulerSettings(preemption=PreemptionSettings(mode=mode)))
    for index in range(NODES):
        scheduler.upsert_node(make_node(index))
    seats = [f"node-{i // PODS_PER_NODE:05d}" for i in range(NODES * PODS_PER_NODE)]
    rng.shuffle(seats)
    for g in range(GANGS):
        name = f"gang-{g:04d}"
        scheduler.upsert_group(GroupPolicy(namespace="bench", name=name, min_member=GANG_SIZE,
                                           priority=0))  # fmt: skip
        for i in range(GANG_SIZE):
            seat = seats[g * GANG_SIZE + i]
            scheduler.upsert_pod(make_pod(f"{name}-{i}", name, "8", 0, seat, NOW - 100))
    keys = []
    for w in range(waiting):
        name = f"wait-{w:03d}"
        scheduler.upsert_group(GroupPolicy(namespace="bench", name=name, min_member=16,
                                           priority=0))  # fmt: skip
        for i in range(16):
            scheduler.upsert_pod(make_pod(f"{name}-{i}", name, "8", 0, None, None))
        keys.append(GroupKey("bench", name))
    return scheduler, clock, keys


def per_attempt(mode: Mode, step: float, waiting: int, rounds: int) -> tuple[float, int]:
    """Median CPU ms per failed attempt over the rounds, and the searches run."""
    scheduler, clock, keys = cluster_of_equals(mode, waiting)
    times = []
    searches = 0
    for _ in range(rounds):
        started = time.process_time()
        for key in keys:
            clock.now += step
            decision = scheduler._decide(key, *scheduler.members(key))
            assert not decision.bindings, "the waiting gangs must not fit"
            searches += decision.preemption_found is not None
        times.append((time.process_time() - started) / len(keys) * 1000)
    return statistics.median(times), searches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--waiting", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", default="0.001,0.1,1", help="clock seconds per attempt")
    args = parser.parse_args()
    print(
        f"python {platform.python_version()}, {NODES} nodes, {GANGS * GANG_SIZE} running "
        f"pods in {GANGS} gangs, all priority 0; {args.waiting} waiting gangs of 16 x 8 cpu"
    )
    print(
        "| clock s per attempt | off: CPU ms per attempt | on: CPU ms per attempt | on / off "
        "| searches (on) |\n|---|---|---|---|---|"
    )
    for step in (float(s) for s in args.steps.split(",")):
        off_runs: list[float] = []
        on_runs: list[float] = []
        searches = 0
        for mode in (Mode.OFF, Mode.ON, Mode.ON, Mode.OFF):  # interleaved, each first once
            ms, count = per_attempt(mode, step, args.waiting, args.rounds)
            (on_runs if mode is Mode.ON else off_runs).append(ms)
            searches += count
        off, on = statistics.median(off_runs), statistics.median(on_runs)
        print(f"| {step:g} | {off:.2f} | {on:.2f} | {on / off:.2f}x | {searches} |")


if __name__ == "__main__":
    main()
