"""The forest of queues: each queue's policy, its parent and children, and which are invalid.

A group draws from a *leaf*; a queue's parent names another queue. A queue
whose parents are missing or form a cycle is invalid (its groups wait, told
why). ``default`` exists without an object (open, no quota, every
namespace). :class:`~coscheduler.core.quota.Quotas` counts usage and demand
over this forest and answers the gate, admission and share.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from coscheduler.api.pod_topology import LabelSelector
from coscheduler.api.podgroup import DEFAULT_QUEUE
from coscheduler.api.reasons import Reason
from coscheduler.core.status import Code, Status

__all__ = ["IMPLICIT_DEFAULT", "Amounts", "QueuePolicy", "QueueTree", "add_amounts"]

Amounts = Mapping[str, int]


@dataclass(frozen=True, slots=True)
class QueuePolicy:
    """One queue as the core sees it (amounts in the scheduler's integers)."""

    name: str
    nominal: Mapping[str, int] = field(default_factory=dict)
    #: The cap per resource; a resource not here has none.
    max: Mapping[str, int] = field(default_factory=dict)
    #: How much of its unused nominal it lends, per resource; a resource not here is lent whole.
    lending_limit: Mapping[str, int] = field(default_factory=dict)
    weight: int = 1
    open: bool = True
    parent: str | None = None
    namespaces: frozenset[str] = frozenset()
    #: None: no selector; an empty selector selects every namespace.
    selector: LabelSelector | None = None
    #: False: reclaim takes nothing back from it, even what it borrowed (Volcano's
    #: ``reclaimable: false``).
    reclaimable: bool = True

    def allows(self, namespace: str, namespace_labels: Mapping[str, str]) -> bool:
        if self.name == DEFAULT_QUEUE and not self.namespaces and self.selector is None:
            return True
        if namespace in self.namespaces:
            return True
        return self.selector is not None and self.selector.matches(namespace_labels)

    def kept(self, resource: str) -> int:
        """The part of its nominal it never lends (nominal less the lending limit)."""
        limit = self.lending_limit.get(resource)
        if limit is None:
            return 0
        return max(0, self.nominal.get(resource, 0) - limit)


#: The queue every group uses unless it names another, present without an object.
IMPLICIT_DEFAULT: Final = QueuePolicy(DEFAULT_QUEUE)


def add_amounts(into: dict[str, int], amounts: Amounts, sign: int = 1) -> None:
    """Add ``amounts`` (times ``sign``) into ``into``, dropping what comes to zero."""
    for resource, amount in amounts.items():
        value = into.get(resource, 0) + sign * amount
        if value:
            into[resource] = value
        else:
            into.pop(resource, None)


class QueueTree:
    """The defined queues and their structure (module docstring)."""

    def __init__(self) -> None:
        self.queues: dict[str, QueuePolicy] = {}
        self.children: dict[str, list[str]] = {}
        #: Why a queue is invalid (its parents are missing or form a cycle).
        self.problems: dict[str, str] = {}

    def set_queues(self, queues: Iterable[QueuePolicy]) -> None:
        self.queues = {queue.name: queue for queue in queues}
        self.rebuild()

    def upsert_queue(self, queue: QueuePolicy) -> bool:
        """Add or change one queue; True if anything changed."""
        if self.queues.get(queue.name) == queue:
            return False
        self.queues[queue.name] = queue
        self.rebuild()
        return True

    def remove_queue(self, name: str) -> bool:
        if self.queues.pop(name, None) is None:
            return False
        self.rebuild()
        return True

    def policy(self, name: str) -> QueuePolicy | None:
        queue = self.queues.get(name)
        if queue is None and name == DEFAULT_QUEUE:
            return IMPLICIT_DEFAULT
        return queue

    def names(self) -> list[str]:
        """The defined queues (the implicit default is not one)."""
        return sorted(self.queues)

    def gate(self, name: str) -> Status | None:
        """Why no group may draw from queue ``name`` now, whatever its namespace (None: the
        namespace decides): missing, invalid, a parent, or Closed on the way up."""
        queue = self.policy(name)
        if queue is None:
            return Status(
                Code.WAITING,
                Reason.QUEUE_NOT_FOUND,
                f"queue {name} does not exist; create it or name another in spec.queue",
            )
        problem = self.problems.get(name)
        if problem is not None:
            return Status(Code.WAITING, Reason.QUEUE_INVALID, problem)
        if self.children.get(name):
            children = ", ".join(sorted(self.children[name]))
            return Status(
                Code.WAITING,
                Reason.QUEUE_INVALID,
                f"queue {name} has child queues ({children}); groups draw from a queue "
                "without children",
            )
        for level in self.chain(name):
            if not (self.policy(level) or IMPLICIT_DEFAULT).open:
                whose = "" if level == name else f" (parent of queue {name})"
                return Status(
                    Code.WAITING,
                    Reason.QUEUE_CLOSED,
                    f"queue {level}{whose} is Closed: it admits no new group",
                )
        return None

    def gate_blocked(self, name: str) -> bool:
        """True when no group may draw from the queue whatever its namespace."""
        if name in self.problems:
            return True
        return any(not (self.policy(level) or IMPLICIT_DEFAULT).open for level in self.chain(name))

    def chain(self, name: str) -> list[str]:
        """The queue and its parents, leaf first (valid queues only)."""
        chain = [name]
        queue = self.policy(name)
        while queue is not None and queue.parent is not None and len(chain) <= len(self.queues):
            chain.append(queue.parent)
            queue = self.policy(queue.parent)
        return chain

    def descendants(self, name: str) -> list[str]:
        found: list[str] = []
        stack = list(self.children.get(name, ()))
        while stack:
            child = stack.pop()
            if child in found:
                continue
            found.append(child)
            stack.extend(self.children.get(child, ()))
        return found

    def tops(self) -> list[str]:
        """Queues without a parent, the implicit default included."""
        tops = [name for name, queue in self.queues.items() if queue.parent is None]
        if DEFAULT_QUEUE not in self.queues:
            tops.append(DEFAULT_QUEUE)
        return tops

    def rebuild(self) -> None:
        """Children, and the queues whose parents are missing or form a cycle."""
        self.children = {}
        self.problems = {}
        for name, queue in self.queues.items():
            if queue.parent is not None:
                self.children.setdefault(queue.parent, []).append(name)
        for name in self.queues:
            seen = [name]
            queue = self.queues[name]
            while queue.parent is not None:
                if queue.parent in seen:
                    cycle = " -> ".join([*seen[seen.index(queue.parent) :], queue.parent])
                    self.problems[name] = f"queue {name}: its parents form a cycle ({cycle})"
                    break
                parent = self.queues.get(queue.parent)
                if parent is None:
                    self.problems[name] = (
                        f"queue {name}: its parent queue {queue.parent} does not exist"
                    )
                    break
                seen.append(queue.parent)
                queue = parent
