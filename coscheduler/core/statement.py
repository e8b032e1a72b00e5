"""A trial placement that can be undone: assume, then commit or discard.

Why: a gang is placed all together or not at all. The planner assumes each
member on the snapshot as it goes (so the next member sees the room the
previous ones took) and writes every step to an undo log. If a needed member
does not fit, :meth:`Statement.discard` forgets the assumptions in reverse
order and the snapshot is exactly as before. If all fit,
:meth:`Statement.commit` keeps them and returns the bindings for the runtime
to execute. No pod ever holds resources while waiting for the rest of its
gang, so two gangs can never deadlock each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from coscheduler.api.pod import PodInfo
from coscheduler.core.devices import PodDevices
from coscheduler.core.snapshot import Snapshot

__all__ = ["Binding", "Statement", "VolumeAction"]


@dataclass(frozen=True, slots=True)
class Binding:
    """An intent to bind a pod to a node (a ``Binding`` the runtime will create)."""

    namespace: str
    name: str
    uid: str
    node: str


@dataclass(frozen=True, slots=True)
class VolumeAction:
    """Before binding a pod: give a claim waiting for its first consumer a volume.

    ``volume`` set: promise that PersistentVolume to the claim (the volume
    controller then binds them); None: ask the claim's provisioner for a volume
    near ``node`` (the selected-node annotation).
    """

    namespace: str
    claim: str
    claim_uid: str
    node: str
    volume: str | None

    @property
    def claim_key(self) -> str:
        return f"{self.namespace}/{self.claim}"


class Statement:
    """An undo log of assumptions on one snapshot.

    ``within``, when given, is the only nodes (a mask over the snapshot's
    slots) this trial may place on: a gang kept inside one topology domain.
    """

    __slots__ = ("_log", "snapshot", "within")

    def __init__(self, snapshot: Snapshot, within: npt.NDArray[np.bool_] | None = None) -> None:
        self.snapshot = snapshot
        self.within = within
        self._log: list[tuple[Sequence[PodInfo], str]] = []

    def __len__(self) -> int:
        return sum(len(pods) for pods, _ in self._log)

    def assume(self, pods: Sequence[PodInfo], node: str) -> None:
        """Place pods of one shape on a node, counting them at once."""
        for pod in pods:
            if self.snapshot.node_of(pod.uid) is not None:
                raise ValueError(f"pod {pod.key} already counts on a node")
        self.snapshot.assume_many(pods, node)
        self._log.append((pods, node))

    def assume_devices(self, devices: PodDevices) -> None:
        """Count an assumed member's devices taken: forgetting the member gives them back."""
        self.snapshot.devices.assume(devices)

    def absorb(self, child: Statement) -> None:
        """Take a child statement's assumptions as this one's (it tried inside a narrower set)."""
        self._log.extend(child._log)
        child._log.clear()

    def discard(self) -> None:
        """Forget every assumption, last first (a member's devices with it)."""
        for pods, _ in reversed(self._log):
            for pod in reversed(pods):
                self.snapshot.forget(pod.uid)
        self._log.clear()

    def commit(self) -> tuple[Binding, ...]:
        """Keep the assumptions; the bindings in the order they were planned."""
        bindings = tuple(
            Binding(pod.namespace, pod.name, pod.uid, node)
            for pods, node in self._log
            for pod in pods
        )
        self._log.clear()
        return bindings
