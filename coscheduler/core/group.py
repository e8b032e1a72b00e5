"""Groups as the core sees them: a key, and a plain policy.

The runtime builds a :class:`GroupPolicy` from the PodGroup model (or, for a
pod without a group, :meth:`GroupPolicy.lone`); the core never reads the
pydantic model, so the two can evolve apart. A lone pod is a gang of one: it
goes through the same queue and planner as any group.

A key's kind keeps apart groups that may share a name: a PodGroup (ours, or
another project's of the same shape), a lone pod, Kubernetes' own PodGroup
(``scheduling.k8s.io``, which a pod names by ``spec.schedulingGroup``, never
by label), and a gang of a native 1.35 Workload (whose name is
``workload/podGroup``, plus ``/replicaKey`` when the pods give one; ``/`` is
in no PodGroup name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from coscheduler.api.native_podgroup import PodGroupClaim
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import DEFAULT_QUEUE
from coscheduler.api.queue import pod_queue_name
from coscheduler.api.reasons import Reason
from coscheduler.api.workload_ref import WorkloadRef

__all__ = [
    "KIND_COMPOSITE",
    "KIND_KUEUE",
    "KIND_NATIVE_POD_GROUP",
    "KIND_POD",
    "KIND_POD_GROUP",
    "KIND_WORKLOAD",
    "GroupKey",
    "GroupPolicy",
]

KIND_POD_GROUP: Final = "PodGroup"
#: The kind of a lone pod's key: the pod is its own gang of one.
KIND_POD: Final = "Pod"
#: The kind of a native Workload's gang (one per podGroup and replica key).
KIND_WORKLOAD: Final = "Workload"
#: The kind of Kubernetes' own PodGroup (``scheduling.k8s.io``, 1.36 and later).
KIND_NATIVE_POD_GROUP: Final = "PodGroup.scheduling.k8s.io"
#: The kind of a CompositePodGroup's gang (``scheduling.k8s.io``, 1.37): its
#: child PodGroups are its roles.
KIND_COMPOSITE: Final = "CompositePodGroup.scheduling.k8s.io"
#: The kind of a gang Kueue admitted: its ``Workload`` (``kueue.x-k8s.io``), its
#: pod sets the roles.
KIND_KUEUE: Final = "Workload.kueue.x-k8s.io"


class GroupKey(NamedTuple):
    """Which group: a PodGroup, or a lone pod (``kind == "Pod"``)."""

    namespace: str
    name: str
    kind: str = KIND_POD_GROUP

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def lone(self) -> bool:
        return self.kind == KIND_POD

    @property
    def title(self) -> str:
        """How messages name the group: ``group ns/g``, ``pod ns/p``, or a Workload's gang."""
        if self.kind == KIND_WORKLOAD:
            return WorkloadRef.from_gang_name(self.name).describe(self.namespace)
        if self.kind == KIND_NATIVE_POD_GROUP:
            return f"PodGroup {self} (scheduling.k8s.io)"
        if self.kind == KIND_COMPOSITE:
            return f"CompositePodGroup {self}"
        if self.kind == KIND_KUEUE:
            return f"Kueue Workload {self}"
        return f"{'pod' if self.lone else 'group'} {self}"

    @classmethod
    def of_pod(cls, pod: PodInfo) -> GroupKey:
        """The key of the group the pod belongs to (its own key when it has none).

        A group label wins (it was written for us); then the group its owner
        gives it (:mod:`~coscheduler.core.owners`: a Job annotated for us, whose
        pods 1.37's ``WorkloadWithJob`` also puts in a native group, basic
        unless the Job asked otherwise); then the composite gang the runtime
        put its native PodGroup in; then the Kueue Workload that admitted it; then
        ``spec.schedulingGroup`` (1.36 and later) or ``spec.workloadRef`` (1.35).
        """
        if pod.group is not None:
            return cls(pod.namespace, pod.group)
        if pod.owner_group is not None:
            return cls(pod.namespace, pod.owner_group)
        if pod.kueue_workload is not None:
            return cls(pod.namespace, pod.kueue_workload, KIND_KUEUE)
        if pod.composite is not None:
            return cls(pod.namespace, pod.composite, KIND_COMPOSITE)
        if pod.scheduling_group is not None:
            return cls(pod.namespace, pod.scheduling_group, KIND_NATIVE_POD_GROUP)
        if pod.workload is not None:
            return cls(pod.namespace, pod.workload.gang_name, KIND_WORKLOAD)
        return cls(pod.namespace, pod.name, KIND_POD)


@dataclass(frozen=True, slots=True)
class GroupPolicy:
    """What the planner must honour for one group.

    ``min_resources`` is in the scheduler's integers (millicores, bytes);
    ``priority`` None means "the highest pending member's priority";
    ``created`` is the group's creation time in seconds since the epoch.
    """

    namespace: str
    name: str
    min_member: int = 1
    role_minimums: Mapping[str, int] = field(default_factory=dict)
    min_resources: Mapping[str, int] = field(default_factory=dict)
    priority: int | None = None
    schedule_timeout_seconds: int | None = None
    created: float = 0.0
    queue: str = DEFAULT_QUEUE
    kind: str = KIND_POD_GROUP
    #: Node label keys, narrow to wide: the needed members land within one
    #: domain of the narrowest that holds them, never beyond the last.
    topology_levels: tuple[str, ...] = ()
    #: Per role, its own levels: the role's needed members within one domain.
    role_topology: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Not preempted before it has run this long (the PodGroup's
    #: ``scheduling.sigs.k8s.io/min-run-seconds`` annotation).
    min_run_seconds: float | None = None
    #: A victim only whole, never one member above ``min_member`` at a time
    #: (a native PodGroup's ``disruptionMode: all``).
    evict_whole: bool = False
    #: Each role may also be a victim whole on its own, the others running on
    #: (a CompositePodGroup's ``disruptionMode: single``: its children apart).
    roles_apart: bool = False
    #: Why the group never evicts lower priorities to be placed (its PodGroup's
    #: ``preemptionPolicy: Never``; Kueue preempting for the Workloads it admits); None: it may.
    no_preemption: str | None = None
    #: Why the group may not be placed as it is (a field not honoured yet, members
    #: under two schedulers), with the reason: it waits, saying so.
    refused: tuple[Reason, str] | None = None
    #: What creates the members (``Job ns/name``) and the most pods it runs at
    #: once, when known: a gang larger than that never gathers, and is told so.
    creator: tuple[str, int] | None = None
    #: A native PodGroup's ``spec.resourceClaims``: allocated once for the gang and
    #: reserved for the group (``consumer``: its name and uid), not for its members.
    shared_claims: tuple[PodGroupClaim, ...] = ()
    consumer: tuple[str, str] | None = None

    @property
    def key(self) -> GroupKey:
        return GroupKey(self.namespace, self.name, self.kind)

    @classmethod
    def lone(cls, pod: PodInfo) -> GroupPolicy:
        """The policy of a pod without a group: a gang of one, created with the pod."""
        return cls(
            namespace=pod.namespace,
            name=pod.name,
            min_member=1,
            created=pod.created,
            queue=pod_queue_name(pod.labels, pod.volcano_queue),
            kind=KIND_POD,
        )
