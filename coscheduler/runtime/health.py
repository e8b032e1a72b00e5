"""What the probes say about a replica (``/healthz``, ``/readyz``): kept by app and the operator."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

__all__ = ["Health"]


@dataclasses.dataclass
class Health:
    """What ``/healthz`` and ``/readyz`` say: alive while no task has ended, ready once
    leading and synced (a standby is ready: it serves nothing but probes)."""

    leading: bool = False
    synced: bool = False
    tasks: list[asyncio.Task[Any]] = dataclasses.field(default_factory=list)

    def alive(self) -> bool:
        return not any(task.done() for task in self.tasks)

    def ready(self) -> bool:
        return self.synced or not self.leading
