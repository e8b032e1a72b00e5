"""Keeps our ``GangScheduled`` condition on each Kueue ``Workload`` whose gang we place.

Kueue users look at the Workload: whether its admitted gang is placed, or why it waits,
belongs there. The status writer derives a Kueue gang's status as any group's and records
it (:func:`coscheduler.operator.record_status`, which marks the gang here); its events go
on the Workload too. This writer turns the recorded status into one condition
(:func:`~coscheduler.api.adapters.kueue.placement_condition`) and applies it to the
Workload's ``/status`` by server-side apply under our own field manager: Kueue's
conditions are a map keyed by type, each owned by whoever applied it, so Kueue's are left
as they are (a merge patch would replace the whole list). The same condition goes on the
status of the batch Job that controls the Workload, by a strategic merge patch (a Job's
conditions merge by type, so the Job controller's stay): MultiKueue copies a worker's Job
status to the manager's Job, so that is where a manager's user reads why the gang waits. A
condition is applied when what it says (status, reason, message) changes; a failed write
is tried again next round.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import structlog

from coscheduler.api.adapters import kueue
from coscheduler.api.timestamps import utc_now
from coscheduler.controller.backoff import RoundBackoff
from coscheduler.core.group import GroupKey
from coscheduler.runtime.errors import ApiError, NotFound
from coscheduler.runtime.kube import STRATEGIC_MERGE_PATCH, KubeClient
from coscheduler.runtime.readmodel import Marks, ReadModel

__all__ = ["KueueConditionWriter"]

log = structlog.get_logger(__name__)

APPLY_PATCH: Final = "application/apply-patch+yaml"
JOB_STATUS: Final = "/apis/batch/v1/namespaces/{namespace}/jobs/{name}/status"
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
        workload: dict[str, Any] = {
            "apiVersion": kueue.API.api_version,
            "kind": kueue.API.kind,
            "metadata": {"namespace": key.namespace, "name": key.name},
            "status": {"conditions": [condition]},
        }
        writes: list[tuple[str, str, list[tuple[str, str]], dict[str, Any]]] = [
            (
                kueue.API.status_path(key.namespace, key.name),
                APPLY_PATCH,
                [("fieldManager", FIELD_MANAGER), ("force", "true")],
                workload,
            )
        ]
        job = kueue.controlling_job(group.metadata)
        if job is not None:
            path = JOB_STATUS.format(namespace=key.namespace, name=job)
            job_status = {"status": {"conditions": [condition]}}
            writes.append(
                (path, STRATEGIC_MERGE_PATCH, [("fieldManager", FIELD_MANAGER)], job_status)
            )
        written = True
        for path, content_type, query, body in writes:
            try:
                await self._client.send(
                    "PATCH", path, query=query, body=body, content_type=content_type
                )
            except NotFound:
                continue  # gone
            except ApiError as error:
                log.warning("Kueue gang condition not written", path=path, error=str(error))
                if error.retryable:
                    self._marked.mark(key)
                    return False
                written = False
        if written:
            self._applied[key] = said
            self.writes += 1
        return True
