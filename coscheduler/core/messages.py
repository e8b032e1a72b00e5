"""Every failure message of the core, rendered in one place.

Why one place: the same facts reach a person through a PodGroup condition,
events on the group and on each pod, and logs. Written here once, they read
the same everywhere and follow kube-scheduler's style, numbers first, so that
people and tools used to ``0/N nodes are available: ...`` read ours as well.

Rules for the node histogram:

1. each node is counted under the reasons of the first filter refusing it
   (a node short of two resources counts under both);
2. reasons are listed by count, largest first, then by wording;
3. the message ends with a full stop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from coscheduler.api.pod import PodInfo
from coscheduler.core.diagnosis import Diagnosis
from coscheduler.core.group import (
    KIND_COMPOSITE,
    KIND_KUEUE,
    KIND_NATIVE_POD_GROUP,
    KIND_WORKLOAD,
    GroupKey,
)
from coscheduler.core.resources import format_amounts

__all__ = [
    "creator_too_small",
    "group_not_found",
    "min_resources_exceed",
    "not_enough_members",
    "subject",
    "timed_out",
    "unavailable",
    "unsupported",
]


def subject(group: GroupKey, pods: int) -> str:
    """``4 pods of group default/train``, or ``pod default/web-0`` for a lone pod."""
    if group.lone:
        return group.title
    return f"{pods} pod{'s' if pods != 1 else ''} of {group.title}"


def unavailable(diagnosis: Diagnosis, group: GroupKey, pods: int, placed: int = 0) -> str:
    """``0/100 nodes are available for 4 pods of group default/train: 96 Insufficient cpu.``"""
    histogram = sorted(diagnosis.reasons.items(), key=lambda item: (-item[1], item[0]))
    text = f"{diagnosis.available}/{diagnosis.nodes} nodes are available for {subject(group, pods)}"
    if histogram:
        text += ": " + ", ".join(f"{count} {reason}" for reason, count in histogram)
    if placed:
        text += f" (after {placed} of them were placed)"
    return text + "."


def no_domain(
    group: GroupKey, needed: int, widest: str, closest: str | None = None, placed: int = 0
) -> str:
    """``no topology.kubernetes.io/zone holds the 8 needed members of group ns/g; closest: ...``."""
    text = f"no domain of {widest} holds the {needed} needed members of {group.title}"
    if closest is None:
        return text + ": no node carries that label (or the members already bound span domains)."
    return text + f"; closest: {closest}, with room for {placed} of {needed}."


def volumes_not_ready(pods: Sequence[PodInfo]) -> str:
    """``pod ns/w-0: persistentvolumeclaim "data" not found`` for the first, and how many more."""
    first = pods[0]
    text = f"pod {first.key}: {first.volume_wait}"
    if len(pods) > 1:
        text += f" (and {len(pods) - 1} more member(s) wait for their volumes)"
    return text


def not_enough_members(
    existing: int,
    minimum: int,
    roles: Mapping[str, tuple[int, int]] | None = None,
    role_word: str = "role",
) -> str:
    """``3/4 members exist``, then each short role: ``role worker: 1/2 members exist``
    (a composite's roles are its child PodGroups: ``role_word`` names them so)."""
    parts = []
    if existing < minimum:
        parts.append(f"{existing}/{minimum} members exist")
    for role in sorted(roles or {}):
        have, need = (roles or {})[role]
        if have < need:
            parts.append(f"{role_word} {role}: {have}/{need} members exist")
    return "; ".join(parts)


def undeclared_roles(counts: Mapping[str, int], role_word: str = "role") -> str:
    """``; 2 members name role ps, which the group does not declare (they count toward its
    minimum only)``, or empty when none do."""
    if not counts:
        return ""
    named = ", ".join(sorted(counts))
    total = sum(counts.values())
    plural = "s" if len(counts) > 1 else ""
    return (
        f"; {total} member{'s name' if total != 1 else ' names'} {role_word}{plural} {named}, "
        "which the group does not declare (they count toward its minimum only)"
    )


def min_resources_exceed(wanted: Mapping[str, int], free: Mapping[str, int]) -> str:
    """``minResources cpu=64 exceeds free capacity cpu=40`` (only the short resources)."""
    short = sorted(name for name, amount in wanted.items() if amount > free.get(name, 0))
    return (
        f"minResources {format_amounts({n: wanted[n] for n in short})} exceeds free "
        f"capacity {format_amounts({n: free.get(n, 0) for n in short})}"
    )


def group_not_found(group: GroupKey, pods: int) -> str:
    """``PodGroup default/train does not exist; 3 pods name it``.

    A Workload's gang: the Workload is not known, or has no such podGroup,
    or reads in a version coscheduler does not (the log at start says which).
    """
    count = f"{pods} pod{'s' if pods != 1 else ''} name it"
    if group.kind == KIND_WORKLOAD:
        return f"{group.title} is not known (no such Workload, or no such podGroup in it); {count}"
    if group.kind == KIND_NATIVE_POD_GROUP:
        return f"{group.title} does not exist (or its API is not served); {count}"
    if group.kind == KIND_COMPOSITE:
        return (
            f"{group.title}, the parent their PodGroups name, does not exist (or its API, "
            f"scheduling.k8s.io/v1alpha3, is not served); {count}"
        )
    if group.kind == KIND_KUEUE:
        return f"{group.title} is not known, or not admitted by Kueue; {count}"
    return f"PodGroup {group} does not exist; {count}"


def timed_out(seconds: int, message: str) -> str:
    """The timeout, with the reason the group did not fit in that time."""
    return f"not scheduled within scheduleTimeoutSeconds={seconds}: {message}"


def unsupported(pods: Sequence[PodInfo]) -> str:
    """``pod ns/w-0 asks for spec.affinity...: coscheduler does not honour this yet, ...``.

    Names the first such member only: a count would change with every member
    created and rewrite every waiting pod's condition each time.
    """
    first = min(pods, key=lambda pod: pod.name)
    return (
        f"pod {first.key} asks for {', '.join(first.asks.unsupported)}: coscheduler does not "
        "honour this yet, so the pod is not placed, nor its gang (see the README's pod fields)"
    )


def creator_too_small(existing: int, minimum: int, creator: str, most: int) -> str:
    """A gang its creator can never fill: ``3/4 members exist, and Job ns/train runs ...``."""
    return (
        f"{existing}/{minimum} members exist, and {creator} runs at most {most} "
        f"pod{'s' if most != 1 else ''} at once (its parallelism, capped by the completions "
        f"left): the gang of {minimum} can never gather; lower minCount to {most} or raise "
        "the Job's parallelism"
    )
