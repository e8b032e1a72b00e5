"""Keeps our ``GangScheduled`` condition on each Kueue ``Workload`` whose gang we place.

Kueue users look at the Workload: whether its admitted gang is placed, or why it waits,
belongs there. The status writer derives a Kueue gang's status as any group's and records
it (:func:`coscheduler.operator.record_status`, which marks the gang here); its events go
on the Workload too. This writer turns the recorded status into one condition
(:func:`~coscheduler.api.adapters.kueue.placement_condition`) and applies it to the
Workload's ``/status`` by server-side apply under our own field manager: Kueue's
conditions are a map keyed by type, each owned by whoever applied it, so Kueue's are left
as they are (a merge patch would replace the whole list). A condition is applied when what
it says (status, reason, message) changes; a failed write is tried again next round.
"""

from __future__ import annotations

import asyncio
from typing import Final

import structlog

from coscheduler.api.adapters import kueue
from coscheduler.api.timestamps import utc_now
from coscheduler.controller.backoff import RoundBackoff
from coscheduler.core.group import GroupKey
from coscheduler.runtime.errors import ApiError, NotFound
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.readmodel import Marks, ReadModel

__all__ = ["KueueConditionWriter"]

log = structlog.get_logger(__name__)

APPLY_PATCH: Final = "application/apply-patch+yaml"
FIELD_MANAGER: Final = "coscheduler"


class KueueConditionWriter:
    def __init__(
        self,
        *,
        view: ReadModel,
        marked: Marks[GroupKey],
        client: KubeClient,
        debounce_seconds: float = 0.25,
    ) -> None:
        self._view = view
        self._marked = marked
        self._client = client
        self._backoff = RoundBackoff(debounce_seconds)
        #: What was applied to each Workload (by its uid): status, reason, message.
        self._applied: dict[GroupKey, tuple[str, str, str, str]] = {}
        self.writes = 0

    async def run(self) -> None:
        while True:
            await self._marked.wake.wait()
            await asyncio.sleep(self._backoff.pause)
            await self.write_marked()

    async def write_marked(self) -> None:
        """One round: each marked gang's condition, applied if what it says changed."""
        failed = False
        for key in sorted(self._marked.take()):
            failed = not await self._apply(key) or failed
        self._backoff.round_done(failed=failed)

    async def _apply(self, key: GroupKey) -> bool:
        """False when the write failed and is to be tried again."""
        group = self._view.group(key)
        if group is None:
            self._applied.pop(key, None)
            return True
        condition = kueue.placement_condition(group.status, utc_now(whole_seconds=True))
        if condition is None:
            return True
        said = (group.uid or "", condition["status"], condition["reason"], condition["message"])
        if self._applied.get(key) == said:
            return True
        body = {
            "apiVersion": kueue.API.api_version,
            "kind": kueue.API.kind,
            "metadata": {"namespace": key.namespace, "name": key.name},
            "status": {"conditions": [condition]},
        }
        try:
            await self._client.send(
                "PATCH",
                kueue.API.status_path(key.namespace, key.name),
                query=[("fieldManager", FIELD_MANAGER), ("force", "true")],
                body=body,
                content_type=APPLY_PATCH,
            )
        except NotFound:
            return True  # the Workload is gone
        except ApiError as error:
            log.warning("Kueue Workload condition not written", workload=str(key), error=str(error))
            if error.retryable:
                self._marked.mark(key)
                return False
            return True
        self._applied[key] = said
        self.writes += 1
        return True
