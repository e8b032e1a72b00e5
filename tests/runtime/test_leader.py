"""runtime/leader.py: the Lease rules of its docstring, on an injected clock.

Time that matters to the rules (lease duration, renew deadline) is the fake
clock's, moved by the server as requests arrive; the real waits between tries
are a hundredth of a second.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.leader import LeaderElector, LeadershipLostError
from coscheduler.runtime.settings import LeaderElectionSettings
from tests.builders import Clock
from tests.runtime.apiserver import (
    Answer,
    Disconnect,
    FakeApiServer,
    RecordedRequest,
    Reply,
    status_error,
)

LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
LEASE = f"{LEASES}/coscheduler"
SETTINGS = LeaderElectionSettings(
    identity="me",
    lease_duration_seconds=15,
    renew_deadline_seconds=10,
    retry_period_seconds=0.01,
)
LONG_AGO = "2000-01-01T00:00:00.000000Z"


class LeaseStore:
    """The API server's side of the Lease: one object, written only at its resourceVersion."""

    def __init__(self, apiserver: FakeApiServer, clock: Clock) -> None:
        self.clock = clock
        self.lease: dict[str, Any] | None = None
        self._version = 0
        #: Clock seconds added at each GET: time passing between two looks.
        self.seconds_per_look = 0.0
        #: Called at each GET, before answering: another replica's doing.
        self.meanwhile: Callable[[], None] = lambda: None
        #: Answer to PUTs instead of storing them, while set.
        self.refuse_updates: Answer | None = None
        #: (clock time, spec) of each write accepted.
        self.writes: list[tuple[float, dict[str, Any]]] = []
        apiserver.on("GET", LEASE, self.get)
        apiserver.on("POST", LEASES, self.create)
        apiserver.on("PUT", LEASE, self.update)

    def hold(self, holder: str, *, renew_time: str = LONG_AGO, transitions: int = 3) -> None:
        """The Lease as another replica left it."""
        self._store(
            {
                "holderIdentity": holder,
                "leaseDurationSeconds": 15,
                "acquireTime": LONG_AGO,
                "renewTime": renew_time,
                "leaseTransitions": transitions,
            }
        )

    @property
    def holder(self) -> str | None:
        return None if self.lease is None else self.lease["spec"]["holderIdentity"]

    def _store(self, spec: dict[str, Any]) -> dict[str, Any]:
        self._version += 1
        self.lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": "coscheduler",
                "namespace": "kube-system",
                "resourceVersion": str(self._version),
            },
            "spec": spec,
        }
        return self.lease

    def get(self, _: RecordedRequest) -> Answer:
        self.clock.advance(self.seconds_per_look)
        self.meanwhile()
        if self.lease is None:
            return status_error(404, "NotFound")
        return Reply(200, self.lease)

    def create(self, request: RecordedRequest) -> Answer:
        if self.lease is not None:
            return status_error(409, "AlreadyExists")
        self.writes.append((self.clock(), request.body["spec"]))
        return Reply(201, self._store(request.body["spec"]))

    def update(self, request: RecordedRequest) -> Answer:
        if self.refuse_updates is not None:
            return self.refuse_updates
        assert self.lease is not None
        if (
            request.body["metadata"].get("resourceVersion")
            != self.lease["metadata"]["resourceVersion"]
        ):
            return status_error(409, "Conflict", "the object has been modified")
        self.writes.append((self.clock(), request.body["spec"]))
        return Reply(200, self._store(request.body["spec"]))


@pytest.fixture
def store(apiserver: FakeApiServer, clock: Clock) -> LeaseStore:
    return LeaseStore(apiserver, clock)


def elector(kube: KubeClient, clock: Clock, changes: list[bool] | None = None) -> LeaderElector:
    on_change = None if changes is None else changes.append
    return LeaderElector(kube, SETTINGS, clock=clock, on_change=on_change)


