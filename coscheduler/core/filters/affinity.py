"""Filter 3: ``spec.nodeSelector`` and required node affinity.

As kube-scheduler's NodeAffinity filter, both must hold:

1. every ``nodeSelector`` entry equals the node's label;
2. with required node affinity, at least one term matches (an empty list of
   terms matches no node); a term matches when all its ``matchExpressions``
   hold on the node's labels and all its ``matchFields`` on the node's fields
   (only ``metadata.name`` exists). A term with neither matches no node.

Operators: ``In`` (present and among the values), ``NotIn`` (absent, or not
among them), ``Exists``, ``DoesNotExist``, ``Gt`` and ``Lt`` (present, an
integer, and greater or less than the single value).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import NodeSelectorRequirement, PodInfo

NAME: Final = "NodeAffinity"
REASON: Final = "node(s) didn't match Pod's node affinity/selector"
NAME_FIELD: Final = "metadata.name"

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


def matches(pod: PodInfo, labels: Mapping[str, str], node_name: str) -> bool:
    """Rules 1 and 2 on a node's labels and name."""
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return False
    terms = pod.required_affinity
    if terms is None:
        return True
    fields = {NAME_FIELD: node_name}
    for term in terms:
        if not term.match_expressions and not term.match_fields:
            continue
        if all(requirement_holds(r, labels) for r in term.match_expressions) and all(
            requirement_holds(r, fields) for r in term.match_fields
        ):
            return True
    return False


def selects_all(pod: PodInfo) -> bool:
    """True when the pod has neither a nodeSelector nor required affinity."""
    return not pod.node_selector and pod.required_affinity is None


def uses_node_name(pod: PodInfo) -> bool:
    """True when the pod's affinity reads the node's name (``matchFields``)."""
    return pod.required_affinity is not None and any(
        term.match_fields for term in pod.required_affinity
    )


def check(pod: PodInfo, node: NodeInfo) -> str | None:
    """The reason the node refuses the pod, or None."""
    return None if matches(pod, node.labels, node.name) else REASON
