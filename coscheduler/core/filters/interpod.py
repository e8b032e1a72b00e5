"""Filters 6 and 7: required inter-pod affinity and anti-affinity, and topology spread.

They judge a node by the pods around it, so unlike filters 1-5 they are not
computed here node by node but over all nodes at once by
:mod:`~coscheduler.core.topology`, with kube-scheduler's rules:

- **Spread** (``DoNotSchedule``): a node without the constraint's key is
  refused; otherwise the pods the selector picks in the pod's namespace are
  counted per domain over the nodes that count (they carry every
  constraint's key and, by the policies, suit the pod's node affinity and
  taints), and the node is refused when its domain's count, plus one if the
  pod matches its own selector, exceeds the smallest count by more than
  ``maxSkew`` (the smallest is 0 while fewer than ``minDomains`` domains exist).
- **Affinity**: the node must carry every term's key, and for each term some
  pod that matches *all* the terms must run in the node's domain of it. When
  no pod anywhere matches them and the pod matches its own terms, any node
  with the keys will do (the first of a series).
- **Anti-affinity**: no pod a term selects may run in the node's domain of it
  (a node without the key is not refused).
- **Existing pods' anti-affinity**: a node is refused when a running pod's
  term selects this pod and the node shares that pod's domain of the term's key.

A pod's own gang members assumed earlier in the same trial count as running,
so members constrain each other inside the one atomic decision. The reasons
are kube-scheduler's words.
"""

from __future__ import annotations

from typing import Final

SPREAD: Final = "PodTopologySpread"
SPREAD_REASON: Final = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL_REASON: Final = (
    "node(s) didn't match pod topology spread constraints (missing required label)"
)

AFFINITY: Final = "InterPodAffinity"
AFFINITY_REASON: Final = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON: Final = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REASON: Final = "node(s) didn't satisfy existing pods anti-affinity rules"
