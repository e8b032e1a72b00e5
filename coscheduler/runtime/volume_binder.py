"""Carry out a gang's volume actions before any of its members is bound.

A claim waiting for its first consumer gets what the core chose
(:class:`~coscheduler.core.statement.VolumeAction`): the chosen
PersistentVolume is promised to it (``spec.claimRef``, which the volume
controller completes into a binding), or the claim is annotated with the
chosen node for its provisioner. Then every claim of the gang must be bound
before the first Binding is created, as kube-scheduler's PreBind waits: a
member bound to a node whose volume never came would be stuck there, and
with it the gang. Waiting is a poll of the watched claims (they arrive by
their own watch), bounded by a timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import structlog

from coscheduler.api.labels import SELECTED_NODE_ANNOTATION
from coscheduler.core.statement import VolumeAction
from coscheduler.runtime.errors import ApiError
from coscheduler.runtime.kube import MERGE_PATCH, KubeClient

__all__ = ["VolumeBinder"]

log = structlog.get_logger(__name__)

#: How often the watched claims are looked at while waiting for them to bind.
_POLL_SECONDS = 0.2


class VolumeBinder:
    """Promises volumes and selects nodes for claims, then waits for them to bind."""

    def __init__(
        self,
        client: KubeClient,
        *,
        bound: Callable[[Sequence[str]], bool],
        timeout_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._bound = bound
        self._timeout = timeout_seconds
        self._clock = clock

    async def prepare(self, actions: Sequence[VolumeAction]) -> str | None:
        """Carry the actions out and wait for their claims; None on success, else why not."""
        for action in actions:
            try:
                await self._carry_out(action)
            except ApiError as error:
                return f"claim {action.claim_key}: {error}"
        keys = sorted({action.claim_key for action in actions})
        deadline = self._clock() + self._timeout
        while not self._bound(keys):
            if self._clock() >= deadline:
                waiting = ", ".join(keys)
                return f"claims not bound within {self._timeout:g} s: {waiting}"
            await asyncio.sleep(_POLL_SECONDS)
        return None

    async def _carry_out(self, action: VolumeAction) -> None:
        if action.volume is not None:
            claim_ref = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": action.namespace,
                "name": action.claim,
                "uid": action.claim_uid,
            }
            path = f"/api/v1/persistentvolumes/{action.volume}"
            body: dict[str, object] = {"spec": {"claimRef": claim_ref}}
        else:
            path = f"/api/v1/namespaces/{action.namespace}/persistentvolumeclaims/{action.claim}"
            body = {"metadata": {"annotations": {SELECTED_NODE_ANNOTATION: action.node}}}
        log.info("volume action", claim=action.claim_key, volume=action.volume, node=action.node)
        await self._client.send("PATCH", path, body=body, content_type=MERGE_PATCH)
