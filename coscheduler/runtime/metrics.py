"""Prometheus metrics of the scheduler, on a registry of their own.

Names follow Prometheus conventions: a ``coscheduler_`` prefix, base units
(seconds), ``_total`` for counters. A registry per process (not the global
one) keeps tests and several instances in one interpreter apart.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["ConnectionCounts", "Metrics", "members_class"]

# From 1 ms to about 5 minutes: binding a pod is fast, a gang may wait long.
_LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
)

# Decisions take from tenths of a millisecond to seconds for the largest gangs on the
# largest clusters: finer than the latency buckets, so that a p99 can be read from them.
_PLANNER_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.0075,
    0.01,
    0.015,
    0.025,
    0.035,
    0.05,
    0.075,
    0.1,
    0.15,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
)

#: The upper bounds of the planner histogram's ``members`` label.
_MEMBER_CLASSES = (1, 8, 64, 512)


def members_class(members: int) -> str:
    """The ``members`` label of a group of this many members: ``1``, ``2-8``... ``513+``."""
    low = 1
    for high in _MEMBER_CLASSES:
        if members <= high:
            return str(high) if low == high else f"{low}-{high}"
        low = high + 1
    return f"{low}+"


class ConnectionCounts(Protocol):
    """What a connection pool counts (:class:`coscheduler.runtime.http1.Http1Pool`)."""

    @property
    def opened(self) -> int: ...
    @property
    def open_now(self) -> int: ...


class _Connections(Collector):
    """The API client's connections, read from its pools when scraped (no cost per request)."""

    def __init__(self, pools: Mapping[str, ConnectionCounts]) -> None:
        self._pools = pools

    def collect(self) -> Iterator[Metric]:
        opened = CounterMetricFamily(
            "coscheduler_client_connections_opened",
            "Connections opened to the API server (each a TCP and a TLS handshake), by pool.",
            labels=["pool"],
        )
        open_now = GaugeMetricFamily(
            "coscheduler_client_connections",
            "Connections to the API server open now, by pool.",
            labels=["pool"],
        )
        for name, pool in self._pools.items():
            opened.add_metric([name], pool.opened)
            open_now.add_metric([name], pool.open_now)
        yield from (opened, open_now)


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.scheduling_attempts = Counter(
            "coscheduler_scheduling_attempts",
            "Groups tried by the planner, by result.",
            ["result"],
            registry=r,
        )
        self.pods_bound = Counter("coscheduler_pods_bound", "Pods bound to nodes.", registry=r)
        self.bind_errors = Counter(
            "coscheduler_bind_errors", "Bindings that failed, by outcome.", ["outcome"], registry=r
        )
        self.scheduling_latency = _seconds(
            r,
            "coscheduler_e2e_scheduling_duration_seconds",
            "From a pod entering the queue to its Binding being accepted.",
        )
        self.gang_wait = _seconds(
            r,
            "coscheduler_gang_wait_seconds",
            "From a group's first attempt to minMember of its members bound.",
        )
        self.planner_duration = Histogram(
            "coscheduler_planner_duration_seconds",
            "Time the pure planner spends deciding one group, by the group's members "
            "(1, 2-8, 9-64, 65-512, 513+).",
            ["members"],
            buckets=_PLANNER_BUCKETS,
            registry=r,
        )
        self.queue_length = Gauge(
            "coscheduler_queue_groups", "Groups waiting, by pool.", ["pool"], registry=r
        )
        self.podgroups = Gauge(
            "coscheduler_podgroups", "PodGroups by phase.", ["phase"], registry=r
        )
        self.events_dropped = Counter(
            "coscheduler_events_dropped",
            "Events not written because the queue was full.",
            registry=r,
        )
        self.preemption_attempts = Counter(
            "coscheduler_preemption_attempts",
            "Victim searches for groups that did not fit.",
            registry=r,
        )
        self.preemption_plans = Counter(
            "coscheduler_preemption_plans",
            "Victim searches by outcome: a plan found, or none.",
            ["outcome"],
            registry=r,
        )
        self.preemption_evicted_pods = Counter(
            "coscheduler_preemption_evicted_pods", "Pods evicted to place a gang.", registry=r
        )
        self.preemption_evicted_groups = Counter(
            "coscheduler_preemption_evicted_groups",
            "PodGroups that lost members (whole, or above minMember) to place a gang.",
            registry=r,
        )
        self.preemption_to_placed = _seconds(
            r,
            "coscheduler_preemption_to_placed_seconds",
            "From a preemption plan to its preemptor placed (its bindings sent).",
        )
        self.leader = Gauge(
            "coscheduler_leader", "1 while this replica holds the Lease.", registry=r
        )
        self.queue_allocated = Gauge(
            "coscheduler_queue_allocated",
            "Requests of the bound, unfinished pods of a queue's groups (cpu in cores, "
            "memory in bytes), children included.",
            ["queue", "resource"],
            registry=r,
        )
        self.queue_nominal = Gauge(
            "coscheduler_queue_nominal",
            "A queue's nominal quota, in the units of coscheduler_queue_allocated.",
            ["queue", "resource"],
            registry=r,
        )
        self.queue_share = Gauge(
            "coscheduler_queue_dominant_share",
            "A queue's dominant share: its largest allocated/nominal ratio.",
            ["queue"],
            registry=r,
        )
        self.queue_pending_groups = Gauge(
            "coscheduler_queue_pending_groups",
            "Groups of a queue with members waiting and none bound.",
            ["queue"],
            registry=r,
        )
        self.queue_admitted_groups = Counter(
            "coscheduler_queue_admitted_groups",
            "Groups admitted (minMember bound) from a queue.",
            ["queue"],
            registry=r,
        )

    def count_connections(self, pools: Mapping[str, ConnectionCounts]) -> None:
        """Export the API client's connection counts, by pool (writes, reads)."""
        self.registry.register(_Connections(pools))


def _seconds(registry: CollectorRegistry, name: str, documentation: str) -> Histogram:
    """A histogram of durations, on the buckets every latency of ours uses."""
    return Histogram(name, documentation, buckets=_LATENCY_BUCKETS, registry=registry)
