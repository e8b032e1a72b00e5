"""What happened to every pod of a run, as seen by one watch on its namespace.

A single watch of a namespace delivers the pod changes in the order etcd committed
them (resourceVersion order), so replaying its events reproduces the exact sequence
of bindings and completions: the outcome checks (over-commit at every instant) and
the contention figures (utilization, resources held by incomplete gangs) are computed
from that replay. Times are this process's monotonic clock when an event arrived: the
same small watch lag for every peer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench import analysis
from bench.kube import ApiError, Kube
from bench.peers import GANG_LABEL
from coscheduler.api.quantity import float_quantity
from e2e.gangs import PodEvent, slim

Json = dict[str, Any]


@dataclass
class PodRecord:
    name: str
    gang: str
    cpu: float
    memory: float
    created: float | None = None
    """When the runner's create returned, or when the watch first saw it (Job pods)."""
    seen: float | None = None
    bound: float | None = None
    node: str | None = None
    finished: float | None = None
    phase: str = "Pending"
    deleted: float | None = None
    namespace: str = ""
    nodes_seen: list[str] = field(default_factory=list)
    terminating: float | None = None
    """When the watch first saw its ``deletionTimestamp`` (a graceful deletion began)."""
    disrupted: bool = False
    """It carried a ``DisruptionTarget`` condition (preempted or evicted)."""


@dataclass(frozen=True)
class Event:
    t: float
    kind: str  # "bind" | "finish" | "delete"
    pod: str


def pod_requests(pod: Json) -> tuple[float, float]:
    """Effective cpu (cores) and memory (bytes) requests: containers summed, max with init."""
    spec = pod.get("spec", {})

    def total(containers: list[Json]) -> tuple[float, float]:
        cpu = mem = 0.0
        for container in containers or []:
            requests = (container.get("resources") or {}).get("requests") or {}
            cpu += float_quantity(requests.get("cpu", "0"))
            mem += float_quantity(requests.get("memory", "0"))
        return cpu, mem

    cpu, mem = total(spec.get("containers", []))
    for init in spec.get("initContainers") or []:
        icpu, imem = total([init])
        cpu, mem = max(cpu, icpu), max(mem, imem)
    return cpu, mem


class Recorder:
    """Watches every pod of a namespace (every namespace: None) and keeps a record per pod
    and an event log. Pod names are the keys: a workload of several namespaces names its
    pods apart."""

    def __init__(self, kube: Kube, namespace: str | None) -> None:
        self.kube = kube
        self.namespace = namespace
        self.pods: dict[str, PodRecord] = {}
        self.events: list[Event] = []
        self.timeline: list[PodEvent] = []
        """Every pod event as seen (pods slimmed), for the gang invariant (e2e/gangs.py)."""
        self.t0 = time.monotonic()
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self.bound_count = 0
        self.finished_count = 0
        self.errors: list[str] = []

    def now(self) -> float:
        return time.monotonic() - self.t0

    async def start(self) -> None:
        listed = await self.kube.get(self._path())
        for item in listed.get("items", []):
            self._apply("ADDED", item)
        version = listed["metadata"]["resourceVersion"]
        self._task = asyncio.create_task(self._run(version))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    def _path(self) -> str:
        if self.namespace is None:
            return "/api/v1/pods"
        return f"/api/v1/namespaces/{self.namespace}/pods"

    async def _run(self, version: str) -> None:
        path = self._path()
        while True:
            try:
                async for event in self.kube.watch(path, version):
                    kind = event.get("type")
                    obj = event.get("object") or {}
                    if kind == "BOOKMARK":
                        version = obj["metadata"]["resourceVersion"]
                        continue
                    if kind == "ERROR":
                        raise ApiError("WATCH", path, int(obj.get("code", 500)), b"")
                    version = obj["metadata"]["resourceVersion"]
                    self._apply(str(kind), obj)
            except asyncio.CancelledError:
                raise
            except ApiError as error:
                if error.status == 410:
                    # Too old: it cannot resume exactly, which would break the replay.
                    self.errors.append(f"the pod watch expired (410) at {self.now():.1f}s")
                    return
                self.errors.append(str(error))
                await asyncio.sleep(0.2)
            except Exception as error:  # connection reset: resume from the last version
                self.errors.append(f"watch reconnect: {error!r}")
                await asyncio.sleep(0.2)

    def _apply(self, kind: str, pod: Json) -> None:
        now = self.now()
        self.timeline.append(PodEvent(now, kind, slim(pod)))
        meta = pod["metadata"]
        name = meta["name"]
        record = self.pods.get(name)
        if record is None:
            cpu, mem = pod_requests(pod)
            gang = (meta.get("labels") or {}).get(GANG_LABEL, name)
            record = self.pods[name] = PodRecord(name=name, gang=gang, cpu=cpu, memory=mem)
            record.seen = now
        record.namespace = meta.get("namespace", "")
        node = (pod.get("spec") or {}).get("nodeName")
        if node and (not record.nodes_seen or record.nodes_seen[-1] != node):
            record.nodes_seen.append(node)
            if record.bound is None:
                record.bound = now
                record.node = node
                self.bound_count += 1
                self.events.append(Event(now, "bind", name))
        phase = (pod.get("status") or {}).get("phase", "Pending")
        record.phase = phase
        if phase in ("Succeeded", "Failed") and record.finished is None:
            record.finished = now
            self.finished_count += 1
            self.events.append(Event(now, "finish", name))
        if meta.get("deletionTimestamp") and record.terminating is None:
            record.terminating = now
        if not record.disrupted:
            record.disrupted = any(
                c.get("type") == "DisruptionTarget" and c.get("status") == "True"
                for c in (pod.get("status") or {}).get("conditions") or []
            )
        if kind == "DELETED" and record.deleted is None:
            record.deleted = now
            self.events.append(Event(now, "delete", name))
        self._changed.set()

    def mark_created(self, name: str, gang: str, cpu: float, memory: float) -> None:
        now = self.now()
        record = self.pods.get(name)
        if record is None:
            record = self.pods[name] = PodRecord(name=name, gang=gang, cpu=cpu, memory=memory)
        record.created = now

    async def wait(
        self, condition: Callable[[Recorder], bool], *, within: float, poll: float = 0.5
    ) -> bool:
        """Wait until ``condition(self)`` holds; False on timeout."""
        deadline = time.monotonic() + within
        while not condition(self):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self._changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=min(poll, remaining))
        return True


class Sampler:
    """Samples /proc of the peer's processes: CPU seconds and peak RSS, the last seen kept.

    :meth:`mark` keeps a reading of a moment of the trial too: the CPU to the last Binding
    is the same window for every peer, where the trial's whole adds the trailing writes
    (status, events) that fall within its fixed settle.
    """

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.last: dict[str, Json] = {}
        self.marks: dict[str, dict[str, Json]] = {}
        self._task: asyncio.Task[None] | None = None

    def sample(self) -> None:
        for label, pid in self.pids.items():
            reading = analysis.read_proc(pid)
            if reading is not None:
                self.last[label] = reading

    def mark(self, moment: str) -> None:
        """Read now and keep the reading as ``moment``'s."""
        self.sample()
        self.marks[moment] = dict(self.last)

    async def _loop(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(0.5)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.sample()
