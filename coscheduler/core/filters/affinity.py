"""Filter 3: ``spec.nodeSelector``, required node affinity, and the volumes' node affinity.

As kube-scheduler's NodeAffinity filter, both must hold:

1. every ``nodeSelector`` entry equals the node's label;
2. with required node affinity, at least one term matches (an empty list of
   terms matches no node); a term matches when all its ``matchExpressions``
   hold on the node's labels and all its ``matchFields`` on the node's fields
   (only ``metadata.name`` exists). A term with neither matches no node.

3. every PersistentVolume the pod's claims are bound to can be reached from
   the node: one of its ``nodeAffinity.required`` terms matches (kube-scheduler's
   VolumeBinding, reason :data:`VOLUME_REASON`).

Operators: ``In`` (present and among the values), ``NotIn`` (absent, or not
among them), ``Exists``, ``DoesNotExist``, ``Gt`` and ``Lt`` (present, an
integer, and greater or less than the single value).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from coscheduler.api.node import NodeInfo
from coscheduler.api.node_selector import NodeSelectorRequirement, NodeSelectorTerm
from coscheduler.api.pod import PodInfo

NAME: Final = "NodeAffinity"
REASON: Final = "node(s) didn't match Pod's node affinity/selector"
NAME_FIELD: Final = "metadata.name"
VOLUME_NAME: Final = "VolumeBinding"
VOLUME_REASON: Final = "node(s) had volume node affinity conflict"
#: kube-scheduler's NodeVolumeLimits (counted in the snapshot, by CSI driver).
ATTACH_NAME: Final = "NodeVolumeLimits"
ATTACH_REASON: Final = "node(s) exceed max volume count"

_INTEGER: Final = re.compile(r"[+-]?[0-9]+")


def requirement_holds(requirement: NodeSelectorRequirement, values: Mapping[str, str]) -> bool:
    """Whether one requirement holds on a node's labels (or fields)."""
    operator = requirement.operator
    present = requirement.key in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator == "In":
        return present and values[requirement.key] in requirement.values
    if operator == "NotIn":
        return not present or values[requirement.key] not in requirement.values
    if not present or not _INTEGER.fullmatch(values[requirement.key]):
        return False
    actual, bound = int(values[requirement.key]), int(requirement.values[0])
    return actual > bound if operator == "Gt" else actual < bound


def term_matches(term: NodeSelectorTerm, labels: Mapping[str, str], name: str) -> bool:
    """Whether one term holds on a node (a term with no requirement matches none)."""
    if not term.match_expressions and not term.match_fields:
        return False
    fields = {NAME_FIELD: name}
    return all(requirement_holds(r, labels) for r in term.match_expressions) and all(
        requirement_holds(r, fields) for r in term.match_fields
    )


def _any_term(terms: tuple[NodeSelectorTerm, ...], labels: Mapping[str, str], name: str) -> bool:
    return any(term_matches(term, labels, name) for term in terms)


def matches(pod: PodInfo, labels: Mapping[str, str], node_name: str) -> bool:
    """Rules 1-3 on a node's labels and name."""
    return node_matches(pod, labels, node_name) and volumes_reachable(pod, labels, node_name)


def node_matches(pod: PodInfo, labels: Mapping[str, str], node_name: str) -> bool:
    """Rules 1 and 2: the pod's own node selector and affinity."""
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return False
    terms = pod.required_affinity
    return terms is None or _any_term(terms, labels, node_name)


def volumes_reachable(pod: PodInfo, labels: Mapping[str, str], node_name: str) -> bool:
    """Rule 3: every bound volume of the pod can be reached from the node."""
    return all(_any_term(terms, labels, node_name) for terms in pod.volume_affinity)


def selects_all(pod: PodInfo) -> bool:
    """True when nothing of the pod's or its volumes' narrows the nodes by label."""
    return not pod.node_selector and pod.required_affinity is None and not pod.volume_affinity


def uses_node_name(pod: PodInfo) -> bool:
    """True when the pod's or its volumes' affinity reads the node's name (``matchFields``)."""
    terms = [*(pod.required_affinity or ()), *(t for ts in pod.volume_affinity for t in ts)]
    return any(term.match_fields for term in terms)


def verdict_key(pod: PodInfo) -> tuple[object, ...]:
    """What rules 1-3 read of the pod: equal keys, equal verdicts on every node."""
    key: tuple[object, ...] = pod.placement[:2]
    return (*key, pod.volume_affinity) if pod.volume_affinity else key


def check(pod: PodInfo, node: NodeInfo) -> str | None:
    """The reason the node refuses the pod, or None."""
    return None if matches(pod, node.labels, node.name) else REASON
