"""Node fit: whether a node can take a pod, and if not, why.

Filters run in this order, as kube-scheduler's default plugins do, and a node
is refused by the first that fails (its reasons are the ones counted in a
failure message):

1. :mod:`~coscheduler.core.filters.unschedulable` (``spec.unschedulable``);
2. :mod:`~coscheduler.core.filters.taints` (NoSchedule and NoExecute taints),
   then :mod:`~coscheduler.core.filters.features` (the node features the pod needs);
3. :mod:`~coscheduler.core.filters.affinity` (nodeSelector, required affinity);
4. :mod:`~coscheduler.core.filters.ports` (host ports);
5. :mod:`~coscheduler.core.filters.fit` (requests against free capacity; all
   shortfalls are reported).

Filters 1-3 read only what a node *is* (labels, taints, cordon, declared
features), never what
runs on it; the snapshot relies on that to evaluate them once per kind of node
rather than once per node. A pod with ``spec.nodeName`` set is already bound
and never reaches the filters: it counts as placed.

:func:`check_node` is the plain, one-node version of the pipeline. The
snapshot computes the same answers for all nodes at once; tests hold the two
to agreement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo
from coscheduler.core.filters import affinity, features, fit, ports, taints, unschedulable

__all__ = ["Refusal", "check_node", "check_static"]


class Refusal(NamedTuple):
    """Why a node refuses a pod: the first failing filter and its reasons."""

    filter: str
    reasons: list[str]


def check_static(pod: PodInfo, node: NodeInfo) -> Refusal | None:
    """Filters 1-3: the refusal of the first that fails (one reason), or None."""
    for name, check in (
        (unschedulable.NAME, unschedulable.check),
        (taints.NAME, taints.check),
        (features.NAME, features.check),
        (affinity.NAME, affinity.check),
    ):
        reason = check(pod, node)
        if reason is not None:
            return Refusal(name, [reason])
    return None


def check_node(
    pod: PodInfo,
    node: NodeInfo,
    allocated: Mapping[str, int],
    used_ports: ports.PortSet | None = None,
) -> Refusal | None:
    """Filters 1-5 on one node: the refusal of the first that fails, or None."""
    static = check_static(pod, node)
    if static is not None:
        return static
    if used_ports is not None and used_ports.conflicts(pod.host_ports):
        return Refusal(ports.NAME, [ports.REASON])
    shortfalls = fit.insufficient(pod.requests, node.allocatable, allocated)
    if shortfalls:
        return Refusal(fit.NAME, shortfalls)
    return None
