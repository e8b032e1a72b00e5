"""The start-up line: when each phase of start-up ended, in seconds since the process began.

A scheduler that restarts with a backlog is judged by how soon it binds its
first pod. One ``started`` log line, written when the first
Binding is answered, gives the end of each phase, all measured from the
process's own start (the kernel's, read from ``/proc/self/stat``, so the
interpreter's start and every import count):

* ``imports``: the program imported and logging set up;
* ``client``: the kubeconfig read and the API client made;
* ``built``: the deciding side (:class:`~coscheduler.operator.Operator`: the
  core, the handlers, the controller) built; the lists leave;
* ``leading``: the Lease won (only with leader election);
* ``lists``: per kind, when its first list was applied (kinds listed
  concurrently overlap: each has its own end);
* ``listed``: every kind the loop waits for listed, the loop starts;
* ``first_decision``: the core's first decision that binds;
* ``first_binding``: the first Binding answered 201;
* ``after_leading`` (only with leader election): ``first_binding`` less
  ``leading``, a takeover's time to its first Binding (a warm standby has
  listed before it leads).

Where ``/proc`` cannot say (not Linux), the clock starts when this object is
made and ``origin`` says ``"startup"`` instead of ``"process"``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import structlog

__all__ = ["Startup", "process_age"]

log = structlog.get_logger(__name__)


def process_age() -> float | None:
    """Seconds since this process started, from the kernel; None where it cannot say."""
    try:
        stat = Path("/proc/self/stat").read_text()
        # Fields after the command name (which may hold spaces): state is field 3,
        # starttime field 22, in clock ticks since boot.
        ticks = int(stat.rpartition(")")[2].split()[19])
        return time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class Startup:
    """Collects the phases' end times; logs them once, at the first Binding."""

    def __init__(
        self, *, age: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._clock = clock
        if age is None:
            age = process_age()
        self.origin = "startup" if age is None else "process"
        self._zero = clock() - (age or 0.0)
        self.phases: dict[str, float] = {}
        self.lists: dict[str, float] = {}
        self.logged = False

    def _now(self) -> float:
        return round(self._clock() - self._zero, 3)

    def mark(self, phase: str) -> None:
        """``phase`` ended now (the first time only)."""
        self.phases.setdefault(phase, self._now())

    def listed(self, kind: str) -> None:
        """``kind``'s first list was applied now."""
        self.lists.setdefault(kind, self._now())

    def decided(self) -> None:
        self.mark("first_decision")

    def bound(self) -> None:
        """A Binding was answered: the first one ends start-up, and the line is written."""
        if self.logged:
            return
        self.mark("first_binding")
        self.logged = True
        if "leading" in self.phases:
            lead = self.phases["first_binding"] - self.phases["leading"]
            self.phases["after_leading"] = round(lead, 3)
        log.info("started", origin=self.origin, **self.phases, lists=self.lists)
