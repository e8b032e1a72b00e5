"""Queues: who may draw from which share of the cluster, and in what order.

A group draws from one queue (its ``spec.queue``; a lone pod's queue label),
a *leaf* of a forest of queues. :class:`Quotas` keeps each queue's policy,
the requests of the bound, unfinished pods charged to it (*usage*) and of the
pending members of the groups waiting in it (*demand*), and answers three
questions, each pure:

1. :meth:`Quotas.gate`: may the group be tried at all? Its queue must exist,
   be a valid leaf (parents present, no cycle, no children), be Open and
   allow the group's namespace. Otherwise it waits (``Code.WAITING``): only a
   change to the queue helps.
2. :meth:`Quotas.admit`: may the group take ``need`` more? (Asked for the
   whole gang at once: never half a gang admitted by quota.) In order:

   a. no queue on the way up (the leaf, its parent, ...) goes over its max;
   b. walking up from the leaf, the first level where the request fits the
      queue's nominal admits it (entitled); else, where the parent's nominal
      holds it beside what the siblings use or *claim* (their unused nominal,
      up to their eligible demand), it is borrowed from the siblings;
   c. at the top it is borrowed from idle capacity: the free capacity left
      after the placement must still cover the claims of every other top
      queue. That is work conservation: capacity no queue is entitled to now
      never stays idle while a group under its max fits it.
3. :meth:`Quotas.share`: which queue goes next. Queues within their nominal
   first (the furthest below it first), then borrowers by their largest
   borrowed amount over the capacity no nominal covers, divided by the
   weight: every queue gets its entitlement before anyone borrows, and
   backlogged borrowers converge to shares of the idle capacity in
   proportion to their weights. With a usage half-life, the queue's recent
   usage (:mod:`~coscheduler.core.recent_usage`) counts beside its usage
   here, and only here: a queue that ran big jobs lately goes after one
   that did not; admission and reclaim never look at the past.

A queue's ``lending_limit`` caps what others may use of its unused nominal:
the rest (nominal less the limit) is *kept*. Kept room counts as claimed by
the queue (in its siblings' accounting and at the top), and no group of
another queue is admitted, entitled or borrowing, if the free capacity left
after it would not cover what the queues outside its chain keep unused. So
borrowers never hold a queue's kept room, and what a queue lent comes back
by reclaim.

A queue named ``default`` exists without an object (open, no quota, every
namespace): a cluster with no Queue objects schedules exactly as before.
The forest itself (policies, parents and children, invalid queues) is
:class:`~coscheduler.core.queue_tree.QueueTree`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from coscheduler.api.quantity import format_quantity
from coscheduler.api.reasons import Reason
from coscheduler.api.requests import POD_RESOURCE
from coscheduler.core.queue_tree import (
    IMPLICIT_DEFAULT,
    Amounts,
    QueuePolicy,
    QueueTree,
    add_amounts,
)
from coscheduler.core.recent_usage import RecentUsage
from coscheduler.core.status import Code, Status

__all__ = ["IMPLICIT_DEFAULT", "QueuePolicy", "QueueUsage", "Quotas", "add_amounts"]

#: Resources a share is not measured in unless the queue has a nominal of them.
_UNSHARED: Final = frozenset({POD_RESOURCE, "ephemeral-storage"})


@dataclass(frozen=True, slots=True)
class QueueUsage:
    """A queue's numbers, for its status and metrics."""

    allocated: dict[str, int]
    borrowed: dict[str, int]
    nominal: dict[str, int]
    max: dict[str, int]
    share: float
    #: Why groups cannot draw from it, if they cannot (a person's words).
    problem: str | None
    lending_limit: dict[str, int] = field(default_factory=dict)
    #: Usage averaged over the recent past (empty while the half-life is 0).
    recent: dict[str, int] = field(default_factory=dict)


