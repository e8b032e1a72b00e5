"""Where a pending group is in line, on the real control plane: its status, the
printer column, and ``coscheduler queue`` reading ``/debug/queue``."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import SchedulerProcess, StartScheduler, console_script
from e2e.tests.helpers import podgroup, wait_bound
from e2e.waiting import wait_for

pytestmark = pytest.mark.e2e

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def positions(cluster: Cluster, namespace: str, names: list[str]) -> list[Any]:
    """Each group's (queuePosition, clusterPosition), None where its status has none."""
    found = []
    for name in names:
        status = podgroup(cluster, namespace, name).get("status") or {}
        found.append((status.get("queuePosition"), status.get("clusterPosition")))
    return found


def wait_positions(
    cluster: Cluster, namespace: str, expected: dict[str, tuple[int | None, int | None]]
) -> None:
    names = list(expected)
    wait_for(
        lambda: positions(cluster, namespace, names),
        lambda found: found == list(expected.values()),
        describe=f"positions in status {expected}",
    )


def queue_command(process: SchedulerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*console_script(), "queue", "--endpoint", f"http://127.0.0.1:{process.port}", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def listed(process: SchedulerProcess, namespace: str) -> list[Json]:
    result = queue_command(process, "--namespace", namespace, "--output", "json")
    assert result.returncode == 0, result.stderr
    rows: list[Json] = json.loads(result.stdout)
    return rows


def printed_positions(cluster: Cluster, namespace: str) -> dict[str, Any]:
    """The Position column of ``kubectl get podgroups``, by group name (the server's Table)."""
    status, text = cluster.api.raw(
        "GET",
        f"/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/{namespace}/podgroups",
        accept=TABLE,
    )
    assert status == 200, text
    table = json.loads(text)
    column = [c["name"] for c in table["columnDefinitions"]].index("Position")
    return {row["cells"][0]: row["cells"][column] for row in table["rows"]}


def test_three_groups_waiting_in_one_queue_show_their_places_and_move_up(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(1, cpu="4")
    process = start_scheduler("--preemption", "off")
    # The node is full; three gangs of two 2-cpu pods wait, each would fill it alone.
    w.create_pod(cluster.api, namespace, "blocker", pool=pool, cpu="4")
    wait_bound(cluster, namespace, 1, "the blocker bound")
    for name, priority in (("third", 10), ("first", 30), ("second", 20)):
        w.create_podgroup(cluster.api, namespace, name, 2, priority=priority)
        for index in range(2):
            w.create_pod(cluster.api, namespace, f"{name}-{index}", pool=pool, cpu="2", group=name)

    wait_positions(cluster, namespace, {"first": (1, 1), "second": (2, 2), "third": (3, 3)})
    assert printed_positions(cluster, namespace) == {"first": 1, "second": 2, "third": 3}
    rows = listed(process, namespace)
    assert [(r["name"], r["queue"], r["queuePosition"]) for r in rows] == [
        ("first", "default", 1),
        ("second", "default", 2),
        ("third", "default", 3),
    ]
    table = queue_command(process, "--namespace", namespace)
    print(table.stdout)
    assert [line.split()[4] for line in table.stdout.splitlines()[1:]] == [
        "first",
        "second",
        "third",
    ]
    scheduled = next(
        c
        for c in podgroup(cluster, namespace, "second")["status"]["conditions"]
        if c["type"] == "Scheduled"
    )
    assert "(position 2 in queue default, 2 in the cluster)" in scheduled["message"]

    # The blocker goes: the first is bound, the others move up.
    cluster.api.delete(f"/api/v1/namespaces/{namespace}/pods/blocker")
    wait_bound(cluster, namespace, 2, "the first gang bound, the blocker gone")
    wait_positions(cluster, namespace, {"first": (None, None), "second": (1, 1), "third": (2, 2)})
    assert [r["name"] for r in listed(process, namespace)] == ["second", "third"]


@pytest.mark.kubernetes("1.37", reason="Kubernetes' own PodGroup v1beta1 is served from 1.37")
@pytest.mark.skipif(
    os.environ.get("COSCHEDULER_E2E_GANG_API") == "0",
    reason="the session's cluster was started without the gang API",
)
def test_kubernetes_own_podgroups_tell_their_place_in_the_condition_we_write(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    """Upstream's status has no field for it: the message of ``PodGroupInitiallyScheduled``
    (False) ends with it, and ``coscheduler queue`` lists them."""
    add_nodes(1, cpu="4")
    process = start_scheduler("--preemption", "off")
    w.create_pod(cluster.api, namespace, "blocker", pool=pool, cpu="4")
    wait_bound(cluster, namespace, 1, "the blocker bound")
    for name in ("alpha", "beta"):  # alpha is older, or as old and first by name
        w.create_native_podgroup(cluster.api, namespace, name, 2)
        for index in range(2):
            w.create_native_member(
                cluster.api, namespace, f"{name}-{index}", group=name, pool=pool, cpu="2"
            )

    for place, name in enumerate(("alpha", "beta"), start=1):
        wait_told(
            cluster, namespace, name, f"(position {place} in its queue, {place} in the cluster)"
        )
    rows = listed(process, namespace)
    assert [(r["name"], r["kind"], r["queuePosition"]) for r in rows] == [
        ("alpha", "PodGroup.scheduling.k8s.io", 1),
        ("beta", "PodGroup.scheduling.k8s.io", 2),
    ]


def native_condition(cluster: Cluster, namespace: str, name: str) -> Json:
    group = cluster.api.get(f"{w.NATIVE_PODGROUPS.format(ns=namespace)}/{name}")
    found = [
        c
        for c in (group.get("status") or {}).get("conditions") or []
        if c["type"] == "PodGroupInitiallyScheduled"
    ]
    return found[0] if found else {}


def wait_told(cluster: Cluster, namespace: str, name: str, told: str) -> None:
    wait_for(
        lambda: native_condition(cluster, namespace, name),
        lambda c: c.get("status") == "False" and told in c.get("message", ""),
        describe=f"native PodGroup {name}'s condition ends with {told}",
    )
