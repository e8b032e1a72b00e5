"""The pods around a node: what inter-pod affinity, anti-affinity and spread read.

Why it is shaped like this: these rules ask "which domains (values of a node
label) hold pods that a selector picks?". Scanning every placed pod for every
question would cost the scheduler its speed, and most pods ask nothing of the
kind. So :class:`TopologyIndex` keeps:

- the placed pods (bound and assumed), and, from the first pod that asks,
  an index of them by label (``key=value``) and by namespace, so a selector
  with an equality (``matchLabels``, the usual case) looks up its candidates;
- the required anti-affinity terms of placed pods, each with the nodes of the
  pods that carry it: few distinct terms, however many pods carry them, so
  every pod can be checked against them cheaply (kube-scheduler's symmetric
  rule); a pod pays nothing while no placed pod carries one;
- per topology key asked about, each node slot's domain id (-1: no label),
  updated in O(keys) when a node changes.

:meth:`TopologyIndex.rules` answers for one pod as a :class:`RunRules`, which
a run of identical pods keeps current as its pods are placed one by one
(:meth:`RunRules.placed`), without asking the index again. The rules
themselves are stated in :mod:`~coscheduler.core.filters.interpod`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.api.pod_topology import AffinityTerm, LabelSelector, SpreadConstraint
from coscheduler.core.filters import interpod

__all__ = ["RunRules", "TopologyIndex"]

_Key = TypeVar("_Key")
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(slots=True)
class _Domains:
    """One topology key: each slot's domain id, and the ids of the values."""

    ids: IntArray
    values: dict[str, int] = field(default_factory=dict)

    def id_of(self, value: str) -> int:
        return self.values.setdefault(value, len(self.values))


class Placement(Protocol):
    """A pod counted on a node (the snapshot's own record of it)."""

    pod: PodInfo
    node: str


