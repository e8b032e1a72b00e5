"""Reading the cluster in the e2e tests: the helpers more than one test file needs.

Pods, PodGroups (ours and scheduler-plugins'), waiting for either, and
printing what a person sees with ``kubectl`` (``pytest -s``; the README quotes it).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.waiting import DEFAULT_TIMEOUT_SECONDS, wait_for

GROUP_TIMEOUT_SECONDS = 60.0
"""How long ``wait_group`` waits unless told: a group's status follows its pods."""

# -- pods -----------------------------------------------------------------------------------------


def pods(cluster: Cluster, namespace: str, selector: str | None = None) -> list[Json]:
    return w.list_pods(cluster.api, namespace, selector)


def on_nodes(items: list[Json]) -> list[Json]:
    """The pods bound to a node (finished ones too)."""
    return [p for p in items if (p.get("spec") or {}).get("nodeName")]


def bound(cluster: Cluster, namespace: str, selector: str | None = None) -> list[Json]:
    """The namespace's pods bound to a node (of ``selector``, if given)."""
    return on_nodes(pods(cluster, namespace, selector))


def pod_names(items: list[Json]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in items)


def condition(item: Json, kind: str) -> Json:
    """The object's status condition of type ``kind`` (a pod's, a PodGroup's), or ``{}``."""
    for found in (item.get("status") or {}).get("conditions") or []:
        if found["type"] == kind:
            return dict(found)
    return {}


def pod_scheduled(pod: Json) -> Json:
    """The pod's PodScheduled condition, or ``{}``."""
    return condition(pod, "PodScheduled")


def wait_bound(
    cluster: Cluster,
    namespace: str,
    count: int,
    what: str,
    *,
    selector: str | None = None,
    at_least: bool = False,
) -> list[Json]:
    """Wait until ``count`` pods of the namespace are bound (or at least that many); its pods."""

    def enough(items: list[Json]) -> bool:
        placed = len(on_nodes(items))
        return placed >= count if at_least else placed == count

    return wait_for(lambda: pods(cluster, namespace, selector), enough, describe=what)


PROMPT_EVENTS = ("--event-interval-seconds", "2")
"""Scheduler flags for a test that waits for an event whose message changed.

A new message in an event series is written at once only if the series was
last written ``--event-interval-seconds`` ago, else when that time has passed
(coscheduler/runtime/events.py): 30 s by default, so a pod told first that its
group is short of members and then why it does not fit shows the second
message only 30 s later. With these flags ``wait_not_scheduled`` waits 2 s
for it, not 30.
"""


def wait_pod(
    cluster: Cluster, namespace: str, name: str, check: Callable[[Json], bool], what: str
) -> Json:
    return wait_for(
        lambda: cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/{name}"),
        check,
        describe=f"pod {namespace}/{name}: {what}",
    )


def wait_not_scheduled(
    cluster: Cluster, namespace: str, name: str, reason: str, *, says: str = ""
) -> Json:
    """Wait for ``PodScheduled=False`` with ``reason`` (and a message holding ``says``) and a
    FailedScheduling event saying why.

    ``says`` waits past a passing reason: a pod may first be unschedulable for a cause that
    clears by itself (its ResourceClaim not created yet by the controller) before the one
    the test is about.
    """
    pod = wait_pod(
        cluster,
        namespace,
        name,
        lambda p: (
            pod_scheduled(p).get("status") == "False"
            and pod_scheduled(p).get("reason") == reason
            and says in pod_scheduled(p).get("message", "")
        ),
        f"PodScheduled=False, {reason}" + (f", saying {says!r}" if says else ""),
    )
    message = pod_scheduled(pod)["message"]
    path = f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name={name}"
    wait_for(
        lambda: cluster.api.get(path).get("items", []),
        lambda items: any(
            e["reason"] == "FailedScheduling" and e["message"] == message for e in items
        ),
        describe=f"a FailedScheduling event on {name} with the condition's message",
    )
    return pod


