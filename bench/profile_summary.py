"""Summarise a py-spy ``--format raw`` recording: where the process spends its samples.

    python -m bench.profile_summary FILE [--top 25] [--match PATTERN]

Prints the share of samples that are idle (the event loop waiting in select/epoll), then
the top functions by inclusive share (any frame of the stack) and by self share (the
innermost frame), so that "what limits us" can be quoted with evidence.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

IDLE = re.compile(r"\b(select|poll|epoll_wait|_worker|wait)\b \(")


def summarise(path: Path, top: int = 25) -> str:
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = idle = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = stack.split(";")
        if "MainThread" not in frames[0] and not frames[0].startswith("process"):
            pass
        total += count
        leaf = frames[-1]
        if IDLE.search(leaf) and (
            "selectors" in leaf or "threading" in leaf or "thread.py" in leaf
        ):
            idle += count
            continue
        own[_short(leaf)] += count
        for frame in set(map(_short, frames)):
            inclusive[frame] += count
    busy = total - idle
    lines = [
        f"{path.name}: {total} samples, {idle / total:.0%} idle (waiting in select or a "
        f"worker thread's queue), {busy / total:.0%} busy",
        "",
        "inclusive (share of all samples):",
    ]
    lines += [f"  {n / total:6.1%}  {frame}" for frame, n in inclusive.most_common(top)]
    lines += ["", "self (innermost frame):"]
    lines += [f"  {n / total:6.1%}  {frame}" for frame, n in own.most_common(top)]
    return "\n".join(lines)


def _short(frame: str) -> str:
    # "function (path/to/module.py:123)" -> "function (module.py)"
    match = re.match(r"(.*) \((.*?)(?::\d+)?\)$", frame)
    if not match:
        return frame
    function, location = match.groups()
    parts = location.split("/")
    short = "/".join(parts[-2:]) if len(parts) > 1 else location
    return f"{function} ({short})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    print(summarise(args.file, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