class TopologyIndex:
    """Placed pods by label, the anti-affinity terms they carry, and node domains.

    The snapshot tells it of every pod it places (:meth:`add`) and unplaces
    (:meth:`remove`); until the first pod with rules asks, that costs a check.
    """

    def __init__(
        self,
        nodes: Sequence[NodeInfo | None],
        slots: Mapping[str, int],
        placed: Mapping[str, Placement],
    ) -> None:
        # The snapshot's own node list, slot map and placed pods, read, never changed here.
        self._nodes = nodes
        self._slots = slots
        self._placed = placed
        self._indexed = False
        self._by_label: dict[tuple[str, str], set[str]] = {}
        self._by_namespace: dict[str, set[str]] = {}
        self._anti: dict[AffinityTerm, Counter[str]] = {}
        self._domains: dict[str, _Domains] = {}
        #: Each namespace's labels, for terms with a ``namespaceSelector``.
        self.namespace_labels: dict[str, Mapping[str, str]] = {}

    # -- keeping it current --------------------------------------------------

    def add(self, pod: PodInfo, node: str) -> None:
        if self._indexed:
            self._index(pod)
        for term in pod.topology.anti_affinity:
            self._anti.setdefault(term, Counter())[node] += 1

    def remove(self, pod: PodInfo, node: str) -> None:
        if self._indexed:
            for pair in pod.labels.items():
                _discard(self._by_label, pair, pod.uid)
            _discard(self._by_namespace, pod.namespace, pod.uid)
        for term in pod.topology.anti_affinity:
            nodes = self._anti[term]
            nodes[node] -= 1
            if nodes[node] <= 0:
                del nodes[node]
            if not nodes:
                del self._anti[term]

    def node_changed(self, slot: int, node: NodeInfo | None) -> None:
        """A slot got a node, a changed node, or lost its node."""
        for key, domains in self._domains.items():
            if slot >= len(domains.ids):
                domains.ids = _grown(domains.ids, slot + 1)
            value = None if node is None else node.labels.get(key)
            domains.ids[slot] = -1 if value is None else domains.id_of(value)

    @property
    def has_anti_terms(self) -> bool:
        """Whether any placed pod carries a required anti-affinity term."""
        return bool(self._anti)

    # -- answering -------------------------------------------------------------

    def domains(self, key: str, size: int) -> IntArray:
        """Each slot's domain id for ``key`` (-1: the node has no such label)."""
        domains = self._domains.get(key)
        if domains is None:
            domains = _Domains(np.full(max(size, 1), -1, dtype=np.int64))
            for slot, node in enumerate(self._nodes):
                if node is not None and key in node.labels:
                    domains.ids[slot] = domains.id_of(node.labels[key])
            self._domains[key] = domains
        if len(domains.ids) < size:
            domains.ids = _grown(domains.ids, size)
        return domains.ids[:size]

    def domain_names(self, key: str) -> list[str]:
        """The values of ``key`` by domain id (after :meth:`domains` for it)."""
        domains = self._domains.get(key)
        return [] if domains is None else list(domains.values)

    def rules(self, pod: PodInfo, size: int, counted: Sequence[BoolArray]) -> RunRules | None:
        """The inter-pod verdicts for ``pod`` over ``size`` slots; None when none applies.

        ``counted`` holds, per spread constraint of the pod, the slots whose
        pods count (the constraint's node policies applied by the snapshot).
        """
        topology = pod.topology
        existing = self._existing_anti(pod, size) if self._anti else None
        if not topology and existing is None:
            return None
        rules = RunRules(size)
        if topology.affinity:
            self._affinity(pod, size, rules)
        for term in topology.anti_affinity:
            domains = self.domains(term.topology_key, size)
            taken = self._domain_ids(self._selected(self._covered(term), term.selector), domains)
            rules.refuse(interpod.ANTI_AFFINITY_REASON, _in(domains, taken))
            if term.selects(pod.namespace, pod.labels, self.namespace_labels):
                rules.self_anti.append(domains)
        if existing is not None:
            rules.refuse(interpod.EXISTING_ANTI_AFFINITY_REASON, existing)
        if topology.spread:
            # Only nodes carrying every constraint's key count, as in kube-scheduler.
            keyed = np.logical_and.reduce(
                [self.domains(c.topology_key, size) >= 0 for c in topology.spread]
            )
            for constraint, nodes in zip(topology.spread, counted, strict=True):
                rules.spread.append(self._spread(pod, constraint, size, nodes & keyed))
        rules.settle()
        return rules

    # -- internals -------------------------------------------------------------

    def _existing_anti(self, pod: PodInfo, size: int) -> BoolArray | None:
        refused: BoolArray | None = None
        for term, nodes in self._anti.items():
            if not term.selects(pod.namespace, pod.labels, self.namespace_labels):
                continue
            domains = self.domains(term.topology_key, size)
            here = _in(domains, self._node_domains(nodes, domains))
            refused = here if refused is None else refused | here
        return refused

    def _affinity(self, pod: PodInfo, size: int, rules: RunRules) -> None:
        terms = pod.topology.affinity
        per_term = [self.domains(term.topology_key, size) for term in terms]
        has_keys = np.logical_and.reduce([domains >= 0 for domains in per_term])
        first = min(
            terms, key=lambda term: self._candidate_count(self._covered(term), term.selector)
        )
        matching = [
            node
            for other, node in self._selected(self._covered(first), first.selector)
            if all(
                term.selects(other.namespace, other.labels, self.namespace_labels) for term in terms
            )
        ]
        if not matching:
            if all(
                term.selects(pod.namespace, pod.labels, self.namespace_labels) for term in terms
            ):
                # The first of a series: any node with the keys; the domain of
                # the first pod placed then binds the rest of the run.
                rules.refuse(interpod.AFFINITY_REASON, ~has_keys)
                rules.first_of_series = per_term
                return
            rules.refuse(interpod.AFFINITY_REASON, np.ones(size, dtype=np.bool_))
            return
        allowed = has_keys.copy()
        for domains in per_term:
            allowed &= _in(domains, self._node_domains(Counter(matching), domains))
        rules.refuse(interpod.AFFINITY_REASON, ~allowed)

    def _spread(
        self, pod: PodInfo, constraint: SpreadConstraint, size: int, counted: BoolArray
    ) -> _Spread:
        domains = self.domains(constraint.topology_key, size)
        counts = np.zeros(max(len(self._domains[constraint.topology_key].values), 1), np.int64)
        for other, node in self._selected(frozenset([pod.namespace]), constraint.selector):
            slot = self._slots.get(node)
            if slot is not None and slot < size and counted[slot] and not other.deleting:
                counts[domains[slot]] += 1
        present = np.unique(domains[counted])
        return _Spread(
            constraint, domains, counted, counts, present, constraint.selects(pod.labels)
        )

    def selected_counts(self, term: AffinityTerm, key: str, size: int) -> tuple[IntArray, IntArray]:
        """Each slot's domain id for ``key``, and per domain id the placed pods ``term`` selects."""
        domains = self.domains(key, size)
        counts = np.zeros(max(len(self._domains[key].values), 1), dtype=np.int64)
        for _, node in self._selected(self._covered(term), term.selector):
            slot = self._slots.get(node)
            if slot is not None and slot < size and domains[slot] >= 0:
                counts[domains[slot]] += 1
        return domains, counts

    def spread_counts(
        self, pod: PodInfo, constraint: SpreadConstraint, size: int
    ) -> tuple[IntArray, IntArray]:
        """Each slot's domain id, and per domain the pods the constraint counts (none deleting)."""
        domains = self.domains(constraint.topology_key, size)
        counts = np.zeros(max(len(self._domains[constraint.topology_key].values), 1), np.int64)
        for other, node in self._selected(frozenset([pod.namespace]), constraint.selector):
            slot = self._slots.get(node)
            if slot is not None and slot < size and domains[slot] >= 0 and not other.deleting:
                counts[domains[slot]] += 1
        return domains, counts

    def _covered(self, term: AffinityTerm) -> frozenset[str] | None:
        """The namespaces a term is about (None: all), its selector applied to their labels."""
        selector = term.namespace_selector
        if term.namespaces is None or selector is None:
            return term.namespaces
        chosen = (
            name for name, labels in self.namespace_labels.items() if selector.matches(labels)
        )
        return term.namespaces | frozenset(chosen)

    def _selected(
        self, namespaces: frozenset[str] | None, selector: LabelSelector | None
    ) -> Iterator[tuple[PodInfo, str]]:
        """Placed pods in ``namespaces`` (None: all) that ``selector`` picks."""
        if selector is None:
            return
        self._ensure_index()
        for uid in self._candidates(namespaces, selector):
            placed = self._placed[uid]
            pod, node = placed.pod, placed.node
            if (namespaces is None or pod.namespace in namespaces) and selector.matches(pod.labels):
                yield pod, node

    def _candidates(self, namespaces: frozenset[str] | None, selector: LabelSelector) -> set[str]:
        best: set[str] | None = None
        for key, values in selector.equalities():
            found: set[str] = set()
            for value in values:
                found |= self._by_label.get((key, value), set())
            if best is None or len(found) < len(best):
                best = found
        if best is not None:
            return best
        if namespaces is None:
            return set(self._placed)
        return set().union(*(self._by_namespace.get(ns, set()) for ns in namespaces))

    def _candidate_count(
        self, namespaces: frozenset[str] | None, selector: LabelSelector | None
    ) -> int:
        if selector is None:
            return 0
        self._ensure_index()
        return len(self._candidates(namespaces, selector))

    def _ensure_index(self) -> None:
        if not self._indexed:
            self._indexed = True
            for placed in self._placed.values():
                self._index(placed.pod)

    def _index(self, pod: PodInfo) -> None:
        for pair in pod.labels.items():
            self._by_label.setdefault(pair, set()).add(pod.uid)
        self._by_namespace.setdefault(pod.namespace, set()).add(pod.uid)

    def _domain_ids(self, pods: Iterable[tuple[PodInfo, str]], domains: IntArray) -> set[int]:
        return self._node_domains(Counter(node for _, node in pods), domains)

    def _node_domains(self, nodes: Counter[str], domains: IntArray) -> set[int]:
        ids: set[int] = set()
        for node in nodes:
            slot = self._slots.get(node)
            if slot is not None and slot < len(domains) and domains[slot] >= 0:
                ids.add(int(domains[slot]))
        return ids


