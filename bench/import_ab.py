"""CPU and wall seconds of one import statement, two checkouts side by side (issue #28).

    .venv/bin/python -m bench.import_ab --tree main=/work/main --tree this=. [--runs 9]
        [--statement "import coscheduler.app"] [--after "import coscheduler.cli, coscheduler.app"]

Each run is a fresh interpreter of the runtime venv (``bench/runtime_venv.py``, as
ours runs in the image) with the checkout on ``PYTHONPATH``; the checkouts alternate,
the order reversed every other run; medians are printed. With ``--after``, only the
statement is timed, inside the interpreter once ``--after`` has run (the deciding
side's import after the start path's, say): the interpreter's own start and the
imports before it are not in its CPU, so a change of a few milliseconds shows.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import time
from pathlib import Path

from bench.runtime_venv import runtime_python


def _timed_after(python: Path, tree: Path, after: str, statement: str) -> tuple[float, float]:
    code = (
        f"{after}\nimport time\ncpu, wall = time.process_time(), time.perf_counter()\n"
        f"{statement}\nprint(time.perf_counter() - wall, time.process_time() - cpu)"
    )
    out = subprocess.run(
        [str(python), "-P", "-c", code],
        env={**os.environ, "PYTHONPATH": str(tree)},
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[-2]), float(out[-1])


def _timed(python: Path, tree: Path, statement: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [str(python), "-P", "-c", statement],
        env={**os.environ, "PYTHONPATH": str(tree)},
        check=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--statement", default="import coscheduler.app")
    parser.add_argument("--after", help="run first, untimed, in the same interpreter")
    options = parser.parse_args()
    trees = {name: Path(path).resolve() for name, path in (t.split("=", 1) for t in options.tree)}
    python = runtime_python()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for run in range(options.runs):
        names = list(trees) if run % 2 == 0 else list(trees)[::-1]
        for name in names:
            if options.after:
                sample = _timed_after(python, trees[name], options.after, options.statement)
            else:
                sample = _timed(python, trees[name], options.statement)
            samples[name].append(sample)
    after = f" after {options.after!r}" if options.after else ""
    print(
        f"{options.statement!r}{after}, {options.runs} runs, load average {os.getloadavg()[0]:.2f}"
    )
    for name, values in samples.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        print(f"{name:>10}: {wall:.3f} s wall, {cpu:.3f} CPU-s")


if __name__ == "__main__":
    main()
