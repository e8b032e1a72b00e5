"""Write a gang's claims (DRA) before any of its members is bound.

As kube-scheduler's DynamicResources plugin does at PreBind: a claim
allocated by the decision gets the finalizer that lets kube-controller-manager
deallocate it once nobody uses it, then its ``status.allocation`` (the
devices and the nodes that reach them) and ``status.reservedFor`` (the
members that use it, or the native PodGroup whose ``spec.resourceClaims``
names it); a claim allocated already only gets its new members in
``reservedFor``. Each write carries the resourceVersion the core decided on,
so a claim changed meanwhile is a conflict, never overwritten. If any write
fails, the ones done are undone (allocation cleared, ``reservedFor`` as it
was) and the gang goes back whole, as the volume binder does. A claim the
core finds allocated for pods it cannot place there (a scheduler that
restarted between writing and binding) is deallocated (``release``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import structlog

from coscheduler.api.devices import ResourceClaimInfo
from coscheduler.api.native_podgroup import GROUP, PLURAL
from coscheduler.api.node_selector import NodeSelectorTerm
from coscheduler.core.devices import ClaimWrite
from coscheduler.runtime.errors import ApiError
from coscheduler.runtime.kube import MERGE_PATCH, KubeClient

__all__ = ["DELETE_PROTECTION", "DeviceWriter", "claim_status"]

log = structlog.get_logger(__name__)

#: kube-controller-manager deallocates a claim nobody uses only when it carries this.
DELETE_PROTECTION: Final = "resource.kubernetes.io/delete-protection"


def _term(term: NodeSelectorTerm) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for field, requirements in (
        ("matchExpressions", term.match_expressions),
        ("matchFields", term.match_fields),
    ):
        if requirements:
            body[field] = [
                {"key": r.key, "operator": r.operator, "values": list(r.values)}
                for r in requirements
            ]
    return body


def claim_status(write: ClaimWrite) -> dict[str, Any]:
    """The ``status`` the write leaves on its claim."""
    consumers = [
        {"apiGroup": group, "resource": resource, "name": name, "uid": uid}
        if group
        else {"resource": resource, "name": name, "uid": uid}
        for group, resource, name, uid in write.claim.consumers
    ]
    consumers += [{"resource": "pods", "name": name, "uid": uid} for name, uid in write.reserve]
    if write.group is not None:
        name, uid = write.group
        consumers.append({"apiGroup": GROUP, "resource": PLURAL, "name": name, "uid": uid})
    status: dict[str, Any] = {"reservedFor": consumers}
    allocation = write.allocation
    if allocation is not None:
        body: dict[str, Any] = {
            "devices": {
                "results": [
                    {
                        "request": r.request,
                        "driver": r.driver,
                        "pool": r.pool,
                        "device": r.device,
                    }
                    for r in allocation.results
                ]
            }
        }
        if allocation.nodes is not None:
            body["nodeSelector"] = {"nodeSelectorTerms": [_term(t) for t in allocation.nodes]}
        status["allocation"] = body
    return status


def _path(claim: ResourceClaimInfo) -> str:
    return f"/apis/resource.k8s.io/v1/namespaces/{claim.namespace}/resourceclaims/{claim.name}"


class DeviceWriter:
    """Writes the claims of one decision, all or none."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    async def write(self, writes: Sequence[ClaimWrite]) -> str | None:
        """Write every claim; None on success, else why not (and the done ones undone)."""
        done: list[ClaimWrite] = []
        for write in writes:
            try:
                await self._write(write)
            except ApiError as error:
                await self._undo(done)
                return f"resourceclaim {write.claim.key}: {error}"
            done.append(write)
        return None

    async def release(self, claims: Sequence[ResourceClaimInfo]) -> None:
        """Deallocate claims whose pods could not be placed where their devices are."""
        for claim in claims:
            body = {
                "metadata": {"resourceVersion": claim.resource_version},
                "status": {"allocation": None, "reservedFor": None},
            }
            try:
                await self._client.send(
                    "PATCH", f"{_path(claim)}/status", body=body, content_type=MERGE_PATCH
                )
            except ApiError as error:
                # Changed meanwhile (or gone): the next attempt looks again.
                log.info("claim not released", claim=claim.key, error=str(error))
            else:
                log.info("claim released", claim=claim.key)

    def _path(self, write: ClaimWrite) -> str:
        return _path(write.claim)

    async def _write(self, write: ClaimWrite) -> None:
        claim = write.claim
        version = claim.resource_version
        if write.allocation is not None and DELETE_PROTECTION not in claim.finalizers:
            finalizers = [*claim.finalizers, DELETE_PROTECTION]
            body = {"metadata": {"finalizers": finalizers, "resourceVersion": version}}
            answer = await self._client.send(
                "PATCH", self._path(write), body=body, content_type=MERGE_PATCH
            )
            version = str((answer.json() or {}).get("metadata", {}).get("resourceVersion", ""))
        status = {"metadata": {"resourceVersion": version}, "status": claim_status(write)}
        log.info(
            "claim written",
            claim=claim.key,
            allocated=write.allocation is not None,
            reserved=[name for name, _ in write.reserve],
            group=write.group[0] if write.group is not None else None,
        )
        await self._client.send(
            "PATCH", f"{self._path(write)}/status", body=status, content_type=MERGE_PATCH
        )

    async def _undo(self, done: Sequence[ClaimWrite]) -> None:
        for write in reversed(done):
            status: dict[str, Any] = {
                "reservedFor": [
                    {"resource": resource, "name": name, "uid": uid}
                    | ({"apiGroup": group} if group else {})
                    for group, resource, name, uid in write.claim.consumers
                ]
                or None
            }
            if write.allocation is not None:
                status["allocation"] = None
            try:
                await self._client.send(
                    "PATCH",
                    f"{self._path(write)}/status",
                    body={"status": status},
                    content_type=MERGE_PATCH,
                )
            except ApiError as error:
                # The claim stays as written; kube-controller-manager frees it with its pods.
                log.warning("claim not undone", claim=write.claim.key, error=str(error))
