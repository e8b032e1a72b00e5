"""Where a pod's persistent volumes let it go, as kube-scheduler's VolumeBinding judges.

The scheduler keeps the cluster's claims, volumes and storage classes here
and, just before a group is planned, *resolves* each pending member that
uses claims (:meth:`VolumeIndex.resolve`): the pod gets the node affinity of
every volume its bound claims use (a node filter, with kube-scheduler's
reason "node(s) had volume node affinity conflict"), or a reason it cannot
be placed anywhere now, in kube-scheduler's words where it has them:

- a claim that does not exist, or is being deleted;
- a claim bound to a volume that does not exist;
- a claim not bound yet, of a class that binds at once (``Immediate``, or
  no class): the volume controller binds it, then the pod can go;
- a ``ReadWriteOncePod`` claim another pod uses.

A claim that waits for its first consumer (``WaitForFirstConsumer``) and is
not bound yet would need the scheduler to choose its node and tell the
provisioner before binding any member: coscheduler does not do that yet, so
such a pod is an unsupported field (:mod:`~coscheduler.api.asks`), named.
A volume without node affinity (NFS, most ReadWriteMany volumes) costs nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from coscheduler.api.asks import Asks
from coscheduler.api.node_selector import NodeSelectorTerm
from coscheduler.api.pod import PodInfo
from coscheduler.api.volumes import ClaimInfo, StorageClassInfo, VolumeInfo

__all__ = ["VolumeIndex"]

#: kube-scheduler's words for a claim the volume controller has yet to bind.
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
MISSING_VOLUME = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ONCE_PER_POD_IN_USE = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)


class VolumeIndex:
    """The claims, volumes and storage classes of the cluster, by key."""

    def __init__(self) -> None:
        self.claims: dict[str, ClaimInfo] = {}
        self.volumes: dict[str, VolumeInfo] = {}
        self.classes: dict[str, StorageClassInfo] = {}

    def upsert_claim(self, claim: ClaimInfo) -> None:
        self.claims[claim.key] = claim

    def remove_claim(self, key: str) -> None:
        self.claims.pop(key, None)

    def upsert_volume(self, volume: VolumeInfo) -> None:
        self.volumes[volume.name] = volume

    def remove_volume(self, name: str) -> None:
        self.volumes.pop(name, None)

    def upsert_class(self, storage_class: StorageClassInfo) -> None:
        self.classes[storage_class.name] = storage_class

    def remove_class(self, name: str) -> None:
        self.classes.pop(name, None)

    def resolve(self, pod: PodInfo, used_by_other: Callable[[str, str], bool]) -> PodInfo:
        """The pod with its volumes' verdict filled in (itself when it uses no claim).

        ``used_by_other(claim_key, uid)`` tells whether another placed pod uses a claim.
        """
        if not pod.claims:
            return pod
        affinity: list[tuple[NodeSelectorTerm, ...]] = []
        waits: list[str] = []
        unsupported: list[str] = []
        for name in dict.fromkeys(pod.claims):
            claim = self.claims.get(f"{pod.namespace}/{name}")
            if claim is None:
                waits.append(f'persistentvolumeclaim "{name}" not found')
            elif claim.deleting:
                waits.append(f'persistentvolumeclaim "{name}" is being deleted')
            elif claim.once_per_pod and used_by_other(claim.key, pod.uid):
                waits.append(f'{ONCE_PER_POD_IN_USE} (claim "{name}")')
            elif claim.volume_name is not None:
                volume = self.volumes.get(claim.volume_name)
                if volume is None:
                    waits.append(f'{MISSING_VOLUME} (claim "{name}")')
                elif volume.node_affinity is not None:
                    affinity.append(volume.node_affinity)
            elif self._waits_for_first_consumer(claim):
                unsupported.append(
                    f'claim "{name}" (unbound, its class binds on first consumer: '
                    "coscheduler does not choose nodes for such claims yet)"
                )
            else:
                waits.append(f'{UNBOUND_IMMEDIATE} (claim "{name}")')
        volume_affinity = tuple(dict.fromkeys(affinity))
        asks = pod.asks
        if unsupported:
            asks = Asks((*asks.unsupported, *unsupported))
        return dataclasses.replace(
            pod,
            volume_affinity=volume_affinity,
            volume_wait="; ".join(waits) or None,
            asks=asks,
            shape=(*pod.shape, volume_affinity) if volume_affinity else pod.shape,
        )

    def _waits_for_first_consumer(self, claim: ClaimInfo) -> bool:
        name = claim.storage_class
        if name is None:
            name = next((c.name for c in self.classes.values() if c.default), None)
        if not name:
            return False  # "" (no class) binds to a matching volume at once
        storage_class = self.classes.get(name)
        return storage_class is not None and storage_class.wait_for_first_consumer
