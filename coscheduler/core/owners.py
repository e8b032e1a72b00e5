"""Membership by owner: the pods of a Job that asks for a gang join the Job's group.

A pod carries no label for it; its controlling owner reference decides
(:mod:`coscheduler.api.owners` reads the Job). The rule, for a pod whose
controlling owner is of a gang owner kind (a Job):

1. the Job is known and asks for a gang (its annotation, valid or not): the
   pod is a member of the group named after the Job;
2. the Job is known and does not: the pod is what it was without this rule
   (a gang of one, unless a label names a group);
3. the Job is not known (its event not seen yet, or it is gone): the pod is
   a member of the group named after the Job, which waits. A pod is never
   placed alone before its owner is known to want no gang: its watch event can
   arrive before its Job's, and a gang must not lose a member to that race.

Under Volcano's scheduler name the same rule holds for the owners whose
``scheduling.volcano.sh/group-min-member`` Volcano's controller reads
(ReplicaSets, StatefulSets; a Job without our annotation): the group is the
one Volcano names ``podgroup-<owner uid>``
(:mod:`~coscheduler.api.adapters.volcano_owners`).

A group label on the pod wins over all three (``GroupKey.of_pod``).
"""

from __future__ import annotations

from collections.abc import Mapping

from coscheduler.api.adapters import volcano_owners
from coscheduler.api.owners import GANG_OWNER_KINDS, GangOwner
from coscheduler.api.pod import PodInfo

__all__ = ["owner_group"]


def owner_group(
    pod: PodInfo, owners: Mapping[str, GangOwner], *, volcano: bool = False
) -> str | None:
    """The name of the group the pod joins through its owner (rules 1-3), or None;
    ``volcano``: we stand in for Volcano's scheduler, whose owner kinds count too."""
    kinds = GANG_OWNER_KINDS | volcano_owners.OWNER_KINDS.keys() if volcano else GANG_OWNER_KINDS
    if pod.owner_kind not in kinds or not pod.owner_uid or not pod.owner_name:
        return None
    owner = owners.get(pod.owner_uid)
    if owner is None:
        if pod.owner_kind in GANG_OWNER_KINDS:
            return pod.owner_name
        return volcano_owners.group_name(pod.owner_uid)
    return owner.group_name if owner.wants_gang else None
