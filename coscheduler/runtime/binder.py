"""Carry out bind intents: one ``Binding`` per pod, many in flight at once.

The answer's status code says all we need, so bodies are not decoded:

* 201: bound.
* 404: the pod is gone; not an error, the snapshot forgets it.
* 409: already bound (by us before a restart, or by someone else); not an
  error, the pod's own watch event will say where it went.
* anything else, or no answer: failed; the caller forgets the assumption and
  the group backs off.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

import aiohttp

from coscheduler.runtime.kube import ApiError, KubeClient

__all__ = ["BindIntent", "BindOutcome", "BindResult", "Binder"]


class BindOutcome(StrEnum):
    BOUND = "bound"
    POD_GONE = "pod_gone"
    ALREADY_BOUND = "already_bound"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class BindIntent:
    """Bind pod ``namespace/name`` (with ``uid``) to ``node``."""

    namespace: str
    name: str
    uid: str
    node: str


@dataclass(frozen=True, slots=True)
class BindResult:
    intent: BindIntent
    outcome: BindOutcome
    detail: str = ""


class Binder:
    """Creates Bindings with at most ``concurrency`` requests in flight."""

    def __init__(self, client: KubeClient, *, concurrency: int) -> None:
        self._client = client
        self._slots = asyncio.Semaphore(concurrency)

    async def bind_all(self, intents: Iterable[BindIntent]) -> list[BindResult]:
        """Bind every intent concurrently; results come back in the intents' order."""
        return list(await asyncio.gather(*(self.bind(intent) for intent in intents)))

    async def bind(self, intent: BindIntent) -> BindResult:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            # The uid precondition makes a Binding meant for a deleted pod fail
            # instead of binding a new pod that reused its name.
            "metadata": {"name": intent.name, "namespace": intent.namespace, "uid": intent.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": intent.node},
        }
        path = f"/api/v1/namespaces/{intent.namespace}/pods/{intent.name}/binding"
        async with self._slots:
            try:
                response = await self._client.request("POST", path, body=body)
            except (aiohttp.ClientError, TimeoutError) as error:
                return BindResult(intent, BindOutcome.FAILED, f"{type(error).__name__}: {error}")
        if response.status in (200, 201):
            return BindResult(intent, BindOutcome.BOUND)
        if response.status == 404:
            return BindResult(intent, BindOutcome.POD_GONE)
        if response.status == 409:
            return BindResult(intent, BindOutcome.ALREADY_BOUND)
        refusal = ApiError(method="POST", path=path, status=response.status, body=response.body)
        return BindResult(intent, BindOutcome.FAILED, str(refusal))
