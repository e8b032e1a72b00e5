"""Leader election on a ``coordination.k8s.io/v1`` Lease.

Only the holder of the Lease schedules and writes PodGroup status, so two
replicas never bind the same pod or fight over a status. The rules follow
client-go's leader election:

1. A candidate takes the Lease when nobody holds it, or when the holder's
   record has not changed for ``lease_duration_seconds`` *as observed by this
   candidate's own clock* (clocks of different machines are never compared).
2. Every write carries the Lease's resourceVersion: when two candidates race,
   the API server lets one win and refuses the other (409).
3. The holder renews every ``retry_period_seconds``; when it could not renew
   for ``renew_deadline_seconds`` it stops leading at once, before anybody
   else may take over (``lease_duration > renew_deadline``).
4. On a clean shutdown the holder releases the Lease so that a standby takes
   over without waiting for it to expire.

Losing the Lease ends the leading work with :class:`LeadershipLostError`; the
process exits and is restarted, rebuilding its state from the API server,
which is simpler and safer than trying to step down in place.

Not ``kubernetes_asyncio.leaderelection``, which breaks rules 1 and 4: it reads
the wall clock (and takes no clock to test with), and never releases the
Lease, so a standby would wait out the whole lease after a clean shutdown;
it also keeps leading after the leading work returns, refuses retry periods
under a second, and writes through its generated client (aiohttp) instead of
our rate-limited one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from typing import Any

import structlog

from coscheduler.api.timestamps import rfc3339
from coscheduler.runtime.errors import ApiError, Conflict, LeadershipLostError, NotFound
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.settings import LeaderElectionSettings

__all__ = ["LeaderElector", "LeadershipLostError"]

log = structlog.get_logger(__name__)


class LeaderElector:
    """Campaign for the Lease, then lead while renewing it."""

    def __init__(
        self,
        client: KubeClient,
        settings: LeaderElectionSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self._client = client
        self._settings = settings
        self._clock = clock
        self._on_change = on_change
        self._path = (
            f"/apis/coordination.k8s.io/v1/namespaces/{settings.lease_namespace}"
            f"/leases/{settings.lease_name}"
        )
        self._observed_record: tuple[Any, Any] | None = None
        self._observed_at = 0.0
        self.is_leader = False

    async def run(self, lead: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Wait to become leader, then run ``lead()`` until it returns or the Lease is lost."""
        await self._acquire()
        self._set_leader(True)
        work: asyncio.Task[None] = asyncio.create_task(lead(), name="leading")
        renewal = asyncio.create_task(self._keep_renewing(), name="lease-renewal")
        try:
            done, _ = await asyncio.wait({work, renewal}, return_when=asyncio.FIRST_COMPLETED)
            if renewal in done:
                renewal.result()  # raises LeadershipLostError
            work.result()
        finally:
            for task in (work, renewal):
                task.cancel()
            for task in (work, renewal):
                with contextlib.suppress(asyncio.CancelledError, LeadershipLostError):
                    await task
            if self.is_leader:
                await self._release()
            self._set_leader(False)

    def _set_leader(self, leading: bool) -> None:
        if leading != self.is_leader:
            self.is_leader = leading
            log.info("leadership changed", leader=leading, identity=self._settings.identity)
            if self._on_change is not None:
                self._on_change(leading)

    async def _acquire(self) -> None:
        logged_waiting = False
        while True:
            if await self._try_acquire_or_renew():
                return
            if not logged_waiting:
                log.info("waiting for the lease", lease=self._path)
                logged_waiting = True
            await asyncio.sleep(self._settings.retry_period_seconds)

    async def _keep_renewing(self) -> None:
        settings = self._settings
        last_renewed = self._clock()
        while True:
            await asyncio.sleep(settings.retry_period_seconds)
            try:
                # Not asyncio.wait_for: on Python 3.11 it swallows a cancellation that
                # arrives as the request completes, and this loop would then renew forever
                # after the leading work ended.
                async with asyncio.timeout(settings.renew_deadline_seconds):
                    renewed = await self._try_acquire_or_renew()
            except TimeoutError:
                log.warning("lease renewal failed", error="timed out")
                renewed = False
            if renewed:
                last_renewed = self._clock()
            elif self._clock() - last_renewed >= settings.renew_deadline_seconds:
                self._set_leader(False)
                raise LeadershipLostError(
                    f"lease {settings.lease_namespace}/{settings.lease_name} not renewed "
                    f"for {settings.renew_deadline_seconds}s"
                )

    def _lease_body(self, *, acquire_time: str, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self._settings.identity,
            "leaseDurationSeconds": max(1, round(self._settings.lease_duration_seconds)),
            "acquireTime": acquire_time,
            "renewTime": rfc3339(micro=True),
            "leaseTransitions": transitions,
        }

    async def _try_acquire_or_renew(self) -> bool:
        """One attempt; False when the Lease is someone else's or the API said no."""
        try:
            return await self._acquire_or_renew_once()
        except Conflict:
            return False  # another replica created or updated it first
        except ApiError as error:
            log.warning("lease not acquired or renewed", lease=self._path, error=str(error))
            return False

    async def _acquire_or_renew_once(self) -> bool:
        settings = self._settings
        try:
            lease = await self._client.call("GET", self._path)
        except NotFound:
            await self._client.send(
                "POST",
                self._path.rsplit("/", 1)[0],
                body={
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": settings.lease_name},
                    "spec": self._lease_body(acquire_time=rfc3339(micro=True), transitions=0),
                },
            )
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"))
        if record != self._observed_record:
            self._observed_record = record
            self._observed_at = self._clock()
        held_by_me = holder == settings.identity
        duration = float(spec.get("leaseDurationSeconds") or settings.lease_duration_seconds)
        expired = self._clock() - self._observed_at >= duration
        if holder and not held_by_me and not expired:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        acquire_time = spec.get("acquireTime") or rfc3339(micro=True)
        if not held_by_me:
            transitions += 1
            acquire_time = rfc3339(micro=True)
        lease["spec"] = self._lease_body(acquire_time=acquire_time, transitions=transitions)
        updated = await self._client.call("PUT", self._path, body=lease)
        new_spec = updated["spec"]
        self._observed_record = (new_spec.get("holderIdentity"), new_spec.get("renewTime"))
        self._observed_at = self._clock()
        return True

    async def _release(self) -> None:
        """Give the Lease up so that a standby need not wait for it to expire."""
        with contextlib.suppress(ApiError):
            lease = await self._client.call("GET", self._path)
            if (lease.get("spec") or {}).get("holderIdentity") != self._settings.identity:
                return
            lease["spec"].update(
                {"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": rfc3339(micro=True)}
            )
            await self._client.send("PUT", self._path, body=lease)
            log.info("lease released", lease=self._path)
