"""Choosing devices for a member's claims on one node: a bounded backtracking search.

The caller (:class:`~coscheduler.core.devices.DeviceIndex`) gives, per claim,
per request, per alternative, the devices reachable from the node that the
alternative's class and request selectors accept (:class:`Matched`). The
search walks the requests of all the member's claims in order, each
alternative in ``firstAvailable`` order, and backtracks when a later request
cannot be satisfied with what the earlier ones took:

- ``matchAttribute``: the free devices of a request split by their values of
  the constrained attributes; each split is tried in turn (values fixed by an
  earlier request of the claim must be kept);
- within one split, a device no later request could take is as good as any
  other: those are taken first, and only the rest (the *contested* devices)
  are tried in combinations. The last request therefore never branches, and a
  claim whose requests do not compete for devices is found in one pass;
- every option tried spends one unit of a budget (:data:`BUDGET` per member
  and node): when it runs out the node is refused as if nothing fit, so a
  hard instance costs a bounded time, never an unbounded one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from coscheduler.api.devices import AttributeValue, ClaimSpec, Device
from coscheduler.api.node_selector import NodeSelectorTerm

__all__ = [
    "BUDGET",
    "Candidate",
    "ClaimAsk",
    "DeviceKey",
    "DeviceRefusalError",
    "Matched",
    "Pick",
    "choose",
]

#: (driver, pool, device): a device cluster-wide.
DeviceKey = tuple[str, str, str]


class DeviceRefusalError(Exception):
    """Why a member's claims cannot be satisfied on a node (or anywhere)."""

    def __init__(self, reason: str, *, anywhere: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        #: True when no node can help (a missing claim or class, a CEL error).
        self.anywhere = anywhere


#: Options a search may try for one member on one node before it gives up on the node.
BUDGET = 512
#: How many splits by constrained values one request tries.
_MAX_GROUPS = 64
_NONE: frozenset[DeviceKey] = frozenset()


@dataclass(slots=True, eq=False)
class Candidate:
    """A device as the search sees it; its attribute lookups are kept (a slice is immutable)."""

    key: DeviceKey
    driver: str
    device: Device
    #: The slice's reach: None for every node, else node selector terms.
    nodes: tuple[NodeSelectorTerm, ...] | None
    _values: dict[str, AttributeValue | None] = field(default_factory=dict)

    def attribute(self, qualified: str) -> AttributeValue | None:
        values = self._values
        if qualified in values:
            return values[qualified]
        value = values[qualified] = self.device.attribute(qualified, self.driver)
        return value


@dataclass(frozen=True, slots=True)
class Matched:
    """The devices of one node one alternative may take: accepted, or not judged (an error)."""

    #: In slice order; includes the devices whose selectors failed to evaluate.
    devices: tuple[Candidate, ...]
    #: Device -> (owner, words) of its evaluation error; owner None stands for the claim.
    errors: Mapping[DeviceKey, tuple[str | None, str]]

    def refuse(self, key: DeviceKey, claim: str) -> DeviceRefusalError:
        owner, words = self.errors[key]
        return DeviceRefusalError(f"{owner or f'claim {claim}'}: {words}", anywhere=True)


@dataclass(frozen=True, slots=True)
class ClaimAsk:
    """One claim to allocate on the node, with what each alternative of each request may take."""

    key: str
    spec: ClaimSpec
    #: Per request, per alternative (``spec.requests[i].choices[j]``).
    matched: tuple[tuple[Matched, ...], ...]


#: One device given: (claim position in the asks, result's request name, device).
Pick = tuple[int, str, Candidate]


class _OutOfBudgetError(Exception):
    pass


def choose(
    asks: Sequence[ClaimAsk], busy: Callable[[DeviceKey], bool], budget: int = BUDGET
) -> list[Pick] | None:
    """Devices for every request of ``asks`` (none taken twice, none ``busy``), or None."""
    if len(asks) == 1 and len(asks[0].matched) == 1:
        return _one_request(asks[0], busy)
    search = _Search(asks, busy, budget)
    try:
        return search.solve(0, {})
    except _OutOfBudgetError:
        return None


def _one_request(ask: ClaimAsk, busy: Callable[[DeviceKey], bool]) -> list[Pick] | None:
    """:func:`choose` for one claim of one request (the common case): nothing to backtrack
    over but its alternatives, each taken at its first option."""
    constraints = ask.spec.constraints
    for choice, found in zip(ask.spec.requests[0].choices, ask.matched[0], strict=True):
        attributes = [c.attribute for c in constraints if c.covers(choice.name)]
        if choice.all:
            if found.errors:
                raise found.refuse(next(iter(found.errors)), ask.key)
            devices = list(found.devices)
            if (
                devices
                and not any(busy(c.key) for c in devices)
                and _agree(devices, attributes, {})
            ):
                return [(0, choice.name, c) for c in devices]
            continue
        free = [c for c in found.devices if not busy(c.key)]
        if found.errors:
            for candidate in free:
                if candidate.key in found.errors:
                    raise found.refuse(candidate.key, ask.key)
        groups = _groups(free, attributes, {}, choice.count)
        if groups:
            return [(0, choice.name, c) for c in groups[0][: choice.count]]
    return None


class _Search:
    def __init__(
        self, asks: Sequence[ClaimAsk], busy: Callable[[DeviceKey], bool], budget: int
    ) -> None:
        self.asks = asks
        self.busy = busy
        self.budget = budget
        self.steps = [
            (position, request.choices, matched)
            for position, ask in enumerate(asks)
            for request, matched in zip(ask.spec.requests, ask.matched, strict=True)
        ]
        # Per step: the devices some later step could take (its contested devices).
        self.later: list[frozenset[DeviceKey]] = [_NONE] * len(self.steps)
        seen: set[DeviceKey] = set()
        for step in range(len(self.steps) - 1, 0, -1):
            for found in self.steps[step][2]:
                seen.update(c.key for c in found.devices)
            self.later[step - 1] = frozenset(seen)
        self.picked: set[DeviceKey] = set()

    def taken(self, key: DeviceKey) -> bool:
        return key in self.picked or self.busy(key)

    def solve(self, step: int, fixed: Mapping[tuple[int, str], object]) -> list[Pick] | None:
        """Devices for the steps from ``step`` on, with the constrained values ``fixed``."""
        if step == len(self.steps):
            return []
        position, choices, matched = self.steps[step]
        ask = self.asks[position]
        for choice, found in zip(choices, matched, strict=True):
            attributes = [c.attribute for c in ask.spec.constraints if c.covers(choice.name)]
            known = {a: fixed[(position, a)] for a in attributes if (position, a) in fixed}
            options: Iterator[list[Candidate]]
            if choice.all:
                # Every matching device, none of them taken, at least one.
                if found.errors:
                    raise found.refuse(next(iter(found.errors)), ask.key)
                devices = list(found.devices)
                if not devices or any(self.taken(c.key) for c in devices):
                    continue
                options = iter([devices] if _agree(devices, attributes, known) else [])
            else:
                # Taken devices are skipped before their selectors' errors are told.
                picked, busy = self.picked, self.busy
                free = [c for c in found.devices if c.key not in picked and not busy(c.key)]
                if found.errors:
                    for candidate in free:
                        if candidate.key in found.errors:
                            raise found.refuse(candidate.key, ask.key)
                options = _options(free, attributes, known, choice.count, self.later[step])
            for picks in options:
                self.budget -= 1
                if self.budget < 0:
                    raise _OutOfBudgetError
                values = dict(fixed)
                for attribute in attributes:
                    values[(position, attribute)] = picks[0].attribute(attribute)
                keys = [c.key for c in picks]
                self.picked.update(keys)
                rest = self.solve(step + 1, values)
                if rest is not None:
                    return [(position, choice.name, c) for c in picks] + rest
                self.picked.difference_update(keys)
        return None


def _options(
    free: list[Candidate],
    attributes: list[str],
    known: Mapping[str, object],
    count: int,
    contested: frozenset[DeviceKey],
) -> Iterator[list[Candidate]]:
    """The sets of ``count`` devices worth trying, uncontested devices first in each."""
    for group in _groups(free, attributes, known, count)[:_MAX_GROUPS]:
        spare = [c for c in group if c.key not in contested]
        if len(spare) >= count:
            yield spare[:count]
            continue
        wanted = [c for c in group if c.key in contested]
        for combination in itertools.combinations(wanted, count - len(spare)):
            yield spare + list(combination)


def _agree(group: list[Candidate], attributes: list[str], known: Mapping[str, object]) -> bool:
    for attribute in attributes:
        values = {_typed(c.attribute(attribute)) for c in group}
        if len(values) != 1 or (None, None) in values:
            return False
        if attribute in known and _typed(known[attribute]) not in values:
            return False
    return True


def _typed(value: object) -> tuple[type, object] | tuple[None, None]:
    """A value as matchAttribute compares it: of one type (True is not 1)."""
    return (None, None) if value is None else (type(value), value)


def _groups(
    free: list[Candidate], attributes: list[str], known: Mapping[str, object], count: int
) -> list[list[Candidate]]:
    """The free devices split by their values of the constrained attributes, those large enough."""
    if not attributes:
        return [free] if len(free) >= count else []
    if len(attributes) == 1:
        return _groups_by_one(free, attributes[0], known, count)
    by_values: dict[tuple[object, ...], list[Candidate]] = {}
    for candidate in free:
        values = tuple(_typed(candidate.attribute(a)) for a in attributes)
        if any(v[1] is None for v in values):
            continue
        if any(
            a in known and _typed(known[a]) != v for a, v in zip(attributes, values, strict=True)
        ):
            continue
        by_values.setdefault(values, []).append(candidate)
    return [group for group in by_values.values() if len(group) >= count]


def _groups_by_one(
    free: list[Candidate], attribute: str, known: Mapping[str, object], count: int
) -> list[list[Candidate]]:
    """:func:`_groups` for one constrained attribute (the common case), without tuples."""
    wanted = _typed(known[attribute]) if attribute in known else None
    by_value: dict[object, list[Candidate]] = {}
    for candidate in free:
        cached = candidate._values
        value = cached[attribute] if attribute in cached else candidate.attribute(attribute)
        if value is None:
            continue
        typed = (type(value), value)  # True and 1 are equal in Python, not in Kubernetes
        if wanted is not None and typed != wanted:
            continue
        group = by_value.get(typed)
        if group is None:
            by_value[typed] = [candidate]
        else:
            group.append(candidate)
    return [group for group in by_value.values() if len(group) >= count]
