"""What a pod asks about the pods around it: inter-pod (anti-)affinity and spread.

These are the required rules of ``spec.affinity.podAffinity``,
``spec.affinity.podAntiAffinity`` and the ``DoNotSchedule`` entries of
``spec.topologySpreadConstraints``, parsed once into hashable records so the
core can index them and compare them cheaply.

Two rules of the API are applied here, once, rather than by every reader:

- ``matchLabelKeys`` / ``mismatchLabelKeys`` become requirements of the
  label selector (``key In (the pod's value)`` / ``key NotIn (...)``), as the
  API server merges them since 1.33; merging again is harmless, a repeated
  requirement selects the same pods.
- A term's namespaces: ``namespaces`` and ``namespaceSelector`` both absent
  means the pod's own namespace; ``namespaceSelector: {}`` means every
  namespace; otherwise the namespaces listed and those whose labels the
  selector matches (the scheduler watches namespaces for their labels).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from coscheduler.api.fields import FieldReader
from coscheduler.api.node_selector import NodeSelectorTerm, parse_node_selector_term

__all__ = [
    "AffinityTerm",
    "LabelRequirement",
    "LabelSelector",
    "PodTopology",
    "Preferences",
    "SpreadConstraint",
    "read_label_selector",
    "read_pod_topology",
    "read_preferences",
]

_SELECTOR_OPERATORS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
#: Each namespace's labels, by name (what a ``namespaceSelector`` reads).
NamespaceLabels = Mapping[str, Mapping[str, str]]
_REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One requirement of a label selector (``matchLabels`` entries become ``In``)."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def holds(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "In":
            return value is not None and value in self.values
        if self.operator == "NotIn":
            return value is None or value not in self.values
        if self.operator == "Exists":
            return value is not None
        return value is None  # DoesNotExist


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """Requirements that must all hold; no requirement selects every pod."""

    requirements: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(requirement.holds(labels) for requirement in self.requirements)

    def equalities(self) -> list[tuple[str, frozenset[str]]]:
        """The ``key In (values)`` requirements: what an index of labels can look up."""
        return [(r.key, r.values) for r in self.requirements if r.operator == "In"]


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """One required pod affinity or anti-affinity term.

    ``selector`` None selects no pod (the API's null ``labelSelector``);
    ``namespaces`` None means every namespace; otherwise a pod's namespace
    must be listed or carry labels ``namespace_selector`` matches.
    """

    selector: LabelSelector | None
    namespaces: frozenset[str] | None
    topology_key: str
    namespace_selector: LabelSelector | None = None

    def covers(self, namespace: str, namespace_labels: NamespaceLabels) -> bool:
        """Whether pods in ``namespace`` are within this term's namespaces."""
        if self.namespaces is None or namespace in self.namespaces:
            return True
        selector = self.namespace_selector
        return selector is not None and selector.matches(namespace_labels.get(namespace, {}))

    def selects(
        self, namespace: str, labels: Mapping[str, str], namespace_labels: NamespaceLabels
    ) -> bool:
        """Whether a pod in ``namespace`` with ``labels`` is one this term is about."""
        if self.selector is None or not self.covers(namespace, namespace_labels):
            return False
        return self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """One ``DoNotSchedule`` topology spread constraint, defaults applied."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int | None
    #: ``nodeAffinityPolicy: Honor`` (the default): only nodes the pod's node
    #: selector and affinity accept count as domains.
    honor_node_affinity: bool
    #: ``nodeTaintsPolicy: Honor`` (default Ignore): tainted nodes the pod does
    #: not tolerate do not count.
    honor_node_taints: bool

    def selects(self, labels: Mapping[str, str]) -> bool:
        return self.selector is not None and self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class PodTopology:
    """A pod's required inter-pod rules. Empty when it has none (most pods)."""

    affinity: tuple[AffinityTerm, ...] = ()
    anti_affinity: tuple[AffinityTerm, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.affinity or self.anti_affinity or self.spread)

    @property
    def keys(self) -> frozenset[str]:
        """Every topology key the rules read."""
        terms = (*self.affinity, *self.anti_affinity)
        return frozenset([t.topology_key for t in terms] + [c.topology_key for c in self.spread])


#: A pod with no inter-pod rule.
NO_TOPOLOGY: Final = PodTopology()


@dataclass(frozen=True, slots=True)
class Preferences:
    """What a pod would like, with the weights it gives (1-100 each).

    ``nodes``: preferred node affinity terms; ``affinity`` / ``anti_affinity``:
    preferred pod (anti-)affinity terms; ``spread``: ``ScheduleAnyway``
    spread constraints. Empty for most pods.
    """

    nodes: tuple[tuple[int, NodeSelectorTerm], ...] = ()
    affinity: tuple[tuple[int, AffinityTerm], ...] = ()
    anti_affinity: tuple[tuple[int, AffinityTerm], ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.nodes or self.affinity or self.anti_affinity or self.spread)


#: A pod that prefers nothing.
NO_PREFERENCES: Final = Preferences()


def _selector(
    reader: FieldReader,
    raw: object,
    where: str,
    labels: Mapping[str, str],
    match_keys: list[str],
    mismatch_keys: list[str],
) -> LabelSelector | None:
    if raw is None:
        return None
    selector = reader.mapping(raw, where)
    requirements = [
        LabelRequirement(key, "In", frozenset([value]))
        for key, value in sorted(
            reader.strings(selector.get("matchLabels"), f"{where}.matchLabels").items()
        )
    ]
    expressions = reader.items(selector.get("matchExpressions"), f"{where}.matchExpressions")
    for index, item in enumerate(expressions):
        here = f"{where}.matchExpressions[{index}]"
        entry = reader.mapping(item, here)
        operator = reader.text(entry.get("operator"), f"{here}.operator")
        if operator not in _SELECTOR_OPERATORS:
            raise reader.fail(
                f"{here}.operator = {operator!r} is not one of In, NotIn, Exists, DoesNotExist"
            )
        values = frozenset(
            reader.text(value, f"{here}.values")
            for value in reader.items(entry.get("values"), f"{here}.values")
        )
        requirements.append(
            LabelRequirement(reader.text(entry.get("key"), f"{here}.key"), operator, values)
        )
    # The pod's own values, for the keys it names (absent keys are skipped, as the API does).
    for key in match_keys:
        if key in labels:
            requirements.append(LabelRequirement(key, "In", frozenset([labels[key]])))
    for key in mismatch_keys:
        if key in labels:
            requirements.append(LabelRequirement(key, "NotIn", frozenset([labels[key]])))
    return LabelSelector(tuple(dict.fromkeys(requirements)))


def read_label_selector(reader: FieldReader, raw: object, where: str) -> LabelSelector | None:
    """A plain ``LabelSelector`` (None when absent: it selects nothing)."""
    return _selector(reader, raw, where, {}, [], [])


def _entry_selector(
    reader: FieldReader,
    entry: Mapping[str, Any],
    here: str,
    labels: Mapping[str, str],
    *,
    mismatch: bool,
) -> LabelSelector | None:
    """A term's or constraint's ``labelSelector`` with its label keys merged in."""
    return _selector(
        reader,
        entry.get("labelSelector"),
        f"{here}.labelSelector",
        labels,
        _key_list(reader, entry.get("matchLabelKeys"), f"{here}.matchLabelKeys"),
        _key_list(reader, entry.get("mismatchLabelKeys"), f"{here}.mismatchLabelKeys")
        if mismatch
        else [],
    )


def _selects_everything(selector: Mapping[str, Any]) -> bool:
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def _key_list(reader: FieldReader, raw: object, where: str) -> list[str]:
    return [reader.text(value, where) for value in reader.items(raw, where)]


def _terms(
    reader: FieldReader, raw: object, where: str, namespace: str, labels: Mapping[str, str]
) -> tuple[AffinityTerm, ...]:
    terms = []
    for index, item in enumerate(reader.items(raw, where)):
        here = f"{where}[{index}]"
        entry = reader.mapping(item, here)
        topology_key = reader.text(entry.get("topologyKey"), f"{here}.topologyKey")
        if not topology_key:
            raise reader.fail(f"{here}.topologyKey is empty; a required term needs one")
        names = frozenset(_key_list(reader, entry.get("namespaces"), f"{here}.namespaces"))
        raw_selector = entry.get("namespaceSelector")
        namespaces: frozenset[str] | None
        namespace_selector = None
        if raw_selector is not None and _selects_everything(
            reader.mapping(raw_selector, f"{here}.namespaceSelector")
        ):
            namespaces = None  # {}: every namespace
        elif names or raw_selector is not None:
            namespaces = names
            where = f"{here}.namespaceSelector"
            namespace_selector = _selector(reader, raw_selector, where, labels, [], [])
        else:
            namespaces = frozenset([namespace])
        terms.append(
            AffinityTerm(
                selector=_entry_selector(reader, entry, here, labels, mismatch=True),
                namespaces=namespaces,
                topology_key=topology_key,
                namespace_selector=namespace_selector,
            )
        )
    return tuple(terms)


def _spread(
    reader: FieldReader, raw: object, labels: Mapping[str, str], *, soft: bool = False
) -> tuple[SpreadConstraint, ...]:
    """The DoNotSchedule constraints (or, ``soft``, the ScheduleAnyway ones)."""
    constraints = []
    for index, item in enumerate(reader.items(raw, "spec.topologySpreadConstraints")):
        here = f"spec.topologySpreadConstraints[{index}]"
        entry = reader.mapping(item, here)
        when = reader.text(entry.get("whenUnsatisfiable"), f"{here}.whenUnsatisfiable")
        if (when == "ScheduleAnyway") != soft:
            continue
        max_skew = reader.integer(entry.get("maxSkew"), f"{here}.maxSkew")
        if max_skew < 1:
            raise reader.fail(f"{here}.maxSkew = {max_skew} must be at least 1")
        topology_key = reader.text(entry.get("topologyKey"), f"{here}.topologyKey")
        if not topology_key:
            raise reader.fail(f"{here}.topologyKey is empty")
        min_domains = entry.get("minDomains")
        affinity_policy = reader.text(
            entry.get("nodeAffinityPolicy"), f"{here}.nodeAffinityPolicy", "Honor"
        )
        taints_policy = reader.text(
            entry.get("nodeTaintsPolicy"), f"{here}.nodeTaintsPolicy", "Ignore"
        )
        for name, value in (
            ("nodeAffinityPolicy", affinity_policy),
            ("nodeTaintsPolicy", taints_policy),
        ):
            if value not in ("Honor", "Ignore"):
                raise reader.fail(f"{here}.{name} = {value!r} is not Honor or Ignore")
        constraints.append(
            SpreadConstraint(
                max_skew=max_skew,
                topology_key=topology_key,
                selector=_entry_selector(reader, entry, here, labels, mismatch=False),
                min_domains=None
                if min_domains is None
                else max(1, reader.integer(min_domains, f"{here}.minDomains")),
                honor_node_affinity=affinity_policy == "Honor",
                honor_node_taints=taints_policy == "Honor",
            )
        )
    return tuple(constraints)


def read_pod_topology(
    reader: FieldReader, spec: Mapping[str, Any], namespace: str, labels: Mapping[str, str]
) -> PodTopology:
    """The required inter-pod rules of a pod's ``spec``."""
    raw_affinity = spec.get("affinity")
    if not spec.get("topologySpreadConstraints") and (
        not isinstance(raw_affinity, Mapping)
        or not (raw_affinity.get("podAffinity") or raw_affinity.get("podAntiAffinity"))
    ):
        return (
            NO_TOPOLOGY  # most pods (a malformed affinity is refused by the node affinity reader)
        )
    affinity = reader.mapping(raw_affinity, "spec.affinity")
    found: dict[str, tuple[AffinityTerm, ...]] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        where = f"spec.affinity.{kind}"
        rules = reader.mapping(affinity.get(kind), where)
        found[kind] = _terms(
            reader, rules.get(_REQUIRED), f"{where}.{_REQUIRED}", namespace, labels
        )
    topology = PodTopology(
        affinity=found["podAffinity"],
        anti_affinity=found["podAntiAffinity"],
        spread=_spread(reader, spec.get("topologySpreadConstraints"), labels),
    )
    return topology if topology else NO_TOPOLOGY


def _weighted(
    reader: FieldReader, raw: object, where: str, key: str
) -> list[tuple[int, Mapping[str, Any], str]]:
    """``(weight, entry[key], path)`` of each preferred term, weights checked."""
    found = []
    for index, item in enumerate(reader.items(raw, where)):
        here = f"{where}[{index}]"
        entry = reader.mapping(item, here)
        weight = reader.integer(entry.get("weight"), f"{here}.weight")
        if not 1 <= weight <= 100:
            raise reader.fail(f"{here}.weight = {weight} is not between 1 and 100")
        found.append((weight, reader.mapping(entry.get(key), f"{here}.{key}"), f"{here}.{key}"))
    return found


def read_preferences(
    reader: FieldReader, spec: Mapping[str, Any], namespace: str, labels: Mapping[str, str]
) -> Preferences:
    """The preferences of a pod's ``spec`` (weighed in scoring, never required)."""
    raw_affinity = spec.get("affinity")
    spread = spec.get("topologySpreadConstraints")
    if not spread and not isinstance(raw_affinity, Mapping):
        return NO_PREFERENCES
    affinity = reader.mapping(raw_affinity, "spec.affinity")
    where = f"spec.affinity.nodeAffinity.{_PREFERRED}"
    node_rules = reader.mapping(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity")
    nodes = tuple(
        (weight, parse_node_selector_term(reader, term, here))
        for weight, term, here in _weighted(reader, node_rules.get(_PREFERRED), where, "preference")
    )
    pods: dict[str, tuple[tuple[int, AffinityTerm], ...]] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        where = f"spec.affinity.{kind}.{_PREFERRED}"
        rules = reader.mapping(affinity.get(kind), f"spec.affinity.{kind}")
        weighted = _weighted(reader, rules.get(_PREFERRED), where, "podAffinityTerm")
        terms = _terms(reader, [term for _, term, _ in weighted], where, namespace, labels)
        pods[kind] = tuple(zip([weight for weight, _, _ in weighted], terms, strict=True))
    preferences = Preferences(
        nodes=nodes,
        affinity=pods["podAffinity"],
        anti_affinity=pods["podAntiAffinity"],
        spread=_spread(reader, spread, labels, soft=True),
    )
    return preferences if preferences else NO_PREFERENCES
