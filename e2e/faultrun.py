"""The fault kinds, as the short tests and the soak inject them, and a sampler of invariants.

One name per kind of fault. Proxy faults are rule sets of
:mod:`e2e.faultproxy` (hitting the scheduler's own requests); control-plane
faults act on the processes of :class:`e2e.controlplane.Cluster` (every
client of the cluster sees them: the scheduler, the controllers, KWOK).
"""

from __future__ import annotations

import http.client
import random
import time
from collections.abc import Callable

from e2e.api import ApiError
from e2e.controlplane import Cluster
from e2e.faultproxy import Rule
from e2e.invariants import InvariantChecker, Violation
from e2e.processes import StartupError

_WRITES = ("create", "update", "patch", "delete")

PROXY_FAULTS: dict[str, tuple[Rule, ...]] = {
    # 429 (with Retry-After), 500 and 503 on a share of every kind of request.
    "status": (
        Rule(kind="status", share=0.15, status=429),
        Rule(kind="status", share=0.15, status=500),
        Rule(kind="status", share=0.15, status=503),
    ),
    # Writes that take effect while the scheduler hears 500: Bindings, status, Lease.
    "lost_answer": (Rule(kind="lost_answer", share=0.3, verbs=_WRITES),),
    "reset": (Rule(kind="reset", share=0.2),),
    "delay": (Rule(kind="delay", share=0.5, seconds=1.5),),
    # Longer than the tests' request timeout: the client gives up, the proxy closes later.
    "stall": (Rule(kind="stall", share=0.1, seconds=8.0, max_count=6),),
    "cut_watch": (Rule(kind="cut_watch", share=0.6, verbs=("watch",), events=3),),
    "gone": (Rule(kind="gone", share=0.5, verbs=("watch",), max_count=12),),
}

CONTROL_PLANE_FAULTS = ("apiserver_restart", "etcd_restart", "apiserver_pause")

ALL_FAULTS = (*PROXY_FAULTS, *CONTROL_PLANE_FAULTS)


def control_plane_fault(cluster: Cluster, kind: str, rng: random.Random) -> str:
    """Do one control-plane fault now (it blocks while it lasts); say what was done."""
    if kind == "apiserver_restart":
        cluster.restart("kube-apiserver")
        return "kube-apiserver restarted"
    if kind == "etcd_restart":
        down = round(rng.uniform(1.0, 4.0), 1)
        cluster.restart("etcd", down_seconds=down)
        return f"etcd stopped for {down}s and started"
    if kind == "apiserver_pause":
        paused = round(rng.uniform(2.0, 6.0), 1)
        cluster.pause("kube-apiserver", paused)
        return f"kube-apiserver paused (SIGSTOP) for {paused}s"
    raise ValueError(f"unknown control-plane fault {kind!r}")


def sample(checker: InvariantChecker) -> list[Violation]:
    """One look; a look the API server cannot answer (it is down) is skipped, not failed."""
    try:
        return checker.sample()
    except (ApiError, OSError, http.client.HTTPException, StartupError):
        return []


def sample_for(
    checker: InvariantChecker,
    seconds: float,
    *,
    interval: float = 1.0,
    also: Callable[[], None] | None = None,
) -> None:
    """Sample every ``interval`` for ``seconds`` (calling ``also`` each time, e.g. for RSS)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sample(checker)
        if also is not None:
            also()
        time.sleep(interval)