async def never_leads(apiserver: FakeApiServer, candidate: LeaderElector, looks: int) -> None:
    """Campaign until the Lease was looked at ``looks`` times, checking it was never led."""

    async def lead() -> None:
        raise AssertionError("became leader")

    campaign = asyncio.create_task(candidate.run(lead))
    looked = asyncio.create_task(apiserver.wait_for("GET", LEASE, count=looks))
    await asyncio.wait({campaign, looked}, return_when=asyncio.FIRST_COMPLETED)
    if campaign.done():
        looked.cancel()
        raise AssertionError(f"the campaign ended: {campaign.exception()!r}")
    await looked
    campaign.cancel()
    with pytest.raises(asyncio.CancelledError):
        await campaign
    assert not candidate.is_leader


async def test_a_missing_lease_is_created_and_held(
    apiserver: FakeApiServer, kube: KubeClient, clock: Clock, store: LeaseStore
) -> None:
    changes: list[bool] = []
    candidate = elector(kube, clock, changes)
    led: list[bool] = []

    async def lead() -> None:
        led.append(candidate.is_leader)

    await candidate.run(lead)

    assert led == [True]
    assert changes == [True, False]
    [create] = apiserver.requests_to("POST", LEASES)
    assert create.body["spec"]["holderIdentity"] == "me"
    assert create.body["spec"]["leaseDurationSeconds"] == 15
    assert create.body["spec"]["leaseTransitions"] == 0


async def test_a_lease_held_by_another_is_not_taken_however_old_its_renew_time(
    apiserver: FakeApiServer, kube: KubeClient, clock: Clock, store: LeaseStore
) -> None:
    # Its renewTime is decades old, but clocks of two machines are never compared:
    # only our own clock, which has not moved, could tell it expired.
    store.hold("other", renew_time=LONG_AGO)

    await never_leads(apiserver, elector(kube, clock), looks=5)

    assert apiserver.requests_to("PUT") == []
    assert store.holder == "other"


async def test_a_holder_that_keeps_renewing_is_never_taken_over(
    apiserver: FakeApiServer, kube: KubeClient, clock: Clock, store: LeaseStore
) -> None:
    store.hold("other")
    renewals = iter(range(1, 1000))
    store.seconds_per_look = 10.0  # less than the lease duration between two looks
    store.meanwhile = lambda: store.hold(
        "other", renew_time=f"2030-01-01T00:00:{next(renewals):02}Z"
    )

    await never_leads(apiserver, elector(kube, clock), looks=6)

    assert apiserver.requests_to("PUT") == []


async def test_a_lease_unchanged_for_its_duration_on_our_clock_is_taken_over(
    apiserver: FakeApiServer, kube: KubeClient, clock: Clock, store: LeaseStore
) -> None:
    store.hold("crashed", transitions=3)
    store.seconds_per_look = 4.0
    candidate = elector(kube, clock)
    first_look = clock() + store.seconds_per_look
    led_at: list[float] = []

    async def lead() -> None:
        led_at.append(clock())

    await candidate.run(lead)

    [taken_at] = led_at
    assert 15 <= taken_at - first_look < 15 + store.seconds_per_look
    take_over = apiserver.requests_to("PUT", LEASE)[0]
    assert take_over.body["metadata"]["resourceVersion"] == "1", "written at the version read"
    assert take_over.body["spec"]["holderIdentity"] == "me"
    assert take_over.body["spec"]["leaseTransitions"] == 4
    assert take_over.body["spec"]["acquireTime"] != LONG_AGO


async def test_the_leader_renews_every_retry_period_at_the_latest_version(
    apiserver: FakeApiServer, kube: KubeClient, clock: Clock, store: LeaseStore
) -> None:
    candidate = elector(kube, clock)

    async def lead() -> None:
        await apiserver.wait_for("PUT", LEASE, count=3)

    await candidate.run(lead)

    renewals = apiserver.requests_to("PUT", LEASE)[:3]
    # Each renewal is written at the version the previous write produced.
    assert [r.body["metadata"]["resourceVersion"] for r in renewals] == ["1", "2", "3"]
    created_spec = store.writes[0][1]
    for renewal in renewals:
        spec = renewal.body["spec"]
        assert spec["holderIdentity"] == "me"
        assert spec["acquireTime"] == created_spec["acquireTime"]
        assert spec["leaseTransitions"] == 0


