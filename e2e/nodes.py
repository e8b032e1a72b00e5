"""Fake nodes that KWOK plays the kubelet for.

Why through the API and not KWOK's own config: a scheduler reacts to nodes
appearing and disappearing, so tests must add and remove them while the
cluster runs, exactly as a cloud autoscaler would. A node carries the
annotation KWOK selects on (``kwok.x-k8s.io/node: fake``) and its capacity;
KWOK's node stages then fill its conditions, keep it Ready and heartbeat its
Lease so that the node-lifecycle controller never marks it unreachable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from e2e.api import ApiClient, Json
from e2e.processes import wait_until

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_SELECTOR = f"{KWOK_ANNOTATION}=fake"
"""The annotation selector KWOK is started with: it manages only these nodes."""

GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_PODS = 110
NODE_READY_TIMEOUT_SECONDS = 120.0
CREATE_CONCURRENCY = 16


@dataclass(frozen=True)
class Taint:
    """A node taint, parsed from ``key=value:Effect`` (or ``key:Effect``)."""

    key: str
    value: str
    effect: str

    @classmethod
    def parse(cls, text: str) -> Taint:
        match = re.fullmatch(r"([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)", text)
        if not match:
            raise ValueError(
                f"bad taint {text!r}: expected key=value:Effect, "
                "Effect one of NoSchedule, PreferNoSchedule, NoExecute"
            )
        return cls(key=match.group(1), value=match.group(2) or "", effect=match.group(3))

    def to_json(self) -> Json:
        taint: Json = {"key": self.key, "effect": self.effect}
        if self.value:
            taint["value"] = self.value
        return taint


def parse_label(text: str) -> tuple[str, str]:
    """Parse ``key=value`` into a pair, with an error a person understands."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ValueError(f"bad label {text!r}: expected key=value")
    return key, value


@dataclass(frozen=True)
class NodeSpec:
    """What a fake node offers: its allocatable resources, labels and taints."""

    name: str
    cpu: str = "8"
    memory: str = "32Gi"
    gpus: int = 0
    pods: int = DEFAULT_PODS
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()

    def manifest(self) -> Json:
        """The Node object, status included: KWOK keeps what is given and adds conditions."""
        resources = {"cpu": self.cpu, "memory": self.memory, "pods": str(self.pods)}
        if self.gpus:
            resources[GPU_RESOURCE] = str(self.gpus)
        labels = {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "type": "kwok",
            **self.labels,
        }
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": labels,
                "annotations": {KWOK_ANNOTATION: "fake"},
            },
            "spec": {"taints": [t.to_json() for t in self.taints]},
            "status": {
                "capacity": dict(resources),
                "allocatable": dict(resources),
                "nodeInfo": {"kubeletVersion": "fake", "architecture": "amd64"},
            },
        }


def add_nodes(api: ApiClient, specs: Iterable[NodeSpec], *, wait_ready: bool = True) -> list[str]:
    """Create the nodes and, by default, wait until KWOK reports each one Ready."""
    specs = list(specs)
    # A few requests in flight: a benchmark's 1,000 nodes then take seconds, not half a minute.
    with ThreadPoolExecutor(max_workers=CREATE_CONCURRENCY) as pool:
        list(pool.map(lambda spec: api.create("/api/v1/nodes", spec.manifest()), specs))
    names = [spec.name for spec in specs]
    if wait_ready:
        wait_nodes_ready(api, names)
    return names


def remove_nodes(api: ApiClient, names: Iterable[str], *, wait_gone: bool = True) -> None:
    """Delete the nodes; pods bound to them are left to the pod garbage collector."""
    names = list(names)
    for name in names:
        api.delete(f"/api/v1/nodes/{name}")
    if wait_gone:
        wait_until(
            lambda: all(api.get_or_none(f"/api/v1/nodes/{n}") is None for n in names),
            timeout=NODE_READY_TIMEOUT_SECONDS,
            what=f"nodes {', '.join(names)} to be deleted",
        )


def wait_nodes_ready(api: ApiClient, names: Sequence[str], *, timeout: float | None = None) -> None:
    """Wait until every named node has condition Ready=True and no not-ready taint.

    Thousands of nodes take KWOK minutes on a small machine, and listing them all twice a
    second would take the cores it needs: the limit grows and the polling slows with the
    node count (by default 120 s up to 600 nodes, then 0.2 s a node; a poll every 0.5 s up
    to 1,000). 1,000 nodes missed 120 s on this 2-core machine at load 15-19; waiting
    longer costs nothing when they are Ready sooner.
    """
    pending: set[str] = set(names)
    if timeout is None:
        timeout = max(NODE_READY_TIMEOUT_SECONDS, len(names) * 0.2)
    interval = max(0.5, len(names) / 2_000)

    def check() -> bool:
        listed = api.get("/api/v1/nodes?labelSelector=type%3Dkwok")
        ready = {n["metadata"]["name"] for n in listed["items"] if is_ready(n)}
        pending.difference_update(ready)
        return not pending

    wait_until(
        check,
        timeout=timeout,
        what=f"{len(names)} node(s) to become Ready",
        interval=interval,
        last_seen=lambda: f"not Ready yet: {', '.join(sorted(pending)[:10])}",
    )


def is_ready(node: Json) -> bool:
    """Ready=True, and the not-ready taints the node-lifecycle controller adds are gone."""
    conditions = node.get("status", {}).get("conditions", [])
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    taints = node.get("spec", {}).get("taints") or []
    blocked = any(t.get("key", "").startswith("node.kubernetes.io/not-ready") for t in taints)
    return ready and not blocked


def next_names(api: ApiClient, count: int, prefix: str = "kwok-node-") -> list[str]:
    """The next ``count`` free names ``<prefix><i>``, continuing after the highest in use."""
    listed = api.get("/api/v1/nodes")
    used = [
        int(match.group(1))
        for item in listed["items"]
        if (match := re.fullmatch(re.escape(prefix) + r"(\d+)", item["metadata"]["name"]))
    ]
    start = max(used, default=-1) + 1
    return [f"{prefix}{i}" for i in range(start, start + count)]
