"""The start-up line: one ``started`` log line with the end of each phase.

The whole operator (:func:`coscheduler.app.run`) against the scripted API
server: one node, one pending pod of ours; the line is written when its
Binding is answered. Only the fields and their order are checked, never a
duration: timing is the benchmark's (``python -m bench run --suite startup``).
"""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from structlog.testing import capture_logs

from coscheduler import app
from coscheduler.api.adapters import t9k, volcano, xk8s
from coscheduler.api.timestamps import rfc3339
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.kinds import kinds
from coscheduler.runtime.settings import Settings
from coscheduler.runtime.startup import Startup, process_age
from tests.builders import Clock, node_object, pod_object
from tests.fed import Fed
from tests.runtime.apiserver import FakeApiServer, Reply, WatchStream, object_list
from tests.runtime.test_leader import LEASE, LeaseStore


class _Watched(Startup):
    """A start-up that says when its line is written."""

    def __init__(self) -> None:
        super().__init__(age=0.0)
        self.written = asyncio.Event()

    def bound(self) -> None:
        super().bound()
        self.written.set()


def _serve_one_pod(apiserver: FakeApiServer) -> None:
    # Every list answers empty (discovery too: no optional API served), then the ones that matter.
    apiserver.on("GET", "/api*", object_list([], resource_version="1"))
    apiserver.on("GET", "/api/v1/nodes", object_list([node_object("n1")], resource_version="1"))
    apiserver.on("GET", "/api/v1/pods", object_list([pod_object("p1")], resource_version="1"))
    apiserver.on("WATCH", "/api*", WatchStream([], then="hang"))
    apiserver.on("POST", "/api/v1/namespaces/*/pods/*/binding", Reply(201, {}))
    apiserver.on("POST", "/api/v1/namespaces/*/events", Reply(201, {}))


async def test_the_started_line_gives_each_phase_in_order(
    apiserver: FakeApiServer, tmp_path: Path
) -> None:
    _serve_one_pod(apiserver)
    settings = Settings(
        kubeconfig=str(apiserver.write_kubeconfig(tmp_path)),
        scheduler_name="coscheduler",
        leader_election={"enabled": False},
        serving={"address": "127.0.0.1", "port": 0},
    )
    startup = _Watched()
    startup.mark("imports")
    with capture_logs() as logs:
        task = asyncio.create_task(app.run(settings, startup))
        async with asyncio.timeout(5):
            await startup.written.wait()
        assert gc.isenabled()  # the lists' pause of the collector is over
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    [line] = [entry for entry in logs if entry["event"] == "started"]
    assert line["origin"] == "process"
    phases = ["imports", "client", "built", "listed", "first_decision", "first_binding"]
    assert [line[phase] for phase in phases] == sorted(line[phase] for phase in phases)
    assert "leading" not in line  # no leader election
    optional = (xk8s.API, volcano.API, t9k.API)  # PodGroup APIs this server does not serve
    not_served = {
        "queues",
        "queues.scheduling.volcano.sh",
        "replicasets",  # read only under Volcano's scheduler name
        "statefulsets",
        "workloads",
        "compositepodgroups",
        "workloads.kueue.x-k8s.io",
        *(f"podgroups.{api.group}" for api in optional),
    }
    table = kinds(Fed(Scheduler(Clock())).handlers)
    read = {kind.name for kind in table if not kind.name.startswith("podgroups.scheduling.k8s.io")}
    read -= not_served
    read.discard("workloads.scheduling.k8s.io/native")  # read only beside native PodGroups
    assert set(line["lists"]) == read
    assert all(line["built"] <= at <= line["listed"] for at in line["lists"].values())


def test_the_process_age_is_read_from_the_kernel() -> None:
    age = process_age()
    assert age is not None
    assert 0.0 < age < 24 * 3600
    assert Startup().origin == "process"


async def test_a_standby_lists_before_it_leads_and_binds_without_listing_again(
    apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """A warm standby: its handlers are synced while another replica holds the Lease."""
    _serve_one_pod(apiserver)
    lease = LeaseStore(apiserver, Clock())
    lease.hold("other", renew_time=rfc3339(micro=True))
    settings = Settings(
        kubeconfig=str(apiserver.write_kubeconfig(tmp_path)),
        scheduler_name="coscheduler",
        leader_election={
            "enabled": True,
            "identity": "standby",
            "lease_duration_seconds": 60,
            "renew_deadline_seconds": 30,
            "retry_period_seconds": 0.01,
        },
        serving={"address": "127.0.0.1", "port": 0},
    )
    startup = _Watched()
    with capture_logs() as logs:
        task = asyncio.create_task(app.run(settings, startup))
        await apiserver.wait_until(lambda: "listed" in startup.phases)
        await apiserver.wait_for("GET", LEASE, count=3)  # still another's: it waits
        assert not apiserver.requests_to("POST", "/api/v1/namespaces/default/pods/p1/binding")
        lease.hold("")  # the leader released it
        async with asyncio.timeout(5):
            await startup.written.wait()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    [line] = [entry for entry in logs if entry["event"] == "started"]
    assert line["listed"] <= line["leading"] <= line["first_binding"]
    assert line["after_leading"] == round(line["first_binding"] - line["leading"], 3)
    assert len(apiserver.requests_to("GET", "/api/v1/pods")) == 1  # no second list
    assert lease.writes[0][1]["holderIdentity"] == "standby"  # it took the Lease
    assert lease.holder == ""  # and released it on the way out
