"""What a group refused for room waits for, and which changes can let it in.

kube-scheduler has each plugin that rejects a pod say which cluster events
could make it schedulable (queueing hints), so a waiting pod is woken only by
those. Here the rule that refused a gang for room is one: some member must find
a node that passes filters 1-5 (cordon, taints, declared features, selector and
affinity, host ports, free resources; :mod:`~coscheduler.core.filters`). So a
group refused for room keeps, beside it in the queue, what it waits for
(:class:`Wants`: one pending member of each shape, and how many members it
still needs), and a change wakes it only when (numbered rule)

1. a node where room was freed, or that was added or changed, now passes
   filters 1-5 for one of its members (the same checks that refused it, on
   that node); and
2. a group of one shape: the cluster has room for as many members of that
   shape as it still needs (necessary for any placement), and for a group kept
   in one domain (``PodGroup.spec.topology``), one domain of its widest level
   has (its members never land beyond that level: room spread over racks
   cannot admit a gang required in one).

A node whose labels change may move a whole domain: the members bound on it
pin their group to its new domain, whose other nodes nothing opened. So a
relabelled node wakes every group kept in one domain, whatever rule 1 says of
that node (relabels are rare; the scheduler does it, :meth:`Scheduler._wake_by_hints`).

Devices (DRA) and volume claims are not in filters 1-5: a group whose members
use them is woken as well by a change of slices or classes, or a claim that
gives devices back (its allocation gone or moved, a consumer gone, or deleted
while allocated; not one allocated, which takes them), or a change of volumes
(:class:`~coscheduler.core.queue.GroupQueue`). A new claim frees nothing: it
wakes only the groups of the pods that name it. A group whose members
carry inter-pod rules (spread, pod affinity) is given no hint: a pod placed or
gone on any node of a domain can help it, so it backs off as before; so do
one refused for any reason but room and one a victim search may yet find
room for (preemption, whose answer changes as Bindings land and time
passes). A pod leaving with anti-affinity terms may free every node of its
domains: it wakes every group refused for room.

Each check is made once per shape of member per batch of changes
(:func:`woken`), so its cost follows the shapes waiting, not the groups: the
changed nodes first, and the whole cluster (a NumPy pass) only for a shape
one of them takes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from coscheduler.api.pod import PodInfo
from coscheduler.core.group import GroupKey
from coscheduler.core.snapshot import Snapshot

__all__ = ["Wants", "wants_of", "woken"]


@dataclass(frozen=True, slots=True)
class Wants:
    """What a group refused for room waits for (module docstring)."""

    #: One pending member of each shape (:attr:`PodInfo.shape`).
    shapes: tuple[PodInfo, ...]
    #: Members it must still place to be admitted (at least 1).
    needed: int
    #: Its members use devices (DRA) or volume claims: such changes wake it too.
    devices: bool = False
    volumes: bool = False
    #: The widest node label key whose one domain must hold the needed members (rule 2).
    within: str | None = None


def wants_of(
    pending: Sequence[PodInfo], bound: int, min_member: int, within: str | None = None
) -> Wants | None:
    """What the group waits for after a refusal for room; None: no hint describes it."""
    if not pending or any(pod.topology for pod in pending):
        return None
    shapes = {pod.shape: pod for pod in pending}
    return Wants(
        shapes=tuple(shapes.values()),
        needed=max(1, min(min_member - bound, len(pending))),
        devices=any(pod.device_claims for pod in pending),
        volumes=any(pod.claims for pod in pending),
        within=within,
    )


def woken(
    snapshot: Snapshot, parked: Iterable[tuple[GroupKey, Wants]], opened: Iterable[str]
) -> list[GroupKey]:
    """The parked groups a change on the ``opened`` nodes can help (rules 1-2)."""
    slots = np.array(
        [slot for name in opened if (slot := snapshot.slot_of(name)) is not None], dtype=np.intp
    )
    if not len(slots):
        return []
    verdicts: dict[tuple[tuple[object, ...], str | None], tuple[bool, int]] = {}
    found = []
    for key, wants in parked:
        for pod in wants.shapes:
            asked = (pod.shape, wants.within)
            verdict = verdicts.get(asked)
            if verdict is None:
                verdict = verdicts[asked] = _verdict(snapshot, pod, slots, wants.within)
            admitted, room = verdict
            if admitted and (len(wants.shapes) > 1 or room >= wants.needed):
                found.append(key)
                break
    return found


def _verdict(
    snapshot: Snapshot, pod: PodInfo, slots: npt.NDArray[np.intp], within: str | None
) -> tuple[bool, int]:
    """Whether an ``opened`` node passes filters 1-5 for the pod, and how many such pods
    the cluster has room for, or the roomiest domain of ``within`` (0 when none does: the
    whole cluster is read only then)."""
    sized = any(amount > 0 for amount in snapshot.request(pod).values())
    static = slots[snapshot.static_mask(pod)[slots]]
    if not len(static) or (sized and not (snapshot.room(pod, static) > 0).any()):
        return False, 0
    every = np.flatnonzero(snapshot.fits(pod))
    if not sized:
        return True, len(every) if pod.host_ports else 1 << 62
    room = snapshot.room(pod, every)
    if within is None:
        return True, int(room.sum())
    ids = snapshot.topology.domains(within, snapshot.slot_count)[every]
    labelled = ids >= 0
    if not labelled.any():
        return True, 0
    return True, int(np.bincount(ids[labelled], weights=room[labelled]).max())
