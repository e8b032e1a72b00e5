"""The ``PodScheduled`` condition on pods that cannot be placed yet.

kubectl shows a pending pod's ``PodScheduled=False`` condition, its reason and
message in ``describe``, so a person can see why it waits, and the
cluster-autoscaler adds nodes for the pods whose reason is ``Unschedulable``.
The API server sets the condition to True when the pod is bound. Writes are
kept off the binding path and are few:

1. Only the latest reason and message per pod are kept; older ones waiting
   to be written are replaced, not queued behind them.
2. A reason and message already written are not written again.
3. A pod that was bound or deleted meanwhile is skipped (``still_pending``).
4. At most ``concurrency`` writes are in flight, and none while bindings
   are (``idle``): they share the client's rate limit, and placing pods
   matters more than explaining why others wait.
5. A pod's binding waits for a write about it already in flight
   (:meth:`PodConditionWriter.settled`), and writes about one pod go out one
   at a time. The API server sets the condition to True when it takes the
   Binding; a False sent before the decision that placed the pod but taken
   after its Binding would stay on the bound pod (nothing writes it again),
   saying it is unschedulable while it runs.
6. A write the API server may take next time (throttled, failing over, no
   answer) is sent again after a backoff, unless a newer reason replaced it.
   Nothing else would send it: a group that cannot be placed sleeps until an
   event could help it (``core/requeue.py``), and is not explained again.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import structlog

from coscheduler.api.reasons import Reason
from coscheduler.api.timestamps import rfc3339
from coscheduler.runtime.errors import ApiError, Conflict, NotFound
from coscheduler.runtime.kube import STRATEGIC_MERGE_PATCH, KubeClient
from coscheduler.runtime.retry import backoff_seconds

__all__ = ["PodConditionWriter"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class _Update:
    namespace: str
    name: str
    reason: Reason
    message: str

    @property
    def said(self) -> tuple[Reason, str]:
        return self.reason, self.message


class PodConditionWriter:
    def __init__(
        self,
        client: KubeClient,
        *,
        still_pending: Callable[[str], bool],
        concurrency: int = 4,
        max_remembered: int = 100_000,
    ) -> None:
        self._client = client
        self._still_pending = still_pending
        self._concurrency = concurrency
        self._max_remembered = max_remembered
        self._queued: OrderedDict[str, _Update] = OrderedDict()
        self._written: OrderedDict[str, tuple[Reason, str]] = OrderedDict()
        # Set when the write about that pod now on its way is answered (rule 5).
        self._in_flight: dict[str, asyncio.Event] = {}
        self._wake = asyncio.Event()
        # A failed write waiting to be sent again, and the failures in a row about its pod
        # (rule 6); replaced by a newer reason, dropped when the pod is forgotten.
        self._failed: dict[str, tuple[_Update, int]] = {}

    def explain(self, uid: str, namespace: str, name: str, reason: Reason, message: str) -> None:
        """Say on the pod that it is not scheduled, and why (rules 1 and 2)."""
        update = _Update(namespace, name, reason, message)
        if (failed := self._failed.get(uid)) is not None and failed[0] != update:
            self._failed.pop(uid)
        if self._written.get(uid) == update.said:
            self._queued.pop(uid, None)
            return
        self._queued[uid] = update
        self._queued.move_to_end(uid)
        self._wake.set()

    def forget(self, uid: str) -> None:
        """The pod was bound or deleted: nothing more to say about it."""
        self._queued.pop(uid, None)
        self._written.pop(uid, None)
        self._failed.pop(uid, None)

    async def settled(self, uids: Iterable[str]) -> None:
        """Return once no write about these pods is in flight (rule 5); a binding waits here.

        Called once the pods are no longer pending, so no new write about them starts.
        """
        for uid in uids:
            while (answered := self._in_flight.get(uid)) is not None:
                await answered.wait()

    async def run(self, idle: asyncio.Event | None = None) -> None:
        """Write queued conditions until cancelled, while ``idle`` is set (no binding in
        flight; None: never wait)."""
        workers = [asyncio.create_task(self._work(idle)) for _ in range(self._concurrency)]
        try:
            await asyncio.gather(*workers)
        finally:
            for worker in workers:
                worker.cancel()

    async def _work(self, idle: asyncio.Event | None) -> None:
        while True:
            if not self._queued:
                self._wake.clear()
                await self._wake.wait()
                continue
            if idle is not None:
                await idle.wait()
                if not self._queued:
                    continue
            uid, update = self._queued.popitem(last=False)
            while (earlier := self._in_flight.get(uid)) is not None:
                await earlier.wait()  # one write per pod at a time, in order
            if not self._still_pending(uid):
                continue
            answered = self._in_flight[uid] = asyncio.Event()
            try:
                await self._write(uid, update)
                self._failed.pop(uid, None)
            except (NotFound, Conflict):
                pass  # deleted, or replaced under the same name: nothing to explain
            except ApiError as error:
                log.warning(
                    "pod condition not written",
                    pod=f"{update.namespace}/{update.name}",
                    error=str(error),
                )
                if error.retryable:
                    self._send_again_later(uid, update)
            finally:
                del self._in_flight[uid]
                answered.set()

    def _send_again_later(self, uid: str, update: _Update) -> None:
        """Queue ``update`` again after a backoff, if nothing newer about the pod came (rule 6)."""
        previous = self._failed.get(uid)
        failures = previous[1] + 1 if previous is not None and previous[0] == update else 1
        self._failed[uid] = (update, failures)

        def again() -> None:
            if self._failed.get(uid, (None, 0))[0] is update and uid not in self._queued:
                self._queued[uid] = update
                self._wake.set()

        asyncio.get_running_loop().call_later(backoff_seconds(failures), again)

    async def _write(self, uid: str, update: _Update) -> None:
        body = {
            "metadata": {"uid": uid},
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": update.reason.value,
                        "message": update.message,
                        "lastTransitionTime": rfc3339(),
                    }
                ]
            },
        }
        await self._client.send(
            "PATCH",
            f"/api/v1/namespaces/{update.namespace}/pods/{update.name}/status",
            body=body,
            content_type=STRATEGIC_MERGE_PATCH,
        )
        self._written[uid] = update.said
        while len(self._written) > self._max_remembered:
            self._written.popitem(last=False)
