"""Carry out the core's bindings: one ``Binding`` per pod, many in flight at once.

The answer says all we need, so bodies are not decoded:

* success (201): bound.
* ``NotFound``: the pod is gone; not an error, the snapshot forgets it.
* ``Conflict``: already bound (by us before a restart, or by someone else);
  not an error, the pod's own watch event will say where it went.
* no answer, or a 5xx or 429: the outcome is unknown (a Binding that timed
  out on etcd, or whose answer was lost on the way, may be committed). The
  same Binding is sent again (:func:`~coscheduler.runtime.retry.retried`)
  for up to ``retry_seconds``,
  while the pod stays assumed on its node: releasing it at once would let
  the next decision give its room away and over-commit the node when the
  first Binding turns out to have been committed (the fault suite's etcd
  restart did exactly that). A ``Conflict`` after such a retry is the first
  Binding's success when the pod is on our node (read back to tell).
* any other error, or retries exhausted: failed; the caller forgets the
  assumption and the group backs off.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

import orjson
import structlog

from coscheduler.core.statement import Binding
from coscheduler.runtime.errors import ApiError, Conflict, NotFound
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.retry import retried

log = structlog.get_logger(__name__)

#: How long a Binding with an unknown outcome is sent again before it counts as failed.
BIND_RETRY_SECONDS = 60.0

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

    def __init__(
        self,
        client: KubeClient,
        *,
        concurrency: int,
        retry_seconds: float = BIND_RETRY_SECONDS,
        on_bound: Callable[[], None] = lambda: None,
    ) -> None:
        self._client = client
        #: Called as each Binding is answered 201 (the start-up line's first binding).
        self._on_bound = on_bound
        self._slots = asyncio.Semaphore(concurrency)
        self._retry_seconds = retry_seconds
        #: Bindings sent again because an earlier attempt's outcome was unknown.
        self.retries = 0

    async def bind_all(self, bindings: Iterable[Binding]) -> list[BindResult]:
        """Create every binding concurrently; results come back in the same order."""
        return list(await asyncio.gather(*(self.bind(binding) for binding in bindings)))

    async def bind(self, binding: Binding) -> BindResult:
        # Encoded once, also for the attempts that follow an unknown outcome.
        body = orjson.dumps(
            {
                "apiVersion": "v1",
                "kind": "Binding",
                # The uid precondition makes a Binding meant for a deleted pod fail
                # instead of binding a new pod that reused its name.
                "metadata": {
                    "name": binding.name,
                    "namespace": binding.namespace,
                    "uid": binding.uid,
                },
                "target": {"apiVersion": "v1", "kind": "Node", "name": binding.node},
            }
        )
        path = f"/api/v1/namespaces/{binding.namespace}/pods/{binding.name}/binding"
        retries = 0

        def again(error: ApiError, seconds: float) -> None:
            nonlocal retries
            retries += 1
            self.retries += 1
            log.info(
                "binding outcome unknown, sending it again",
                pod=f"{binding.namespace}/{binding.name}",
                node=binding.node,
                error=str(error),
                retry_in_seconds=round(seconds, 2),
            )

        async with self._slots:
            try:
                await retried(
                    lambda: self._client.send("POST", path, body=body),
                    within=self._retry_seconds,
                    on_retry=again,
                )
            except NotFound:
                return BindResult(binding, BindOutcome.POD_GONE)
            except Conflict:
                if retries and await self._bound_here(binding):
                    return BindResult(binding, BindOutcome.BOUND)
                return BindResult(binding, BindOutcome.ALREADY_BOUND)
            except ApiError as error:
                return BindResult(binding, BindOutcome.FAILED, str(error))
        self._on_bound()
        return BindResult(binding, BindOutcome.BOUND)

    async def _bound_here(self, binding: Binding) -> bool:
        """Whether the pod is bound to the binding's node (an earlier attempt succeeded)."""
        try:
            pod = await self._client.call(
                "GET", f"/api/v1/namespaces/{binding.namespace}/pods/{binding.name}"
            )
        except ApiError:
            return False  # its watch event will tell
        metadata = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        return bool(metadata.get("uid") == binding.uid and spec.get("nodeName") == binding.node)
