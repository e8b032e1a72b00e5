"""The dashboard's data: the queue tree, the line with its reasons, the room, a gang's page."""

from __future__ import annotations

from typing import Any

from coscheduler.api.adapters.apis import SIGS
from coscheduler.api.devices import DeviceClassInfo, ResourceClaimInfo, ResourceSliceInfo
from coscheduler.core.group import GroupKey
from coscheduler.core.scheduler import Scheduler
from coscheduler.dashboard.model import PageData, ShareHistory, refusals
from coscheduler.runtime.events import Recorded
from coscheduler.runtime.queue_listing import QueueListing
from coscheduler.runtime.readmodel import ReadModel
from tests.builders import Clock, decide, node_object, pod_object, podgroup_object
from tests.dra import DRIVER, claim, device_class, gpu_slice
from tests.fed import Fed

ZONE = "topology.kubernetes.io/zone"


def queue_object(name: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "Queue",
        "metadata": {"name": name, "uid": f"uid-q-{name}"},
        "spec": {"namespaces": ["default"], **spec},
    }


def cluster(events: list[Recorded] | None = None) -> tuple[Fed, PageData]:
    """Two zones of one 8-cpu node; org > (team-a, team-b); team-b's pair placed, team-a's
    gang of three 8-cpu members waiting behind it."""
    fed = Fed(Scheduler(Clock()))
    fed.handlers.nodes.replace([node_object(f"node-{z}", labels={ZONE: z}) for z in ("a", "b")])
    fed.handlers.queues.replace(
        [
            queue_object("org", nominal={"cpu": "16"}),
            queue_object("team-a", parent="org", weight=3, nominal={"cpu": "8"}),
            queue_object("team-b", parent="org", nominal={"cpu": "8"}),
        ]
    )
    fed.handlers.podgroups[SIGS].replace(
        [
            podgroup_object("pair", 2, queue="team-b", topology={"required": ZONE}),
            podgroup_object("big", 3, queue="team-a"),
        ]
    )
    fed.handlers.pods.replace(
        [pod_object(f"pair-{i}", group="pair", cpu="2") for i in range(2)]
        + [pod_object(f"big-{i}", group="big", cpu="8", created=5) for i in range(3)]
    )
    while (decision := decide(fed.scheduler)) is not None:
        fed.handlers.groups.set_verdict(
            decision.group, None if decision.status.ok else decision.status
        )
    view = ReadModel(fed.scheduler, fed.handlers)
    data = PageData(
        view,
        QueueListing(fed.scheduler, view.verdict),
        clock=lambda: 1000.0,
        role=lambda: "leader",
        events=lambda uids: [e for e in events or () if e.uid in uids],
    )
    return fed, data


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in items}


def test_the_queue_tree_matches_the_queues_with_their_use_and_fair_share() -> None:
    _, data = cluster()
    queues = by_name(data.overview()["queues"])
    assert set(queues) == {"org", "team-a", "team-b"}
    assert queues["team-a"]["parent"] == "org"
    assert queues["team-a"]["weight"] == 3
    assert queues["team-b"]["nominal"] == {"cpu": "8"}
    assert queues["team-b"]["allocated"]["cpu"] == "4"
    assert queues["team-b"]["cpuShare"] == 0.25  # 4 of the cluster's 16 cpu
    assert queues["team-a"]["pending"] == 1
    # team-a waits (backlogged): it is owed its nominal, half the cluster; team-b is not.
    assert queues["team-a"]["fairShare"] == 0.5
    assert queues["team-b"]["fairShare"] is None
    assert queues["team-b"]["history"] == [[1000.0], [0.25]]


def test_the_line_says_where_a_waiting_gang_stands_and_why() -> None:
    _, data = cluster()
    line = data.overview()["line"]
    assert line["total"] == 1
    (row,) = line["head"]
    assert (row["name"], row["queue"], row["clusterPosition"], row["queuePosition"]) == (
        "big",
        "team-a",
        1,
        1,
    )
    assert row["size"] == 3
    assert row["reason"] == "NotEnoughResources"
    assert row["refusals"] == [("Insufficient cpu", 2)]
    assert line["byQueue"] == {"team-a": [row]}


def test_the_room_groups_nodes_by_the_key_gangs_ask_for_and_shows_their_gangs() -> None:
    _, data = cluster()
    room = data.overview()["room"]
    assert room["keys"] == [ZONE]
    nodes = by_name(room["nodes"])
    placed = [name for name, node in nodes.items() if node.get("gangs")]
    assert len(placed) == 1  # the pair asked for one zone
    (gang_index,) = nodes[placed[0]]["gangs"]
    assert room["gangs"][gang_index] == ["default", "pair", "PodGroup"]
    free = dict(zip(room["resources"], nodes[placed[0]]["free"], strict=True))
    assert free["cpu"] == "4"
    assert nodes[placed[0]]["used"] == 0.5
    (domains,) = room["domains"]
    assert [v["value"] for v in domains["values"]] == ["a", "b"]
    assert sorted(v["free"]["cpu"] for v in domains["values"]) == ["4", "8"]
    # A node's domain is sent as the place of its value among the key's totals.
    assert [nodes["node-a"]["domains"], nodes["node-b"]["domains"]] == [[0], [1]]
    assert "cordoned" not in nodes["node-a"]


