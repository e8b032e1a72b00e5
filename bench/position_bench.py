"""What numbering the line costs: one publishing round, no API server.

Times, in process CPU time (the machine is shared), the core's positions
(``SchedulerReads.queue_positions``: every pending group numbered in its queue and
the cluster) plus the publisher's rule (``controller/positions.py``: what is
due) for a backlog of ``--sizes`` pending groups spread over four queues, half
of them lone pods. Medians of ``--repeat``. The publisher spaces its rounds so
that they take at most 5 % of the event loop: the interval it would use is
shown beside.

    .venv/bin/python bench/position_bench.py --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import time

from coscheduler.controller.positions import PublishRule, due
from coscheduler.core.group import KIND_POD, KIND_POD_GROUP, GroupKey
from coscheduler.core.positions import positions
from coscheduler.core.queue import GroupQueue


def backlog(size: int) -> GroupQueue:
    queue = GroupQueue(lambda: 0.0)
    for index in range(size):
        kind = KIND_POD if index % 2 else KIND_POD_GROUP
        key = GroupKey("bench", f"g{index}", kind)
        queue.add(key, priority=index % 4, created=float(index), queue=f"q{index % 4}")
    return queue


def round_cpu(queue: GroupQueue) -> float:
    started = time.process_time()
    current = {k: p for k, p in positions(queue.entries(), queue.share).items() if not k.lone}
    due(current, current, PublishRule())
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 50_000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print("| pending groups | CPU per round (median) | interval between rounds |")
    print("|---|---|---|")
    for size in args.sizes:
        queue = backlog(size)
        cpu = statistics.median(round_cpu(queue) for _ in range(args.repeat))
        print(f"| {size:,} | {cpu * 1000:.0f} ms | {max(2.0, 20 * cpu):.1f} s |")


if __name__ == "__main__":
    main()
