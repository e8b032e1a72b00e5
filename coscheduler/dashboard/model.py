"""What the dashboard shows, as plain JSON-ready dicts, read from the scheduler's own state.

Every figure comes from what ``coscheduler run`` already keeps: the read
model the controller reads (:class:`~coscheduler.runtime.readmodel.ReadModel`:
groups, members, queues, nodes) and the rows of ``/debug/queue``
(:class:`~coscheduler.runtime.queue_listing.QueueListing`: the line in the
order the next pass tries it). Nothing here asks the API server or writes.

* :meth:`PageData.overview`: the queue tree, the head of the line (cluster-wide
  and per queue) and the room (nodes by topology domain, the gangs on them).
* :meth:`PageData.gang`: one group's page: timeline, members, verdict.
* :class:`ShareHistory`: each queue's share sampled over the last hour, for
  the sparklines (kept here: the core keeps no history).
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Callable, Collection, Iterable, Mapping
from itertools import chain
from typing import Any, Final

from coscheduler.api.adapters.base import GroupObject
from coscheduler.api.node import NodeInfo
from coscheduler.api.podgroup import ConditionStatus, ConditionType
from coscheduler.api.quantity import format_quantity, format_resource_list
from coscheduler.api.queue import QueueSpec, QueueState
from coscheduler.core.fairness import entitlements, fair_shares
from coscheduler.core.group import GroupKey
from coscheduler.core.quota import QueuePolicy, QueueUsage
from coscheduler.runtime.events import Recorded
from coscheduler.runtime.queue_listing import QueueListing
from coscheduler.runtime.readmodel import ReadModel

__all__ = ["LINE_HEAD", "PageData", "ShareHistory", "refusals"]

#: Rows of the cluster-wide line sent to the page; the rest are counted.
LINE_HEAD: Final = 200
#: Rows of each queue's line sent to the page.
QUEUE_HEAD: Final = 20
#: Labels the room is grouped by when no gang asks for a topology.
WELL_KNOWN_DOMAINS: Final = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region")
#: ``3 Insufficient cpu`` in the core's ``0/N nodes are available: ...`` message.
_COUNTED = re.compile(r"(\d+) ([^,]+)")
_CPU: Final = "cpu"


def refusals(message: str | None) -> list[tuple[str, int]]:
    """The node histogram of a ``0/N nodes are available ...: 3 Insufficient cpu, ...``
    message or sentence (:mod:`coscheduler.core.messages`), largest first; empty when
    there is none."""
    _, available, after = (message or "").partition("nodes are available")
    if not available:
        return []
    _, _, counted = after.partition(": ")  # a topology's closest domain may come before
    counted = counted.split(" (after ", 1)[0].rstrip(".")
    return [(reason.strip(), int(count)) for count, reason in _COUNTED.findall(counted)]


class ShareHistory:
    """Each queue's share of the cluster's cpu, one sample per ``interval`` over an hour."""

    def __init__(self, interval_seconds: float = 30.0, span_seconds: float = 3600.0) -> None:
        self.interval = interval_seconds
        self._length = int(span_seconds // interval_seconds)
        self._samples: dict[str, deque[tuple[float, float]]] = {}
        self._last: float | None = None

    def add(self, now: float, shares: Mapping[str, float]) -> None:
        """Record ``shares`` unless the last sample is younger than the interval."""
        if self._last is not None and now - self._last < self.interval:
            return
        self._last = now
        for name, share in shares.items():
            self._samples.setdefault(name, deque(maxlen=self._length)).append((now, share))
        for name in self._samples.keys() - shares.keys():
            del self._samples[name]

    def of(self, name: str) -> list[list[float]]:
        """``[[times...], [shares...]]``: the series as the charting library takes it."""
        samples = self._samples.get(name, ())
        return [[t for t, _ in samples], [s for _, s in samples]]


class PageData:
    """The page's data (module docstring); ``clock`` is wall time in seconds."""

    def __init__(
        self,
        view: ReadModel,
        listing: QueueListing,
        *,
        clock: Callable[[], float],
        role: Callable[[], str],
        history: ShareHistory | None = None,
        events: Callable[[Collection[str]], list[Recorded]] = lambda _uids: [],
    ) -> None:
        self._view = view
        self._listing = listing
        self._clock = clock
        self._role = role
        self.history = history or ShareHistory()
        #: The event series this process wrote about some objects (by uid).
        self._events = events

    def overview(self) -> dict[str, Any]:
        now = self._clock()
        rows = self._listing.rows() or []  # the page's listing is not gated on leading
        head, by_queue = rows[:LINE_HEAD], _heads_by_queue(rows)
        for row in {id(row): row for row in [*head, *chain(*by_queue.values())]}.values():
            self._enrich(row)  # only the rows sent: the line may be 50,000 long
        return {
            "role": self._role(),
            "queues": self._queues(rows, now),
            "line": {"total": len(rows), "head": head, "byQueue": by_queue},
            "room": self._room(),
        }

    # -- the line -------------------------------------------------------------

    def _enrich(self, row: dict[str, Any]) -> dict[str, Any]:
        """A row of ``/debug/queue`` with what the page adds: age, size, refusals, plan."""
        key = GroupKey(row["namespace"], row["name"], row["kind"])
        members = self._view.members(key)
        group = self._view.group(key)
        if row["message"] is None and group is not None:
            # A standby makes no attempt: the reason the leader wrote into status.
            said = _waiting_condition(group)
            if said is not None:
                row["reason"], row["message"] = said
        created = min((pod.created for pod in members), default=None)
        if group is not None and group.creation_timestamp is not None:
            created = group.creation_timestamp.timestamp()
        row["created"] = created
        row["size"] = (
            group.spec.min_member if group is not None and group.spec.min_member else len(members)
        )
        row["refusals"] = refusals(row["message"])
        row["plan"] = self._view.preemption_plan(key)
        return row

    # -- queues ---------------------------------------------------------------

    def _queues(self, rows: list[dict[str, Any]], now: float) -> list[dict[str, Any]]:
        """Every Queue object, and the queues groups name without one (the implicit
        ``default``, or a queue not made yet), as the core holds them."""
        objects = self._view.queues()
        pending = Counter(row["queue"] for row in rows)
        names = sorted(objects.keys() | pending.keys())
        policies = [self._view.queue_policy(name) for name in names]
        cpu = self._view.capacity().get(_CPU, 0)
        usages = {name: self._view.queue_usage(name) for name in names}
        shares = _cpu_shares(usages, cpu)
        specs = {name: objects[name].spec if name in objects else QueueSpec() for name in names}
        fair = fair_shares(
            entitlements([p for p in policies if p is not None], names, cpu),
            [name in pending and specs[name].state is QueueState.OPEN for name in names],
            shares,
        )
        self.history.add(now, dict(zip(names, shares, strict=True)))
        found = []
        for name, policy, share, fair_share in zip(names, policies, shares, fair, strict=True):
            spec, usage = specs[name], usages[name]
            found.append(
                {
                    "name": name,
                    "object": name in objects,
                    "parent": spec.parent,
                    "weight": spec.weight,
                    "state": spec.state.value,
                    "problem": usage.problem,
                    "nominal": format_resource_list(usage.nominal),
                    "allocated": format_resource_list(usage.allocated),
                    "borrowed": format_resource_list(usage.borrowed),
                    "lent": format_resource_list(_lent(policy, usages, specs)),
                    "recent": format_resource_list(usage.recent),
                    "cpuShare": share,
                    "fairShare": fair_share,
                    "pending": pending.get(name, 0),
                    "history": self.history.of(name),
                }
            )
        return found

    def sample(self) -> None:
        """Sample the queues' shares for the sparklines (while no page asks for more)."""
        names = list(self._view.queues())
        usages = {name: self._view.queue_usage(name) for name in names}
        self.history.add(
            self._clock(),
            dict(zip(names, _cpu_shares(usages, self._view.capacity().get(_CPU, 0)), strict=True)),
        )

    # -- the room -------------------------------------------------------------

    def _room(self) -> dict[str, Any]:
        """Nodes grouped by each topology key gangs ask for (else the well-known ones);
        per node its free capacity and the gangs on it, per domain the totals."""
        nodes = self._view.nodes()
        asked = _asked_keys(self._view.groups())
        keys = asked or [k for k in WELL_KNOWN_DOMAINS if any(k in n.labels for n in nodes)]
        allocations = {node.name: self._view.allocated(node.name) for node in nodes}
        devices = self._view.devices_by_class()
        # A node's free amounts are sent in this order, as a list.
        resources = sorted({r for node in nodes for r in node.allocatable} - {"pods"})
        gangs: dict[GroupKey, int] = {}
        rows = []
        for node in nodes:
            allocated = allocations[node.name]
            free = {
                resource: max(0, amount - allocated.get(resource, 0))
                for resource, amount in node.allocatable.items()
                if resource != "pods"
            }
            used = max(
                (
                    allocated.get(resource, 0) / amount
                    for resource, amount in node.allocatable.items()
                    if amount and resource != "pods"
                ),
                default=0.0,
            )
            on = sorted(
                {
                    gangs.setdefault(GroupKey.of_pod(pod), len(gangs))
                    for pod in self._view.pods_on(node.name)
                }
            )
            # Compact: 5,000 of these go to the page; what is empty or false is left out.
            row: dict[str, Any] = {
                "name": node.name,
                "used": round(used, 2),
                "free": [format_quantity(r, free[r]) if r in free else None for r in resources],
            }
            if on:
                row["gangs"] = on
            if node.unschedulable:
                row["cordoned"] = True
            if node.name in devices:
                row["devices"] = _free_of_total(devices[node.name])
            rows.append(row)
        domains = [_domain_totals(nodes, allocations, devices, key) for key in keys]
        # Each node's domain per key, as the index of its value in that key's totals.
        for index, key in enumerate(keys):
            places = {value["value"]: place for place, value in enumerate(domains[index]["values"])}
            for node, row in zip(nodes, rows, strict=True):
                row.setdefault("domains", []).append(places[node.labels.get(key, "")])
        return {
            "keys": keys,
            "resources": resources,
            "nodes": rows,
            "gangs": [[key.namespace, key.name, key.kind] for key in gangs],
            "domains": domains,
            "sharedDevices": _free_of_total(devices.get(None, {})),
        }

    # -- one gang -------------------------------------------------------------

    def gang(self, namespace: str, name: str) -> dict[str, Any] | None:
        """One group's page, or None when nothing of that name is known."""
        listed = [
            row
            for row in self._listing.rows(namespace=namespace) or []
            if row["name"] == name and row["kind"] != "Pod"
        ]
        group_key = next(
            (k for k in self._view.group_keys() if k.namespace == namespace and k.name == name),
            None,
        )
        key = (
            GroupKey(namespace, name, listed[0]["kind"]) if listed
            else group_key or GroupKey(namespace, name)
        )  # fmt: skip
        group = self._view.group(key)
        members = self._view.members(key)
        if group is None and not members:
            return None
        now = self._clock()
        timeline: list[dict[str, Any]] = []
        if group is not None and group.creation_timestamp is not None:
            timeline.append({"at": group.creation_timestamp.timestamp(), "what": "created"})
        if group is not None:
            for condition in group.status.conditions:
                if condition.last_transition_time is not None:
                    timeline.append(
                        {
                            "at": condition.last_transition_time.timestamp(),
                            "what": f"{condition.type}={condition.status.value}",
                            "reason": condition.reason,
                            "message": condition.message,
                        }
                    )
        uids = {pod.uid for pod in members} | ({group.uid} if group and group.uid else set())
        timeline.extend(_events(self._events(uids), group.uid if group else None))
        timeline.sort(key=lambda item: item["at"])
        verdict = self._view.verdict(key)
        return {
            "at": now,
            # Only a leader writes events: on a standby or viewer the timeline has none.
            "role": self._role(),
            "namespace": namespace,
            "name": name,
            "kind": key.kind,
            "phase": group.status.phase.value if group is not None else None,
            "minMember": group.spec.min_member if group is not None else None,
            "queue": group.spec.queue if group is not None else None,
            "line": self._enrich(dict(listed[0])) if listed else None,
            "verdict": None if verdict is None else {
                "reason": verdict.reason.value,
                "message": verdict.message,
                "refusals": refusals(verdict.message),
            },
            "timeline": timeline,
            "members": [
                {
                    "name": pod.name,
                    "role": pod.role,
                    "phase": pod.phase,
                    "node": pod.node_name,
                    "requests": format_resource_list(
                        {r: a for r, a in pod.requests.items() if r != "pods"}
                    ),
                }
                for pod in sorted(members, key=lambda pod: pod.name)
            ],
        }  # fmt: skip


