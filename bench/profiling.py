"""py-spy on ours during a throughput trial, when the run asks for it (``--profile DIR``)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from bench.peers import Peer, PeerContext


async def start_profiler(ctx: PeerContext, peer: Peer) -> subprocess.Popen[bytes] | None:
    """py-spy on ours for the scheduling phase, when the run asks for it (--profile DIR)."""
    if ctx.profile_dir is None or peer.name != "ours" or not peer.processes:
        return None
    import shutil
    import sys

    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    ctx.profile_dir.mkdir(parents=True, exist_ok=True)
    out = ctx.profile_dir / f"{ctx.label}.txt"
    # py-spy cannot attach before the interpreter is up ("Failed to find python version").
    await asyncio.sleep(0.7)
    with (ctx.profile_dir / f"{ctx.label}.py-spy.log").open("w") as log:
        return subprocess.Popen(  # noqa: ASYNC220 - starting it is instant
            [spy, "record", "--pid", str(peer.processes[0].record.pid), "--rate", "100",
             "--format", "raw", "--output", str(out), "--nonblocking"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip


def stop_profiler(profiler: subprocess.Popen[bytes] | None) -> None:
    if profiler is None:
        return
    import signal

    profiler.send_signal(signal.SIGINT)
    try:
        profiler.wait(timeout=30)
    except subprocess.TimeoutExpired:
        profiler.kill()
        profiler.wait()
