"""A stand-in API server for :mod:`bench.steady_state_cpu`, run in a process of its own.

It answers what a scheduler asks in steady state the way a real API server
with KWOK does, so that the CPU of ours can be measured alone (the real
control plane shares the two cores with it): the lists (``nodes``, pending
``pods`` with their ``PodGroup`` label, the ``PodGroups``), as pages or as
watch-lists (``sendInitialEvents``, ended by their bookmark), every other list
empty, the pods' watch, Bindings (201 with a ``Status``), Events (created,
patched), status patches. After each Binding the pods' watch carries the two
updates a real cluster sends: bound (``nodeName``, ``PodScheduled``), then
running (KWOK's phase, conditions, IPs and container status). Objects carry
``managedFields`` as the API server's do. Counters are shared with the parent
through :class:`Counters`.
"""

from __future__ import annotations

import asyncio
import copy
import multiprocessing.sharedctypes
import socket
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

POD_GROUP_LABEL = "scheduling.sigs.k8s.io/pod-group"
NAMESPACE = "bench"
_NOW = "2026-01-01T00:00:00Z"


@dataclass
class Counters:
    """Requests answered, shared with the parent process."""

    bindings: Any
    events_created: Any
    events_patched: Any
    status_patches: Any
    pod_updates: Any
    other: Any

    @classmethod
    def new(cls) -> Counters:
        ctx = multiprocessing.get_context("fork")
        return cls(*(ctx.Value("q", 0, lock=False) for _ in range(6)))

    def snapshot(self) -> dict[str, int]:
        return {name: getattr(self, name).value for name in self.__dataclass_fields__}


def _managed(manager: str, operation: str, subresource: str = "") -> dict[str, Any]:
    entry = {
        "manager": manager,
        "operation": operation,
        "apiVersion": "v1",
        "time": _NOW,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {".": {}, f"f:{POD_GROUP_LABEL}": {}}},
            "f:spec": {
                "f:containers": {
                    'k:{"name":"main"}': {
                        ".": {},
                        "f:image": {},
                        "f:imagePullPolicy": {},
                        "f:name": {},
                        "f:resources": {".": {}, "f:requests": {".": {}, "f:cpu": {}}},
                        "f:terminationMessagePath": {},
                        "f:terminationMessagePolicy": {},
                    }
                },
                "f:dnsPolicy": {},
                "f:enableServiceLinks": {},
                "f:restartPolicy": {},
                "f:schedulerName": {},
                "f:securityContext": {},
                "f:terminationGracePeriodSeconds": {},
            },
        },
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def node_object(index: int, cpu: int) -> dict[str, Any]:
    name = f"kwok-node-{index}"
    capacity = {"cpu": str(cpu), "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": f"node-uid-{index}",
            "resourceVersion": "10",
            "creationTimestamp": _NOW,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"taints": []},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "lastHeartbeatTime": _NOW, "lastTransitionTime": _NOW},
            ],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
            "nodeInfo": {"kubeletVersion": "fake", "architecture": "amd64",
                         "operatingSystem": "linux"},
        },
    }  # fmt: skip


def pod_object(index: int, gang: str) -> dict[str, Any]:
    """A pending pod as the API server stores it after admission."""
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": f"{gang}-{index}",
            "namespace": NAMESPACE,
            "uid": f"pod-uid-{gang}-{index}",
            "resourceVersion": "100",
            "creationTimestamp": _NOW,
            "labels": {POD_GROUP_LABEL: gang},
            "managedFields": [_managed("bench", "Update")],
        },
        "spec": {
            "containers": [{
                "name": "main", "image": "registry.invalid/bench:1",
                "resources": {"requests": {"cpu": "1"}},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent",
            }],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "automountServiceAccountToken": False,
            "securityContext": {},
            "schedulerName": "coscheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }  # fmt: skip


def podgroup_object(gang: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": gang,
            "namespace": NAMESPACE,
            "uid": f"pg-uid-{gang}",
            "resourceVersion": "50",
            "generation": 1,
            "creationTimestamp": _NOW,
        },
        "spec": {"minMember": size},
    }


def bound(pod: dict[str, Any], node: str, version: int) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["metadata"]["resourceVersion"] = str(version)
    pod["spec"]["nodeName"] = node
    pod["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
         "lastTransitionTime": _NOW},
    ]  # fmt: skip
    return pod