def wait_pod_bound(cluster: Cluster, namespace: str, name: str) -> Json:
    """Wait until the pod ``name`` is bound and says ``PodScheduled=True``."""
    return wait_pod(
        cluster,
        namespace,
        name,
        lambda p: bool(p["spec"].get("nodeName")) and pod_scheduled(p).get("status") == "True",
        "bound, PodScheduled=True",
    )


def unbound_names(cluster: Cluster, namespace: str) -> list[str]:
    return pod_names([p for p in pods(cluster, namespace) if not p["spec"].get("nodeName")])


# -- PodGroups ------------------------------------------------------------------------------------


def podgroup_path(namespace: str, name: str, *, xk8s: bool = False) -> str:
    """Our PodGroup's path, or with ``xk8s`` scheduler-plugins' (``scheduling.x-k8s.io``)."""
    return f"{(w.XK8S_PODGROUPS if xk8s else w.PODGROUPS).format(ns=namespace)}/{name}"


def podgroup(cluster: Cluster, namespace: str, name: str, *, xk8s: bool = False) -> Json:
    return cluster.api.get(podgroup_path(namespace, name, xk8s=xk8s))


def status_of(group: Json) -> Json:
    """The PodGroup's status, ``{}`` before it has one."""
    status: Json = group.get("status") or {}
    return status


def wait_group(
    cluster: Cluster,
    namespace: str,
    name: str,
    check: Callable[[Json], bool],
    what: str,
    *,
    xk8s: bool = False,
    timeout: float = GROUP_TIMEOUT_SECONDS,
) -> Json:
    """Wait until the PodGroup passes ``check``; the group."""
    api = " (scheduling.x-k8s.io)" if xk8s else ""
    return wait_for(
        lambda: podgroup(cluster, namespace, name, xk8s=xk8s),
        check,
        describe=f"PodGroup {namespace}/{name}{api}: {what}",
        timeout=timeout,
    )


def wait_their_group(
    cluster: Cluster,
    namespace: str,
    name: str,
    check: Callable[[Json], bool],
    what: str,
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> Json:
    """Wait until a ``scheduling.x-k8s.io`` PodGroup's status passes ``check``; the group."""
    return wait_group(
        cluster, namespace, name, lambda g: check(status_of(g)), what, xk8s=True, timeout=timeout
    )


# -- what a person sees ---------------------------------------------------------------------------


def show(cluster: Cluster, namespace: str, *args: str) -> None:
    """Print ``kubectl ARGS -n NAMESPACE`` and its output."""
    command = [*args, "-n", namespace]
    out = cluster.kubectl(*command).stdout
    print(f"\n$ kubectl {' '.join(command)}\n{out}", end="" if out.endswith("\n") else "\n")


def light_share_median(
    cluster: Cluster, namespace: str, light: str, *, saturated: int, seconds: float = 120
) -> float:
    """The median share of the bound pods whose names start with ``light`` among all bound,
    sampled while at least ``saturated`` are bound and both kinds still have pods waiting
    (at least 10 samples)."""
    shares: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        running = {True: 0, False: 0}
        waiting = {True: 0, False: 0}
        for p in w.list_pods(cluster.api, namespace):
            lit = p["metadata"]["name"].startswith(light)
            if not p["spec"].get("nodeName"):
                waiting[lit] += 1
            elif p["status"].get("phase") not in ("Succeeded", "Failed"):
                running[lit] += 1
        if not waiting[True] or not waiting[False]:
            if shares:
                break  # one backlog ran dry: the shares are no longer both wanted
        elif sum(running.values()) >= saturated:
            shares.append(running[True] / sum(running.values()))
        time.sleep(0.5)
    assert len(shares) >= 10, f"too few saturated samples: {shares}"
    shares.sort()
    return shares[len(shares) // 2]
