"""Filter 1: a cordoned node (``spec.unschedulable``) takes no new pods.

As kube-scheduler's NodeUnschedulable: unless the pod tolerates the taint
``node.kubernetes.io/unschedulable:NoSchedule`` (DaemonSets do).
"""

from __future__ import annotations

from typing import Final

from coscheduler.api.node import NodeInfo, Taint
from coscheduler.api.pod import PodInfo
from coscheduler.core.filters.taints import tolerated

NAME: Final = "NodeUnschedulable"
REASON: Final = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT: Final = Taint(
    key="node.kubernetes.io/unschedulable", value="", effect="NoSchedule"
)


def check(pod: PodInfo, node: NodeInfo) -> str | None:
    """The reason the node refuses the pod, or None."""
    if node.unschedulable and not tolerated(pod.tolerations, UNSCHEDULABLE_TAINT):
        return REASON
    return None
