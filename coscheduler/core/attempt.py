"""One attempt's context: what the planner, the trial and placement share.

kube-scheduler carries one cycle's data in ``CycleState``; here an
:class:`Attempt` is built once per attempt for a group, after the planner's
first rules (the group exists, its members are enough), and handed down
instead of the same eight arguments: the snapshot, the group and its policy,
its pending members in member order, its bound ones, what each role still
needs and how many members are needed in all, and how nodes are scored.
It is frozen: a step that needs another view (one role's members, a
domain) passes that alongside, never changes the attempt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from coscheduler.api.pod import PodInfo
from coscheduler.core.group import GroupKey, GroupPolicy
from coscheduler.core.scoring import Scoring
from coscheduler.core.snapshot import Snapshot

__all__ = ["Attempt"]


@dataclass(frozen=True, slots=True)
class Attempt:
    """One group's attempt (module docstring)."""

    snapshot: Snapshot
    key: GroupKey
    policy: GroupPolicy
    #: Pending members in member order (priority, creation, name).
    pending: Sequence[PodInfo]
    bound: Sequence[PodInfo]
    #: Per role with a minimum, how many more of its members are needed.
    role_needs: Mapping[str, int]
    #: Members needed at once to reach ``minMember`` and every role's minimum.
    needed: int
    scoring: Scoring

    @property
    def members(self) -> int:
        """Pending and bound members together."""
        return len(self.pending) + len(self.bound)

    @property
    def bound_nodes(self) -> list[str]:
        """The nodes of the bound members (where a group kept in one domain is pinned).

        The snapshot's word, not the pod's ``nodeName``: a member bound by an earlier
        decision counts there (assumed) before the API server's echo names its node.
        """
        nodes = (self.snapshot.node_of(pod.uid) or pod.node_name for pod in self.bound)
        return [node for node in nodes if node is not None]