def _events(recorded: list[Recorded], group_uid: str | None) -> list[dict[str, Any]]:
    """The series written about the group and its members, the members' alike ones as one
    (a gang of 100 has 100 ``FailedScheduling`` series saying the same)."""
    merged: dict[tuple[bool, str, str], dict[str, Any]] = {}
    for event in recorded:
        on_group = event.uid == group_uid
        item = merged.setdefault(
            (on_group, event.reason, event.message),
            {"at": 0.0, "what": f"{event.kind} event", "reason": event.reason,
             "message": event.message, "count": 0, "objects": 0, "onGroup": on_group},
        )  # fmt: skip
        item["at"] = max(item["at"], event.last_written)
        item["count"] += event.count
        item["objects"] += 1
    return list(merged.values())


def _waiting_condition(group: GroupObject) -> tuple[str, str] | None:
    """The reason and message of the group's ``Unschedulable=True`` condition, if it has one."""
    condition = group.status.condition(ConditionType.UNSCHEDULABLE)
    if condition is None or condition.status is not ConditionStatus.TRUE or not condition.reason:
        return None
    return condition.reason, condition.message or ""


def _cpu_shares(usages: Mapping[str, QueueUsage], cpu: int) -> list[float]:
    """Each queue's cpu in use over the cluster's (the simulator's share, for fairness)."""
    return [usage.allocated.get(_CPU, 0) / cpu if cpu else 0.0 for usage in usages.values()]


