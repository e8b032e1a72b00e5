"""Two trees of the core on the DRA benchmark, interleaved: for a before/after.

Each round runs this tree's ``bench/dra_bench.py --repeat 1`` once per tree,
in its own process with that tree first on ``PYTHONPATH`` (so each imports
its own ``coscheduler``; the workload is built the same way for both),
alternating which tree goes first, so a noisy neighbour weighs on both alike.
Prints the median placements per second (wall and CPU) of each tree and the
ratio new / old.

    git archive <commit> coscheduler | tar -x -C /tmp/dra-old
    .venv/bin/python bench/dra_ab.py --old /tmp/dra-old --new . --rounds 9 --gangs 1000
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

#: "median: 4,140 placements/s (5,010 per CPU second)".
_MEDIAN = re.compile(r"median: ([\d,]+) placements/s \(([\d,]+) per CPU second\)")
_SCRIPT = Path(__file__).resolve().parent / "dra_bench.py"


def one_run(tree: Path, extra: list[str]) -> tuple[float, float]:
    """Placements per second (wall, CPU) of one run on ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    out = subprocess.run(
        [sys.executable, str(_SCRIPT), "--repeat", "1", *extra],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = _MEDIAN.search(out)
    if found is None:
        raise SystemExit(f"no median in the output of {tree}:\n{out}")
    wall, cpu = (float(group.replace(",", "")) for group in found.groups())
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", type=Path, required=True)
    parser.add_argument("--new", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--gangs", type=int, default=1000)
    args = parser.parse_args()
    extra = ["--gangs", str(args.gangs)]
    trees = {"old": args.old, "new": args.new}
    runs: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
    for round_ in range(args.rounds):
        order = ("old", "new") if round_ % 2 == 0 else ("new", "old")
        for side in order:
            runs[side].append(one_run(trees[side], extra))
        print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    old_wall = statistics.median(wall for wall, _ in runs["old"])
    new_wall = statistics.median(wall for wall, _ in runs["new"])
    old_cpu = statistics.median(cpu for _, cpu in runs["old"])
    new_cpu = statistics.median(cpu for _, cpu in runs["new"])
    print(f"{' '.join(extra)}: {args.rounds} interleaved rounds, medians (placements/s)")
    print(f"  wall: old {old_wall:,.0f}, new {new_wall:,.0f} (new/old {new_wall / old_wall:.2f})")
    print(f"  CPU:  old {old_cpu:,.0f}, new {new_cpu:,.0f} (new/old {new_cpu / old_cpu:.2f})")


if __name__ == "__main__":
    main()