class Quotas:
    """Queue policies, usage and demand; the gate, admission and share (module docstring)."""

    def __init__(
        self, clock: Callable[[], float] | None = None, usage_half_life_seconds: float = 0.0
    ) -> None:
        self._tree = QueueTree()
        #: Each queue's decayed usage (off without a clock or a half-life).
        self._recent = RecentUsage(usage_half_life_seconds if clock else 0.0, clock or _no_clock)
        #: Whether any queue has a lending limit (else nothing is kept).
        self._lending = False
        #: Usage charged to each queue directly (leaves; any name a group uses).
        self._usage: dict[str, dict[str, int]] = {}
        #: Demand of each queue's waiting groups, by namespace (only allowed ones claim).
        self._demand: dict[str, dict[str, dict[str, int]]] = {}
        self._capacity: dict[str, int] = {}
        #: Per resource, the capacity no top queue's nominal covers (cached).
        self._idle_bases: dict[str, int] = {}
        self._namespace_labels: Mapping[str, Mapping[str, str]] = {}

    # -- feeding -------------------------------------------------------------

    def set_queues(self, queues: Iterable[QueuePolicy]) -> None:
        """Replace every defined queue (the implicit default stays unless redefined)."""
        self._tree.set_queues(queues)
        self._structure_changed()

    def upsert_queue(self, queue: QueuePolicy) -> bool:
        """Add or change one queue; True if anything changed."""
        changed = self._tree.upsert_queue(queue)
        if changed:
            self._structure_changed()
        return changed

    def remove_queue(self, name: str) -> bool:
        removed = self._tree.remove_queue(name)
        if removed:
            self._structure_changed()
        return removed

    def _structure_changed(self) -> None:
        self._idle_bases = {}
        self._lending = any(q.lending_limit for q in self._tree.queues.values())

    def set_capacity(self, capacity: Mapping[str, int]) -> None:
        """The allocatable capacity of the cluster's schedulable nodes."""
        self._capacity = dict(capacity)
        self._idle_bases = {}

    def set_namespace_labels(self, labels: Mapping[str, Mapping[str, str]]) -> None:
        self._namespace_labels = labels

    def charge(self, queue: str, requests: Amounts, sign: int = 1) -> None:
        """A pod of a group of ``queue`` was bound (1) or left (-1)."""
        usage = self._usage.setdefault(queue, {})
        self._recent.before_change(queue, usage)
        add_amounts(usage, requests, sign)

    def add_demand(self, queue: str, namespace: str, pending: Amounts, sign: int = 1) -> None:
        """Members of a group of ``namespace`` began (1) or stopped (-1) waiting in ``queue``."""
        add_amounts(self._demand.setdefault(queue, {}).setdefault(namespace, {}), pending, sign)

    # -- reading -------------------------------------------------------------

    def policy(self, name: str) -> QueuePolicy | None:
        return self._tree.policy(name)

    def names(self) -> list[str]:
        """The defined queues (the implicit default is not one)."""
        return self._tree.names()

    def usage(self, name: str) -> dict[str, int]:
        """Usage of the queue and every queue below it."""
        total = dict(self._usage.get(name, {}))
        for child in self._tree.descendants(name):
            add_amounts(total, self._usage.get(child, {}))
        return total

    def recent_usage(self, name: str) -> dict[str, float]:
        """Usage of the queue and every queue below it, averaged over the recent past."""
        total: dict[str, float] = {}
        for queue in [name, *self._tree.descendants(name)]:
            for resource, amount in self._recent.at(queue, self._usage.get(queue, {})).items():
                total[resource] = total.get(resource, 0.0) + amount
        return total

    def share(self, name: str) -> float:
        """Where the queue stands for its next group: the lowest goes first.

        Below 1 while it uses no more than its nominal of any resource (its
        largest used/nominal ratio: the further below its entitlement, the
        sooner); above 1 once it borrows: 1 plus its largest borrowed amount
        over the capacity no nominal covers, divided by its weight. So queues
        under their nominal go before borrowers, and borrowers share the idle
        capacity by weight. Groups draw from leaves, whose usage is their own.
        With a usage half-life, the leaf's recent usage is added to its usage.
        """
        queue = self.policy(name) or IMPLICIT_DEFAULT
        within = borrowed = 0.0
        current = self._usage.get(name, {})
        standing: Mapping[str, float] = current
        if self._recent.on:
            recent = self._recent.at(name, current)
            standing = {r: current.get(r, 0) + recent.get(r, 0.0) for r in current.keys() | recent}
        for resource, used in standing.items():
            nominal = queue.nominal.get(resource, 0)
            if used <= 0 or (resource in _UNSHARED and not nominal):
                continue
            if used <= nominal:
                within = max(within, used / nominal)
                continue
            base = self._idle_base(resource)
            if base:
                borrowed = max(borrowed, (used - nominal) / base)
        return 1.0 + borrowed / queue.weight if borrowed else within

    def _idle_base(self, resource: str) -> int:
        """The capacity of ``resource`` beyond every top queue's nominal (all of it if none)."""
        base = self._idle_bases.get(resource)
        if base is None:
            capacity = self._capacity.get(resource, 0)
            promised = sum(
                (self.policy(top) or IMPLICIT_DEFAULT).nominal.get(resource, 0)
                for top in self._tree.tops()
            )
            base = capacity - promised if capacity > promised else capacity
            self._idle_bases[resource] = base
        return base

    def _dominant(self, queue: QueuePolicy, usage: Amounts) -> float:
        best = 0.0
        for resource, used in usage.items():
            base = queue.nominal.get(resource) or (
                None if resource in _UNSHARED else self._capacity.get(resource)
            )
            if used > 0 and base:
                best = max(best, used / base)
        return best

    def report(self, name: str) -> QueueUsage:
        queue = self.policy(name) or IMPLICIT_DEFAULT
        allocated = self.usage(name)
        borrowed = {
            r: used - queue.nominal.get(r, 0)
            for r, used in allocated.items()
            if used > queue.nominal.get(r, 0) and r not in _UNSHARED
        }
        caps: dict[str, int] = {}
        for level in self._tree.chain(name) if name not in self._tree.problems else [name]:
            for resource, cap in (self.policy(level) or IMPLICIT_DEFAULT).max.items():
                caps[resource] = min(cap, caps.get(resource, cap))
        return QueueUsage(
            allocated=allocated,
            borrowed=borrowed,
            nominal=dict(queue.nominal),
            max=caps,
            share=self._dominant(queue, allocated),
            problem=self._tree.problems.get(name),
            lending_limit=dict(queue.lending_limit),
            recent={r: round(a) for r, a in self.recent_usage(name).items() if round(a)},
        )

    # -- deciding ------------------------------------------------------------

    def gate(self, name: str, namespace: str) -> Status | None:
        """Why a group of ``namespace`` may not draw from queue ``name`` now (None: it may)."""
        closed = self._tree.gate(name)
        if closed is not None:
            return closed
        queue = self.policy(name)
        assert queue is not None  # the tree's gate says a missing queue is closed
        if not queue.allows(namespace, self._namespace_labels.get(namespace, {})):
            return Status(
                Code.WAITING,
                Reason.QUEUE_NOT_ALLOWED,
                f"namespace {namespace} may not use queue {name} (see the queue's "
                "spec.namespaces and spec.namespaceSelector)",
            )
        return None

    def admit(
        self,
        name: str,
        need: Amounts,
        free: Callable[[], Amounts],
        memo: dict[str, object] | None = None,
        *,
        returned: Mapping[str, Amounts] | None = None,
        held: Amounts | None = None,
    ) -> Status | None:
        """Why queue ``name`` may not take ``need`` more (None: it may).

        ``free`` gives the cluster's free capacity before the group is placed;
        it is asked only when the group borrows idle capacity that other
        queues claim. ``memo`` carries what does not change between calls for
        one decision (the other queues' claims). ``returned`` is usage, per
        queue, that leaves before the group comes (a preemption plan's
        victims); ``held`` is room already promised to the queue's other groups
        (held for its preemptors), counted as its usage. Call :meth:`gate`
        first: this assumes the queue is a valid leaf.
        """
        need = {r: a for r, a in need.items() if a > 0}
        if not need:
            return None
        chain = self._tree.chain(name)

        def used_by(level: str) -> dict[str, int]:
            return self._usage_with(level, held, returned)

        over = self._over_max(name, chain, need, used_by)
        if over is not None:
            return over
        for level in chain:
            queue = self.policy(level) or IMPLICIT_DEFAULT
            used = used_by(level)
            if all(used.get(r, 0) + a <= queue.nominal.get(r, 0) for r, a in need.items()):
                return self._leaves_kept(name, chain, need, free, memo)
            if queue.parent is None:
                break
            parent = self.policy(queue.parent) or IMPLICIT_DEFAULT
            held = dict(used)
            for sibling in self._tree.children.get(queue.parent, ()):
                if sibling != level:
                    add_amounts(held, self._claim(sibling))
            if all(held.get(r, 0) + a <= parent.nominal.get(r, 0) for r, a in need.items()):
                return self._leaves_kept(name, chain, need, free, memo)
        claims = self._holders_beside(chain, memo, claims=True)
        if not claims:
            return None
        short = _short_of(need, claims, free)
        if short is None:
            return None
        resource, wanted, idle, held_for_others = short
        waiting = "with groups waiting"
        if self._lending:
            waiting += ", or kept by their lendingLimit"
        own = self.policy(name) or IMPLICIT_DEFAULT
        if used_by(name).get(resource, 0) + wanted <= own.nominal.get(resource, 0):
            # Within its own nominal of this resource: what it lent is in use elsewhere.
            wants = f"needs {_amount(resource, wanted)} of its nominal quota, lent and in use"
            after = "; quota a queue lent comes back by reclaim"
        else:
            wants, after = f"needs {_amount(resource, wanted)} beyond its nominal quota", ""
        return Status(
            Code.UNSCHEDULABLE,
            Reason.QUEUE_CANNOT_BORROW,
            f"queue {name} {wants}; of {_amount(resource, idle)} idle, "
            f"{_amount(resource, held_for_others)} is held for queues under their nominal "
            f"{waiting}: {_holder_list(resource, claims)}{after}",
        )

    def _leaves_kept(
        self,
        name: str,
        chain: Sequence[str],
        need: Amounts,
        free: Callable[[], Amounts],
        memo: dict[str, object] | None,
    ) -> Status | None:
        """Why a group entitled by quota would still take room other queues keep (None: it
        would not): their kept, unused nominal must stay free after it."""
        if not self._lending:
            return None
        kept = self._holders_beside(chain, memo, claims=False)
        short = _short_of(need, kept, free) if kept else None
        if short is None:
            return None
        resource, wanted, idle, held = short
        return Status(
            Code.UNSCHEDULABLE,
            Reason.QUEUE_CANNOT_BORROW,
            f"queue {name} needs {_amount(resource, wanted)}; of {_amount(resource, idle)} "
            f"idle, {_amount(resource, held)} is nominal quota that other queues do not lend "
            f"(spec.lendingLimit): {_holder_list(resource, kept)}; quota a queue lent comes "
            "back by reclaim",
        )

    def over_max(self, name: str, need: Amounts, held: Amounts | None = None) -> Status | None:
        """Why ``need`` more would take queue ``name`` (or a parent) over its max, if it would."""
        need = {r: a for r, a in need.items() if a > 0}
        if not need:
            return None

        return self._over_max(
            name, self._tree.chain(name), need, lambda level: self._usage_with(level, held)
        )

    def _usage_with(
        self,
        level: str,
        held: Amounts | None = None,
        returned: Mapping[str, Amounts] | None = None,
    ) -> dict[str, int]:
        """The queue's usage, plus room ``held`` for its leaf, less ``returned`` per queue."""
        used = self.usage(level)
        if held:
            add_amounts(used, held)  # the leaf's: within every level of its chain
        if returned:
            subtree = {level, *self._tree.descendants(level)}
            for queue, amounts in returned.items():
                if queue in subtree:
                    add_amounts(used, amounts, -1)
        return used

    def _over_max(
        self,
        name: str,
        chain: Sequence[str],
        need: Amounts,
        used_by: Callable[[str], Amounts],
    ) -> Status | None:
        for level in chain:
            used = used_by(level)
            for resource, cap in sorted((self.policy(level) or IMPLICIT_DEFAULT).max.items()):
                wanted = need.get(resource, 0)
                if wanted and used.get(resource, 0) + wanted > cap:
                    whose = "" if level == name else f" (parent of queue {name})"
                    return Status(
                        Code.UNSCHEDULABLE,
                        Reason.QUEUE_MAX_REACHED,
                        f"queue {level}{whose}: {_amount(resource, used.get(resource, 0))} of "
                        f"max {format_quantity(resource, cap)} in use, this group needs "
                        f"{format_quantity(resource, wanted)} more",
                    )
        return None

    def wants_back(self, taker: str, need: Amounts) -> bool:
        """Whether ``taker`` may reclaim to place ``need``: it stays within its nominal.

        Only the resources its nominal names count; it must be under its
        nominal in one of them now.
        """
        wanting = self.policy(taker)
        if wanting is None or self.gate_blocked(taker) or not self._under_nominal(taker):
            return False
        used = self.usage(taker)
        return all(
            used.get(r, 0) + need.get(r, 0) <= nominal for r, nominal in wanting.nominal.items()
        )

    def _under_nominal(self, name: str) -> bool:
        """Whether the queue has a nominal and uses less than it of some resource."""
        queue = self.policy(name)
        if queue is None or not queue.nominal:
            return False
        used = self.usage(name)
        return any(used.get(r, 0) < nominal for r, nominal in queue.nominal.items())

    def may_reclaim(self, taker: str, victim_queue: str, removed: Amounts) -> bool:
        """Whether ``taker`` may take ``removed`` back from ``victim_queue`` (reclaim).

        Only a queue under its nominal takes back, only from another queue that
        borrowed, and never below that queue's own nominal: so the victim queue
        still stands above the taker afterwards (no ping-pong between queues).
        Lending limits need nothing here: the victims are borrowers, and the
        preemptor's admission once they are gone still leaves every other
        queue's kept room free (:meth:`admit`). A queue that is not
        ``reclaimable`` keeps what it holds.
        """
        if taker == victim_queue:
            return False
        lender = self.policy(victim_queue)
        if lender is None or not lender.reclaimable or not self._under_nominal(taker):
            return False
        held = self.usage(victim_queue)
        borrowed_any = False
        for resource, amount in removed.items():
            if amount <= 0 or resource in _UNSHARED:
                continue
            nominal = lender.nominal.get(resource, 0)
            if held.get(resource, 0) - amount < nominal:
                return False
            borrowed_any = borrowed_any or held.get(resource, 0) > nominal
        return borrowed_any

    # -- internals -----------------------------------------------------------

    def _holders_beside(
        self, chain: Sequence[str], memo: dict[str, object] | None, *, claims: bool
    ) -> dict[str, list[tuple[str, int]]]:
        """Per resource, what queues outside ``chain`` hold back from its groups now
        (queue, amount): with ``claims``, what each other top queue claims (its guard),
        and the kept, unused nominal of the chain's siblings at every level; without,
        the kept, unused nominal of every queue outside the chain."""
        key = f"{'claims' if claims else 'kept'}-beside:{chain[0]}"
        if memo is not None and key in memo:
            cached: dict[str, list[tuple[str, int]]] = memo[key]  # type: ignore[assignment]
            return cached
        holders: dict[str, list[tuple[str, int]]] = {}

        def add(queue: str, amounts: Amounts) -> None:
            for resource, amount in amounts.items():
                if amount > 0:
                    holders.setdefault(resource, []).append((queue, amount))

        if self._lending:
            for level in chain[:-1]:
                parent = (self.policy(level) or IMPLICIT_DEFAULT).parent
                for sibling in self._tree.children.get(parent or "", ()):
                    if sibling != level:
                        add(sibling, self._kept_unused(sibling))
        for other in self._tree.tops():
            if other != chain[-1]:
                add(other, self._guard(other) if claims else self._kept_unused(other))
        if memo is not None:
            memo[key] = holders
        return holders

    def _claim(self, name: str) -> dict[str, int]:
        """What a queue holds or may claim now: its usage plus its guard."""
        claim = self.usage(name)
        add_amounts(claim, self._guard(name))
        return claim

    def _guard(self, name: str) -> dict[str, int]:
        """The unused nominal quota a queue holds back now: what its eligible waiting groups
        may claim, or what it keeps (does not lend), whichever is larger."""
        kept = self._kept_unused(name) if self._lending else {}
        queue = self.policy(name)
        if queue is None or not queue.nominal:
            return kept
        demand = self._eligible_demand(name)
        used = self.usage(name)
        guard: dict[str, int] = kept
        for resource, nominal in queue.nominal.items():
            amount = min(max(0, nominal - used.get(resource, 0)), demand.get(resource, 0))
            if amount > guard.get(resource, 0):
                guard[resource] = amount
        return guard

    def _kept_unused(self, name: str) -> dict[str, int]:
        """The nominal a queue (with the queues below it) keeps from others and does not
        use now: its own kept part less its usage, or its children's, whichever is larger."""
        kept: dict[str, int] = {}
        for child in self._tree.children.get(name, ()):
            add_amounts(kept, self._kept_unused(child))
        queue = self.policy(name)
        if queue is not None and queue.lending_limit:
            used = self.usage(name)
            for resource in queue.lending_limit:
                amount = queue.kept(resource) - used.get(resource, 0)
                if amount > kept.get(resource, 0):
                    kept[resource] = amount
        return kept

    def _eligible_demand(self, name: str) -> dict[str, int]:
        """Demand of the open leaves at and below ``name``, from namespaces they allow."""
        total: dict[str, int] = {}
        for leaf in [name, *self._tree.descendants(name)]:
            queue = self.policy(leaf)
            if queue is None or self._tree.children.get(leaf) or self.gate_blocked(leaf):
                continue
            for namespace, amounts in self._demand.get(leaf, {}).items():
                if queue.allows(namespace, self._namespace_labels.get(namespace, {})):
                    add_amounts(total, amounts)
        return total

    def gate_blocked(self, name: str) -> bool:
        """True when no group may draw from the queue whatever its namespace."""
        return self._tree.gate_blocked(name)


def _amount(resource: str, amount: int) -> str:
    return f"{resource} {format_quantity(resource, amount)}"


def _short_of(
    need: Amounts, holders: Mapping[str, Sequence[tuple[str, int]]], free: Callable[[], Amounts]
) -> tuple[str, int, int, int] | None:
    """The first resource of which ``need`` would take room ``holders`` hold back:
    (resource, wanted, idle, held); None if it takes none. ``free`` is asked once, if at all."""
    idle_amounts: Amounts | None = None
    for resource, wanted in sorted(need.items()):
        held = sum(amount for _, amount in holders.get(resource, ()))
        if held <= 0:
            continue
        if idle_amounts is None:
            idle_amounts = free()
        idle = idle_amounts.get(resource, 0)
        if wanted > idle - held:
            return resource, wanted, idle, held
    return None


def _holder_list(resource: str, holders: Mapping[str, Sequence[tuple[str, int]]]) -> str:
    return ", ".join(
        f"{queue} ({_amount(resource, amount)})" for queue, amount in sorted(holders[resource])
    )


def _no_clock() -> float:
    return 0.0