def _heads_by_queue(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    heads: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        head = heads.setdefault(row["queue"], [])
        if len(head) < QUEUE_HEAD:
            head.append(row)
    return heads


def _lent(
    policy: QueuePolicy | None, usages: Mapping[str, QueueUsage], specs: Mapping[str, QueueSpec]
) -> dict[str, int]:
    """What others use of the queue's unused nominal: its idle nominal, up to its lending
    limit, as far as its siblings borrow beyond their own."""
    if policy is None:
        return {}
    siblings = [n for n, spec in specs.items() if spec.parent == policy.parent and n != policy.name]
    lent: dict[str, int] = {}
    for resource, nominal in policy.nominal.items():
        idle = max(0, nominal - usages[policy.name].allocated.get(resource, 0))
        idle = min(idle, policy.lending_limit.get(resource, idle))
        borrowed = sum(usages[n].borrowed.get(resource, 0) for n in siblings)
        if min(idle, borrowed):
            lent[resource] = min(idle, borrowed)
    return lent


def _asked_keys(groups: Iterable[GroupObject]) -> list[str]:
    """The topology keys gangs ask for, the most asked first."""
    counts: dict[str, int] = {}
    for group in groups:
        topology = group.spec.topology
        if topology is None:
            continue
        for key in [
            *(topology.preferred or ()),
            *([topology.required] if topology.required else []),
        ]:
            counts[key] = counts.get(key, 0) + 1
    return sorted(counts, key=lambda key: (-counts[key], key))


def _free_of_total(by_class: Mapping[str, tuple[int, int]]) -> dict[str, list[int]]:
    """``{class: [free, devices]}``, classes in name order."""
    return {name: [free, total] for name, (total, free) in sorted(by_class.items())}


def _domain_totals(
    nodes: list[NodeInfo],
    allocations: Mapping[str, Mapping[str, int]],
    devices: Mapping[str | None, Mapping[str, tuple[int, int]]],
    key: str,
) -> dict[str, Any]:
    """Per value of ``key``: node count, allocatable and free capacity per resource, and
    devices and free ones per device class (of the devices local to its nodes)."""
    domains: dict[str, dict[str, Any]] = {}
    for node in nodes:
        value = node.labels.get(key, "")
        totals = domains.setdefault(
            value, {"nodes": 0, "allocatable": {}, "free": {}, "devices": {}}
        )
        totals["nodes"] += 1
        for name, (count, free_devices) in devices.get(node.name, {}).items():
            had, had_free = totals["devices"].get(name, (0, 0))
            totals["devices"][name] = (had + count, had_free + free_devices)
        allocated = allocations[node.name]
        for resource, amount in node.allocatable.items():
            if resource == "pods":
                continue
            totals["allocatable"][resource] = totals["allocatable"].get(resource, 0) + amount
            free = max(0, amount - allocated.get(resource, 0))
            totals["free"][resource] = totals["free"].get(resource, 0) + free
    return {
        "key": key,
        "values": [
            {
                "value": value,
                "nodes": totals["nodes"],
                "allocatable": format_resource_list(totals["allocatable"]),
                "free": format_resource_list(totals["free"]),
                "devices": _free_of_total(totals["devices"]),
            }
            for value, totals in sorted(domains.items())
        ],
    }