def test_a_gang_page_has_its_members_nodes_and_verdict() -> None:
    _, data = cluster()
    pair = data.gang("default", "pair")
    assert pair is not None
    assert {m["name"] for m in pair["members"]} == {"pair-0", "pair-1"}
    assert len({m["node"] for m in pair["members"]}) == 1
    assert pair["line"] is None
    assert pair["role"] == "leader"  # the page says when this process writes no events
    big = data.gang("default", "big")
    assert big is not None
    assert big["line"]["clusterPosition"] == 1
    assert big["verdict"]["refusals"] == [("Insufficient cpu", 2)]
    assert big["timeline"][0]["what"] == "created"
    assert data.gang("default", "nothing") is None


def test_refusals_read_the_cores_histogram_and_nothing_else() -> None:
    message = (
        "0/7 nodes are available for 3 pods of group demo/big: 5 Insufficient cpu, "
        "2 node(s) had untolerated taint {nvidia.com/gpu: present} (after 1 of them were placed)."
    )
    assert refusals(message) == [
        ("Insufficient cpu", 5),
        ("node(s) had untolerated taint {nvidia.com/gpu: present}", 2),
    ]
    in_a_domain = (
        "no domain of example.com/rack holds the 4 needed members of group bench/g; closest: "
        "example.com/rack=rack-0, with room for 0 of 4. 0/200 nodes are available for 4 pods "
        "of group bench/g: 200 Insufficient cpu."
    )
    assert refusals(in_a_domain) == [("Insufficient cpu", 200)]
    assert refusals("group demo/big has 1 of its 3 members") == []
    assert refusals(None) == []


def test_share_history_keeps_one_sample_per_interval_for_an_hour() -> None:
    history = ShareHistory(interval_seconds=30, span_seconds=90)
    for second in range(0, 200, 10):
        history.add(float(second), {"a": second / 1000})
    times, shares = history.of("a")
    assert times == [120.0, 150.0, 180.0]
    assert shares == [0.12, 0.15, 0.18]
    history.add(300.0, {})
    assert history.of("a") == [[], []]


def test_a_gang_timeline_has_its_events_the_members_alike_ones_as_one() -> None:
    refused = "0/2 nodes are available for 3 pods of group default/big: 2 Insufficient cpu."
    events = [
        Recorded("uid-default-big-0", "Warning", "FailedScheduling", refused, 4, 900.0),
        Recorded("uid-default-big-1", "Warning", "FailedScheduling", refused, 3, 950.0),
        Recorded("uid-pg-big", "Warning", "Unschedulable", refused, 1, 940.0),
        Recorded("uid-pg-pair", "Normal", "Scheduled", "placed", 1, 800.0),
    ]
    fed, data = cluster(events)
    uids = {pod.uid for pod in fed.handlers.groups.group_pods(GroupKey("default", "big"))}
    assert {"uid-default-big-0", "uid-default-big-1"} <= uids
    big = data.gang("default", "big")
    assert big is not None
    told = [
        (t["at"], t["reason"], t["count"], t["objects"]) for t in big["timeline"] if "count" in t
    ]
    assert told == [(940.0, "Unschedulable", 1, 1), (950.0, "FailedScheduling", 7, 2)]


def test_a_replica_that_made_no_attempt_shows_the_reason_the_leaders_status_gives() -> None:
    fed, data = cluster()
    key = GroupKey("default", "big")
    fed.handlers.groups.set_verdict(key, None)  # a standby's: no attempt of its own
    said = "0/2 nodes are available for 3 pods of group default/big: 2 Insufficient cpu."
    condition = {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources"}
    fed.handlers.podgroups[SIGS].upsert(
        podgroup_object(
            "big", 3, queue="team-a", status={"conditions": [{**condition, "message": said}]}
        )
    )
    (row,) = data.overview()["line"]["head"]
    assert (row["reason"], row["message"]) == ("NotEnoughResources", said)
    assert row["refusals"] == [("Insufficient cpu", 2)]


def test_a_queue_groups_name_without_an_object_is_shown_as_implicit() -> None:
    fed, data = cluster()
    fed.handlers.podgroups[SIGS].upsert(podgroup_object("lone", 1))  # the implicit default queue
    fed.handlers.pods.upsert(pod_object("lone-0", group="lone", cpu="64"))
    queues = by_name(data.overview()["queues"])
    assert queues["default"]["object"] is False
    assert queues["default"]["pending"] == 1
    assert queues["team-a"]["object"] is True


def test_the_room_shows_devices_and_free_ones_per_device_class() -> None:
    informed, data = cluster()
    devices = informed.scheduler.snapshot.devices
    devices.upsert_class(DeviceClassInfo.from_object(device_class()))
    devices.upsert_slice(ResourceSliceInfo.from_object(gpu_slice("node-a", 4)))
    written = [{"request": "gpus", "driver": DRIVER, "pool": "node-a", "device": "gpu-0"}]
    allocated = claim("c1", status={"allocation": {"devices": {"results": written}}})
    devices.upsert_claim(ResourceClaimInfo.from_object(allocated))
    room = data.overview()["room"]
    nodes = by_name(room["nodes"])
    assert nodes["node-a"]["devices"] == {"gpu": [3, 4]}
    assert "devices" not in nodes["node-b"]
    (domains,) = room["domains"]
    assert {v["value"]: v["devices"] for v in domains["values"]} == {
        "a": {"gpu": [3, 4]},
        "b": {},
    }
    assert room["sharedDevices"] == {}
