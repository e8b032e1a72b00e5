"""Which pod a shared claim's devices (DRA) are charged to, so that a queue counts them once.

Queues count devices per DeviceClass, as resources added to a pod's requests
(:meth:`~coscheduler.core.devices.DeviceIndex.counted`). A claim made from a
template is the pod's own and counts on it. A claim named by
``resourceClaimName`` may be named by several pods (all the members of a gang
sharing one set of devices): it counts once, on one of them, its *charger*:
the live pod of the smallest uid among those naming it. When the charger
changes (a pod comes with a smaller uid, the charger finishes or goes), the
scheduler counts the old and the new one again.
"""

from __future__ import annotations

from coscheduler.api.pod import PodInfo

__all__ = ["SharedClaimCharges"]


class SharedClaimCharges:
    """Per named claim, the live pods naming it; the charger is the least uid."""

    def __init__(self) -> None:
        self._users: dict[str, set[str]] = {}
        self._claims_of: dict[str, frozenset[str]] = {}

    def charged_to(self, uid: str) -> frozenset[str]:
        """The named claims (keys) the pod is the charger of."""
        return frozenset(
            key for key in self._claims_of.get(uid, ()) if min(self._users[key]) == uid
        )

    def charger(self, key: str) -> str | None:
        """The pod the named claim counts on, if a live pod names it."""
        users = self._users.get(key)
        return min(users) if users else None

    def update(self, pod: PodInfo) -> set[str]:
        """The pod as it is now (a terminal pod names nothing); the uids of other pods
        whose charges changed, to be counted again."""
        wanted: frozenset[str] = frozenset()
        if not pod.terminal:
            wanted = frozenset(
                f"{pod.namespace}/{entry.claim}"
                for entry in pod.device_claims
                if entry.template is None and entry.claim is not None
            )
        return self._set(pod.uid, wanted)

    def remove(self, uid: str) -> set[str]:
        """The pod is gone; the uids of other pods whose charges changed."""
        return self._set(uid, frozenset())

    def _set(self, uid: str, wanted: frozenset[str]) -> set[str]:
        before = self._claims_of.get(uid, frozenset())
        if wanted == before:
            return set()
        changed: set[str] = set()
        for key in before ^ wanted:
            users = self._users.setdefault(key, set())
            old = min(users) if users else None
            if key in wanted:
                users.add(uid)
            else:
                users.discard(uid)
            new = min(users) if users else None
            if not users:
                del self._users[key]
            changed.update(u for u in (old, new) if u is not None and u != uid and old != new)
        if wanted:
            self._claims_of[uid] = wanted
        else:
            self._claims_of.pop(uid, None)
        return changed
