"""A PersistentVolume's zone and region labels, as node selector terms.

kube-scheduler's VolumeZone filter reads the topology labels of the volume a
pod's claim is bound to (``topology.kubernetes.io/zone`` and ``/region``, and
their ``failure-domain.beta.kubernetes.io`` forerunners): a node may take the
pod when it has none of these labels (a single-zone cluster), or when, for
each label of the volume, the node's same label (for a beta key, else its GA
key) is one of the volume's values (``a__b`` lists several). Written as terms
of a node selector, the rule joins the volume's node affinity (every one must
hold) and is judged by the same filter.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import product
from typing import Final

from coscheduler.api.node_selector import NodeSelectorRequirement, NodeSelectorTerm

__all__ = ["TOPOLOGY_LABELS", "zone_terms"]

_BETA_ZONE: Final = "failure-domain.beta.kubernetes.io/zone"
_BETA_REGION: Final = "failure-domain.beta.kubernetes.io/region"
_ZONE: Final = "topology.kubernetes.io/zone"
_REGION: Final = "topology.kubernetes.io/region"
#: The labels VolumeZone reads, in its order; a beta key falls back to its GA key on nodes.
TOPOLOGY_LABELS: Final = (_BETA_ZONE, _BETA_REGION, _ZONE, _REGION)
_GA_OF: Final = {_BETA_ZONE: _ZONE, _BETA_REGION: _REGION}
_MULTI_ZONE: Final = "__"


def zone_terms(labels: Mapping[str, str]) -> tuple[NodeSelectorTerm, ...] | None:
    """The nodes a volume with these labels can be used from; None when they say nothing."""
    choices: list[list[tuple[NodeSelectorRequirement, ...]]] = []
    for key in TOPOLOGY_LABELS:
        if key not in labels:
            continue
        values = tuple(sorted({zone.strip() for zone in labels[key].split(_MULTI_ZONE)}))
        if "" in values:
            continue  # VolumeZone passes over a label it cannot read
        own = NodeSelectorRequirement(key, "In", values)
        ways: list[tuple[NodeSelectorRequirement, ...]] = [(own,)]
        if key in _GA_OF:
            absent = NodeSelectorRequirement(key, "DoesNotExist")
            ways.append((absent, NodeSelectorRequirement(_GA_OF[key], "In", values)))
        choices.append(ways)
    if not choices:
        return None
    unlabelled = NodeSelectorTerm(
        tuple(NodeSelectorRequirement(key, "DoesNotExist") for key in TOPOLOGY_LABELS)
    )
    labelled = (
        NodeSelectorTerm(tuple(r for way in ways for r in way)) for ways in product(*choices)
    )
    return (unlabelled, *labelled)