def running(pod: dict[str, Any], version: int) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["metadata"]["resourceVersion"] = str(version)
    pod["metadata"]["managedFields"].append(_managed("kwok", "Update", "status"))
    conditions = [
        {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": _NOW}
        for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    pod["status"] = {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": "10.0.0.1",
        "hostIPs": [{"ip": "10.0.0.1"}],
        "podIP": "10.0.0.2",
        "podIPs": [{"ip": "10.0.0.2"}],
        "startTime": _NOW,
        "qosClass": "Burstable",
        "containerStatuses": [{
            "name": "main", "ready": True, "restartCount": 0, "started": True,
            "image": "registry.invalid/bench:1", "imageID": "", "containerID": "kwok://main",
            "state": {"running": {"startedAt": _NOW}}, "lastState": {},
        }],
    }  # fmt: skip
    return pod


class FakeCluster:
    def __init__(self, *, nodes: int, gangs: int, gang_size: int, counters: Counters) -> None:
        self.counters = counters
        self.nodes = [node_object(i, 32) for i in range(nodes)]
        names = [f"gang-{g}" for g in range(gangs)]
        self.groups = [podgroup_object(name, gang_size) for name in names]
        self.pods = {
            (pod := pod_object(i, name))["metadata"]["name"]: pod
            for name in names
            for i in range(gang_size)
        }
        self.version = 1000
        self.pod_watchers: list[asyncio.Queue[bytes]] = []

    def _next_version(self) -> int:
        self.version += 1
        return self.version

    def _publish(self, kind: str, obj: dict[str, Any]) -> None:
        line = orjson.dumps({"type": kind, "object": obj}) + b"\n"
        for queue in self.pod_watchers:
            queue.put_nowait(line)
        self.counters.pod_updates.value += 1

    async def _kwok(self, name: str, node: str) -> None:
        pod = self.pods[name] = bound(self.pods[name], node, self._next_version())
        self._publish("MODIFIED", pod)
        await asyncio.sleep(0.005)
        pod = self.pods[name] = running(pod, self._next_version())
        self._publish("MODIFIED", pod)

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        method = request.method
        body = await request.read()
        if method == "GET" and request.query.get("watch") == "true":
            return await self._watch(request)
        if method == "GET":
            return self._list(path)
        if method == "POST" and path.endswith("/binding"):
            name = path.split("/")[-2]
            target = orjson.loads(body)["target"]["name"]
            self.counters.bindings.value += 1
            if self.pods[name]["spec"].get("nodeName"):
                return _status(409, "Conflict", f'pod "{name}" is already assigned')
            task = asyncio.get_running_loop().create_task(self._kwok(name, target))
            _background.add(task)
            task.add_done_callback(_background.discard)
            return _json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                               "status": "Success", "code": 201})  # fmt: skip
        if method == "POST" and "/events" in path:
            self.counters.events_created.value += 1
            event = orjson.loads(body)
            event["metadata"].update(
                {"uid": f"ev-{self.version}", "resourceVersion": str(self._next_version()),
                 "creationTimestamp": _NOW})  # fmt: skip
            return _json(201, event)
        if method == "PATCH" and "/events/" in path:
            self.counters.events_patched.value += 1
            return _json(200, {"kind": "Event", "apiVersion": "v1", "metadata": {}})
        if method == "PATCH" and path.endswith("/status") and "/podgroups/" in path:
            self.counters.status_patches.value += 1
            name = path.split("/")[-2]
            group = next(g for g in self.groups if g["metadata"]["name"] == name)
            group = copy.deepcopy(group)
            group.update(orjson.loads(body))
            return _json(200, group)
        self.counters.other.value += 1
        return _json(200, {})

    def _items(self, path: str) -> list[dict[str, Any]]:
        if path == "/api/v1/nodes":
            return self.nodes
        if path == "/api/v1/pods":
            return list(self.pods.values())
        if path == "/apis/scheduling.sigs.k8s.io/v1alpha1/podgroups":
            return self.groups
        return []

    def _list(self, path: str) -> web.Response:
        return _json(
            200,
            {"kind": "List", "apiVersion": "v1",
             "metadata": {"resourceVersion": str(self.version)}, "items": self._items(path)},
        )  # fmt: skip

    async def _watch(self, request: web.BaseRequest) -> web.StreamResponse:
        response = web.StreamResponse(status=200)
        response.content_type = "application/json"
        await response.prepare(request)
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        if request.path == "/api/v1/pods":
            self.pod_watchers.append(queue)
        if request.query.get("sendInitialEvents") == "true":
            # A watch-list: every object as ADDED, then the bookmark that ends them.
            for item in self._items(request.path):
                await response.write(orjson.dumps({"type": "ADDED", "object": item}) + b"\n")
            end = {"kind": "Bookmark", "metadata": {
                "resourceVersion": str(self.version),
                "annotations": {"k8s.io/initial-events-end": "true"}}}  # fmt: skip
            await response.write(orjson.dumps({"type": "BOOKMARK", "object": end}) + b"\n")
        if request.path != "/api/v1/pods":
            await asyncio.Event().wait()  # nothing ever changes
        try:
            while True:
                line = await queue.get()
                await response.write(line)
        finally:
            self.pod_watchers.remove(queue)


_background: set[asyncio.Task[None]] = set()


def _json(status: int, body: Any) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def _status(code: int, reason: str, message: str) -> web.Response:
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    return _json(code, {**status, "reason": reason, "message": message, "code": code})


def serve(
    sock: socket.socket, *, nodes: int, gangs: int, gang_size: int, counters: Counters
) -> None:
    """Serve on ``sock`` until killed (the child process's body)."""
    cluster = FakeCluster(nodes=nodes, gangs=gangs, gang_size=gang_size, counters=counters)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = web.Server(cluster.handle)
        await loop.create_server(server, sock=sock)
        await asyncio.Event().wait()

    asyncio.run(main())


_ = multiprocessing.sharedctypes  # the Values above are of this module's types
