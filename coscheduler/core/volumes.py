"""Where a pod's persistent volumes let it go, as kube-scheduler's VolumeBinding judges.

The scheduler keeps the cluster's claims, volumes and storage classes here
and, just before a group is planned, *resolves* each pending member that
uses claims (:meth:`VolumeIndex.resolve`): the pod gets the node affinity of
every volume its bound claims use, and the zone its zone labels name
(VolumeZone, :mod:`~coscheduler.api.volume_zone`) (a node filter, with kube-scheduler's
reason "node(s) had volume node affinity conflict"), or a reason it cannot
be placed anywhere now, in kube-scheduler's words where it has them:

- a claim that does not exist, or is being deleted;
- a claim bound to a volume that does not exist;
- a claim not bound yet, of a class that binds at once (``Immediate``, or
  no class): the volume controller binds it, then the pod can go;
- a ``ReadWriteOncePod`` claim another pod uses.

A claim that waits for its first consumer (``WaitForFirstConsumer``) and is
not bound yet is the scheduler's to bind, as kube-scheduler does: a node may
take the pod if an available volume of the claim's class, large enough, with
the access modes, can be reached from it, or if the class provisions volumes.
Once a gang's members have nodes, :meth:`VolumeIndex.assign` gives each such
claim the smallest fitting volume reachable from its member's node (reserved
so no other claim takes it), or asks the provisioner for one near the node
(:class:`~coscheduler.core.statement.VolumeAction`); the runtime carries these
out and waits for the claims to be bound before binding any member. A claim
already annotated for a node waits for its volume there. A volume without node
affinity (NFS, most ReadWriteMany volumes) costs nothing.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence

from coscheduler.api.node import NodeInfo
from coscheduler.api.node_selector import NodeSelectorTerm
from coscheduler.api.pod import PodInfo
from coscheduler.api.volumes import ClaimInfo, StorageClassInfo, VolumeInfo
from coscheduler.core.filters import affinity
from coscheduler.core.statement import VolumeAction

__all__ = ["VolumeIndex"]

#: kube-scheduler's words for a claim the volume controller has yet to bind.
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
MISSING_VOLUME = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
NO_VOLUME_TO_BIND = "node(s) didn't find available persistent volumes to bind"
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
        #: Volumes promised to claims by an assignment, until the claim is bound.
        self._reserved: dict[str, str] = {}

    def upsert_claim(self, claim: ClaimInfo) -> None:
        self.claims[claim.key] = claim
        if claim.volume_name is not None:
            self._release_claim(claim.key)

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
        reach: list[tuple[NodeSelectorTerm, ...]] = []
        waits: list[str] = []
        binds: list[str] = []
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
                else:
                    reach.extend(
                        terms
                        for terms in (volume.node_affinity, volume.zone_affinity)
                        if terms is not None
                    )
            elif (storage_class := self._first_consumer_class(claim)) is not None:
                candidates = self._candidates(claim)
                if claim.selected_node is not None:
                    waits.append(
                        f'claim "{name}" waits for its volume to be provisioned '
                        f"near node {claim.selected_node}"
                    )
                elif not candidates and not storage_class.provisions:
                    waits.append(f'{NO_VOLUME_TO_BIND} (claim "{name}")')
                else:
                    binds.append(name)
                    if not storage_class.provisions and all(v.node_affinity for v in candidates):
                        reach.append(
                            tuple(term for v in candidates for term in v.node_affinity or ())
                        )
            else:
                waits.append(f'{UNBOUND_IMMEDIATE} (claim "{name}")')
        volume_affinity = tuple(dict.fromkeys(reach))
        attach = self.attachments(pod)
        extra: tuple[object, ...] = ()
        if volume_affinity:
            extra += (volume_affinity,)
        if attach:
            # Equal shapes must need equal attach room: count per driver.
            extra += (tuple(sorted(Counter(driver for driver, _ in attach).items())),)
        return dataclasses.replace(
            pod,
            volume_affinity=volume_affinity,
            volume_attach=attach,
            volume_wait="; ".join(waits) or None,
            volume_binds=tuple(binds),
            shape=(*pod.shape, *extra),
        )

    def attachments(self, pod: PodInfo) -> tuple[tuple[str, str], ...]:
        """``(CSI driver, volume)`` of the pod's bound claims' volumes that count against limits."""
        found = []
        for name in pod.claims:
            claim = self.claims.get(f"{pod.namespace}/{name}")
            volume = (
                None
                if claim is None or claim.volume_name is None
                else self.volumes.get(claim.volume_name)
            )
            if volume is not None and volume.csi_driver is not None:
                found.append((volume.csi_driver, volume.name))
        return tuple(sorted(set(found)))

    def assign(self, pod: PodInfo, node: NodeInfo) -> list[VolumeAction] | None:
        """Volumes (or provisioning) for the pod's first-consumer claims on ``node``.

        The chosen volumes are reserved; None (nothing reserved) when a claim
        can be given nothing there (its volumes went to other claims meanwhile).
        """
        actions: list[VolumeAction] = []
        for name in pod.volume_binds:
            claim = self.claims.get(f"{pod.namespace}/{name}")
            storage_class = None if claim is None else self._first_consumer_class(claim)
            if claim is None or storage_class is None:
                self.release(actions)
                return None
            reachable = [
                v
                for v in self._candidates(claim)
                if v.node_affinity is None
                or any(affinity.term_matches(t, node.labels, node.name) for t in v.node_affinity)
            ]
            if reachable:
                volume = min(reachable, key=lambda v: (v.storage, v.name))
                self._reserved[volume.name] = claim.key
                actions.append(
                    VolumeAction(claim.namespace, name, claim.uid, node.name, volume.name)
                )
            elif storage_class.provisions:
                actions.append(VolumeAction(claim.namespace, name, claim.uid, node.name, None))
            else:
                self.release(actions)
                return None
        return actions

    def release(self, actions: Sequence[VolumeAction]) -> None:
        """Give back the volumes reserved for these actions (they were not carried out)."""
        for action in actions:
            if action.volume is not None and self._reserved.get(action.volume) == action.claim_key:
                del self._reserved[action.volume]

    def bound(self, keys: Sequence[str]) -> bool:
        """Whether every one of these claims is bound to a volume now."""
        return all(
            (claim := self.claims.get(key)) is not None and claim.volume_name is not None
            for key in keys
        )

    def _release_claim(self, key: str) -> None:
        for volume in [v for v, claim in self._reserved.items() if claim == key]:
            del self._reserved[volume]

    def _candidates(self, claim: ClaimInfo) -> list[VolumeInfo]:
        """Volumes a first-consumer claim could be bound to, wherever they are."""
        class_name = claim.storage_class if claim.storage_class is not None else self._default()
        return [
            volume
            for volume in self.volumes.values()
            if (volume.available or volume.claim == claim.key)
            and self._reserved.get(volume.name, claim.key) == claim.key
            and volume.storage_class == (class_name or "")
            and volume.storage >= claim.storage
            and claim.access_modes <= volume.access_modes
        ]

    def _default(self) -> str | None:
        return next((c.name for c in self.classes.values() if c.default), None)

    def _first_consumer_class(self, claim: ClaimInfo) -> StorageClassInfo | None:
        """The claim's class when it binds on first consumer, else None."""
        name = claim.storage_class if claim.storage_class is not None else self._default()
        if not name:
            return None  # "" (no class) binds to a matching volume at once
        storage_class = self.classes.get(name)
        if storage_class is None or not storage_class.wait_for_first_consumer:
            return None
        return storage_class
