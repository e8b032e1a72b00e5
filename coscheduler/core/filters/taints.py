"""Filter 2: a node's NoSchedule and NoExecute taints must all be tolerated.

As kube-scheduler's TaintToleration filter. ``PreferNoSchedule`` only
affects scoring there, and is ignored here. A toleration tolerates a taint
when, in order:

1. its effect is empty or equal to the taint's;
2. its key is empty (which the API allows only with ``Exists``: every key)
   or equal to the taint's;
3. its operator is ``Exists``, or ``Equal`` and the values are equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from coscheduler.api.node import NodeInfo, Taint
from coscheduler.api.pod import PodInfo, Toleration

NAME: Final = "TaintToleration"
FILTERED_EFFECTS: Final = frozenset({"NoSchedule", "NoExecute"})


def reason(taint: Taint) -> str:
    """kube-scheduler's wording: ``node(s) had untolerated taint {key: value}``."""
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether one toleration tolerates one taint (rules 1-3)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return toleration.value == taint.value


def tolerated(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(tolerates(toleration, taint) for toleration in tolerations)


def untolerated(tolerations: tuple[Toleration, ...], taints: Iterable[Taint]) -> Taint | None:
    """The first filtered taint that no toleration tolerates, or None."""
    for taint in taints:
        if taint.effect in FILTERED_EFFECTS and not tolerated(tolerations, taint):
            return taint
    return None


def check(pod: PodInfo, node: NodeInfo) -> str | None:
    """The reason the node refuses the pod, or None."""
    taint = untolerated(pod.tolerations, node.taints)
    return None if taint is None else reason(taint)