@dataclass(slots=True)
class _Spread:
    """One spread constraint's counts for a run, updated as its pods are placed."""

    constraint: SpreadConstraint
    domains: IntArray
    counted: BoolArray
    counts: IntArray
    present: IntArray
    self_match: bool

    def allowed(self) -> BoolArray:
        """Nodes the next pod may take under this constraint."""
        smallest = int(self.counts[self.present].min()) if len(self.present) else 0
        minimum = self.constraint.min_domains
        if minimum is not None and len(self.present) < minimum:
            smallest = 0
        limit = self.constraint.max_skew + smallest - int(self.self_match)
        has_key = self.domains >= 0
        counts = np.zeros(len(self.domains), dtype=np.int64)
        counts[has_key] = self.counts[self.domains[has_key]]
        return has_key & (counts <= limit)

    def placed(self, slot: int) -> None:
        if self.self_match and self.counted[slot]:
            self.counts[self.domains[slot]] += 1


class RunRules:
    """The inter-pod verdicts for the next pod of a run of identical pods.

    ``mask`` is the nodes it may take now; after each pod of the run is placed,
    :meth:`placed` updates it from what that pod changes (its own anti-affinity
    domains, the domain a first-of-series affinity settles on, spread counts).
    ``refusals`` keeps, per reason, the nodes refused at the start: what a
    diagnosis reports.
    """

    __slots__ = ("first_of_series", "fixed", "mask", "refusals", "self_anti", "spread")

    def __init__(self, size: int) -> None:
        self.fixed: BoolArray = np.ones(size, dtype=np.bool_)
        self.mask: BoolArray = self.fixed
        self.refusals: list[tuple[str, str, BoolArray]] = []
        self.self_anti: list[IntArray] = []
        self.first_of_series: list[IntArray] | None = None
        self.spread: list[_Spread] = []

    def refuse(self, reason: str, refused: BoolArray) -> None:
        self.refusals.append((interpod.AFFINITY, reason, refused))
        self.fixed &= ~refused

    def settle(self) -> None:
        """Add the spread refusals (in kube-scheduler's order, before affinity's) and combine."""
        spread_refusals = []
        for spread in self.spread:
            allowed = spread.allowed()
            missing = spread.domains < 0
            spread_refusals.append((interpod.SPREAD, interpod.SPREAD_LABEL_REASON, missing))
            spread_refusals.append((interpod.SPREAD, interpod.SPREAD_REASON, ~allowed & ~missing))
        self.refusals = spread_refusals + self.refusals
        self._combine()

    def settle_domain(self, domain: int) -> None:
        """A series with affinity to itself starts in this domain of its first term's key."""
        assert self.first_of_series is not None
        self.fixed &= self.first_of_series[0] == domain
        self._combine()

    def placed(self, slot: int) -> None:
        """One pod of the run was placed on ``slot``."""
        for domains in self.self_anti:
            if domains[slot] >= 0:
                self.fixed &= domains != domains[slot]
        if self.first_of_series is not None:
            for domains in self.first_of_series:
                self.fixed &= domains == domains[slot]
            self.first_of_series = None
        for spread in self.spread:
            spread.placed(slot)
        self._combine()

    def _combine(self) -> None:
        mask = self.fixed.copy()
        for spread in self.spread:
            mask &= spread.allowed()
        self.mask = mask


def _in(domains: IntArray, ids: set[int]) -> BoolArray:
    if not ids:
        return np.zeros(len(domains), dtype=np.bool_)
    return np.isin(domains, np.fromiter(ids, dtype=np.int64, count=len(ids)))


def _grown(ids: IntArray, size: int) -> IntArray:
    return np.concatenate([ids, np.full(max(size, 2 * len(ids)) - len(ids), -1, np.int64)])


def _discard(index: dict[_Key, set[str]], key: _Key, uid: str) -> None:
    members = index.get(key)
    if members is not None:
        members.discard(uid)
        if not members:
            del index[key]
