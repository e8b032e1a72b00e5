"""Filter 2b: a node must declare every feature the pod needs.

As kube-scheduler's NodeDeclaredFeatures filter (1.37): the pod's needed
features (:mod:`~coscheduler.api.node_features`) must all be among the node's
``status.declaredFeatures``. It reads only what a node is, like filters 1-3,
and is judged with the taints, once per kind of node.
"""

from __future__ import annotations

from typing import Final

from coscheduler.api.node import NodeInfo
from coscheduler.api.pod import PodInfo

NAME: Final = "NodeDeclaredFeatures"
REASON: Final = "node(s) didn't match Pod's required features"


def check(pod: PodInfo, node: NodeInfo) -> str | None:
    """The reason the node refuses the pod, or None."""
    if pod.node_features and not node.declared_features.issuperset(pod.node_features):
        return REASON
    return None
