"""Two trees of the core, interleaved: ``core_bench.py`` run alternately on each.

For a change to the core that must not cost speed: each round runs
``bench/core_bench.py --repeat 1`` once per tree, in its own process with
that tree first on ``PYTHONPATH`` (so each imports its own ``coscheduler``),
alternating which tree goes first, so a noisy neighbour weighs on both
alike. Prints, per case, the median place time (wall and CPU) of each tree
and the ratio new / old.

    git archive <commit> coscheduler bench | tar -x -C /tmp/core-old
    .venv/bin/python bench/core_ab.py --old /tmp/core-old --new . --rounds 7
    .venv/bin/python bench/core_ab.py --old /tmp/core-old --new . --rounds 5 --queues 20
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

#: "<title>\n  bound ... place 12.3 ms (runs ...)" and "place CPU time 11.0 ms".
_CASE = re.compile(
    r"^(\S[^\n]*)\n  bound .*? place ([\d.]+) ms .*?place CPU time ([\d.]+) ms", re.M | re.S
)


def one_run(tree: Path, extra: list[str]) -> dict[str, tuple[float, float]]:
    """Place (wall, CPU) milliseconds per case of one core_bench run on ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    script = tree / "bench" / "core_bench.py"
    out = subprocess.run(
        [sys.executable, str(script), "--repeat", "1", *extra],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {title: (float(wall), float(cpu)) for title, wall, cpu in _CASE.findall(out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", type=Path, required=True)
    parser.add_argument("--new", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--strategy", default="MOST_ALLOCATED")
    parser.add_argument(
        "--queues", type=int, default=0, help="core_bench's cases without and with N queues"
    )
    args = parser.parse_args()
    extra = ["--strategy", args.strategy] + (["--queues", str(args.queues)] if args.queues else [])
    trees = {"old": args.old, "new": args.new}
    runs: dict[str, dict[str, list[tuple[float, float]]]] = {"old": {}, "new": {}}
    for round_ in range(args.rounds):
        order = ("old", "new") if round_ % 2 == 0 else ("new", "old")
        for side in order:
            for title, figures in one_run(trees[side], extra).items():
                runs[side].setdefault(title, []).append(figures)
        print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{' '.join(extra)}: {args.rounds} interleaved rounds, medians (ms)")
    for title in runs["old"]:
        old, new = runs["old"][title], runs["new"][title]
        old_wall = statistics.median(wall for wall, _ in old)
        new_wall = statistics.median(wall for wall, _ in new)
        old_cpu = statistics.median(cpu for _, cpu in old)
        new_cpu = statistics.median(cpu for _, cpu in new)
        print(
            f"{title}\n  place wall: old {old_wall:.1f}, new {new_wall:.1f} "
            f"(new/old {new_wall / old_wall:.2f}); place CPU: old {old_cpu:.1f}, "
            f"new {new_cpu:.1f} (new/old {new_cpu / old_cpu:.2f})"
        )


if __name__ == "__main__":
    main()