@pytest.mark.parametrize(
    "refusal",
    [
        pytest.param(status_error(500, "InternalError"), id="500"),
        pytest.param(status_error(409, "Conflict"), id="409-someone-else-wrote"),
        pytest.param(Disconnect(), id="no-answer"),
    ],
)
async def test_leading_stops_once_renewals_failed_for_the_renew_deadline(
    apiserver: FakeApiServer,
    kube: KubeClient,
    clock: Clock,
    store: LeaseStore,
    refusal: Answer,
) -> None:
    changes: list[bool] = []
    candidate = elector(kube, clock, changes)
    lead_cancelled = asyncio.Event()
    lost_at: list[float] = []

    async def lead() -> None:
        store.refuse_updates = refusal
        store.seconds_per_look = 3.0
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            lost_at.append(clock())
            lead_cancelled.set()
            raise

    with pytest.raises(LeadershipLostError):
        await candidate.run(lead)

    assert lead_cancelled.is_set(), "the leading work is stopped"
    last_renewed = store.writes[-1][0]
    assert 10 <= lost_at[0] - last_renewed < 10 + 3
    assert changes == [True, False]
    assert store.holder == "me", "nothing is written once the lease is lost"


async def test_a_renewal_failing_for_less_than_the_deadline_keeps_the_lease(
    apiserver: FakeApiServer, kube: KubeClient, clock: Clock, store: LeaseStore
) -> None:
    candidate = elector(kube, clock)

    async def lead() -> None:
        store.refuse_updates = status_error(503, "ServiceUnavailable")
        store.seconds_per_look = 3.0
        await apiserver.wait_for("PUT", LEASE, count=3)  # 9 s without a renewal
        store.refuse_updates = None
        await apiserver.wait_for("PUT", LEASE, count=5)  # the 4th was refused or written
        assert candidate.is_leader

    await candidate.run(lead)  # returns normally: no LeadershipLostError

    assert store.writes[-1][1]["holderIdentity"] == "", "renewed, then released"
    assert len(store.writes) >= 3, "created, renewed at least once, released"


async def test_a_shutdown_that_lands_as_a_renewal_is_answered_stops_renewing(
    apiserver: FakeApiServer, kube: KubeClient, clock: Clock, store: LeaseStore
) -> None:
    async def lead() -> None:
        await asyncio.Event().wait()

    campaign = asyncio.create_task(elector(kube, clock).run(lead))
    renewals_before_shutdown = 2

    def renew_then_shut_down(request: RecordedRequest) -> Answer:
        answer = store.update(request)
        if len(store.writes) == 1 + renewals_before_shutdown:
            # The elector reads its clock when the answer reaches it: cancel right then,
            # as a SIGTERM landing at that moment would.
            loop = asyncio.get_running_loop()
            clock.at_next_read = lambda: loop.call_soon(campaign.cancel)
        return answer

    apiserver.on("PUT", LEASE, renew_then_shut_down)

    done, _ = await asyncio.wait({campaign}, timeout=1.0)
    assert done, "the shutdown hangs: the renewal ignored its cancellation"
    assert campaign.cancelled()
    requests_at_shutdown = len(apiserver.requests)
    await asyncio.sleep(5 * SETTINGS.retry_period_seconds)
    assert len(apiserver.requests) == requests_at_shutdown, "renewals go on after shutdown"
    assert store.holder == "", "released on the way out"


async def test_a_conflict_when_taking_a_free_lease_is_a_race_lost(
    apiserver: FakeApiServer, kube: KubeClient, clock: Clock, store: LeaseStore
) -> None:
    store.hold("", transitions=1)  # released by its last holder

    def rival_wins(request: RecordedRequest) -> Answer:
        store.hold("rival", renew_time="2030-01-01T00:00:00Z", transitions=2)
        return status_error(409, "Conflict", "the object has been modified")

    apiserver.on("PUT", LEASE, rival_wins, store.update)

    await never_leads(apiserver, elector(kube, clock), looks=5)

    assert len(apiserver.requests_to("PUT")) == 1, "the rival's lease is left alone"
    assert store.holder == "rival"


async def test_a_clean_shutdown_releases_the_lease(
    apiserver: FakeApiServer, kube: KubeClient, clock: Clock, store: LeaseStore
) -> None:
    async def lead() -> None:
        return

    await elector(kube, clock).run(lead)

    assert store.lease is not None
    assert store.holder == ""
    assert store.lease["spec"]["leaseDurationSeconds"] == 1
