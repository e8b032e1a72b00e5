"""Carry out the core's bindings: one ``Binding`` per pod, many in flight at once.

The answer says all we need, so bodies are not decoded:

* success (201): bound.
* ``NotFound``: the pod is gone; not an error, the snapshot forgets it.
* ``Conflict``: already bound (by us before a restart, or by someone else);
  not an error, the pod's own watch event will say where it went.
* any other error, or no answer: failed; the caller forgets the assumption
  and the group backs off.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from coscheduler.core.statement import Binding
from coscheduler.runtime.errors import ApiError, Conflict, NotFound
from coscheduler.runtime.kube import KubeClient

__all__ = ["BindOutcome", "BindResult", "Binder"]


class BindOutcome(StrEnum):
    BOUND = "bound"
    POD_GONE = "pod_gone"
    ALREADY_BOUND = "already_bound"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class BindResult:
    binding: Binding
    outcome: BindOutcome
    detail: str = ""


class Binder:
    """Creates Bindings with at most ``concurrency`` requests in flight."""

    def __init__(self, client: KubeClient, *, concurrency: int) -> None:
        self._client = client
        self._slots = asyncio.Semaphore(concurrency)

    async def bind_all(self, bindings: Iterable[Binding]) -> list[BindResult]:
        """Create every binding concurrently; results come back in the same order."""
        return list(await asyncio.gather(*(self.bind(binding) for binding in bindings)))

    async def bind(self, binding: Binding) -> BindResult:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            # The uid precondition makes a Binding meant for a deleted pod fail
            # instead of binding a new pod that reused its name.
            "metadata": {"name": binding.name, "namespace": binding.namespace, "uid": binding.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": binding.node},
        }
        path = f"/api/v1/namespaces/{binding.namespace}/pods/{binding.name}/binding"
        async with self._slots:
            try:
                await self._client.send("POST", path, body=body)
            except NotFound:
                return BindResult(binding, BindOutcome.POD_GONE)
            except Conflict:
                return BindResult(binding, BindOutcome.ALREADY_BOUND)
            except ApiError as error:
                return BindResult(binding, BindOutcome.FAILED, str(error))
        return BindResult(binding, BindOutcome.BOUND)
