"""The scheduler's reads: what the runtime and the dashboard may read of the core.

Callers outside the core read these, never the scheduler's ``snapshot``,
``queue``, ``quotas``, ``volumes`` or ``preemptions`` (those attributes stay
public only until the runtime's last callers move here). :class:`SchedulerReads`
is a base of :class:`~coscheduler.core.scheduler.Scheduler`, which sets them;
nothing here writes.
"""

from __future__ import annotations

from coscheduler.api.node import NodeInfo
from coscheduler.core.group import GroupKey
from coscheduler.core.positions import Position, positions
from coscheduler.core.preemption import Hold, Preemptions, PreemptionSettings
from coscheduler.core.queue import GroupQueue
from coscheduler.core.snapshot import Snapshot
from coscheduler.core.volumes import VolumeIndex

__all__ = ["SchedulerReads"]


class SchedulerReads:
    """What the runtime and the simulator read of the core; nothing here writes."""

    snapshot: Snapshot
    queue: GroupQueue
    volumes: VolumeIndex
    preemptions: Preemptions

    def node(self, name: str) -> NodeInfo | None:
        return self.snapshot.node(name)

    def node_names(self) -> list[str]:
        """Every node known, by name."""
        return [node.name for node in self.snapshot.nodes()]

    def namespaces(self) -> list[str]:
        """Every namespace whose labels are known."""
        return list(self.snapshot.topology.namespace_labels)

    def queue_sizes(self) -> dict[str, int]:
        """Groups per pool of the queue (active, backoff, unschedulable)."""
        return self.queue.sizes()

    def queue_positions(self) -> dict[GroupKey, Position]:
        """Where each pending group stands in its queue and in the cluster
        (:mod:`~coscheduler.core.positions`)."""
        return positions(self.queue.entries(), self.queue.share)

    def queue_pool(self, key: GroupKey) -> str | None:
        """Which pool of the queue holds the group (``active``, ``backoff``, ...), if any."""
        return self.queue.pool(key)

    def queued(self) -> int:
        """Groups in the queue, any pool."""
        return len(self.queue)

    def ready_at(self) -> float | None:
        """When the next backed-off or waiting group is ready again (for a timer)."""
        return self.queue.peek_ready()

    @property
    def preemption_settings(self) -> PreemptionSettings:
        return self.preemptions.settings

    def hold(self, key: GroupKey) -> Hold | None:
        """The room held for a preemptor while its victims go, if any."""
        return self.preemptions.hold(key)
