"""Outcome checks and figures, computed from a run's replayed pod events.

The checks come first: a run whose outcome is wrong (a pod bound twice, a node
over-committed, a pod left pending that should have been bound, a gang left half bound by
a gang scheduler) reports the failure and no figure.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: observe imports this module
    from bench.observe import PodRecord, Recorder

Json = dict[str, Any]
EPSILON = 1e-9


@dataclass(frozen=True)
class NodeCapacity:
    cpu: float
    memory: float
    pods: int


@dataclass(frozen=True)
class GangInfo:
    name: str
    size: int
    min_member: int


def check_outcome(
    recorder: Recorder,
    nodes: dict[str, NodeCapacity],
    gangs: dict[str, GangInfo],
    *,
    expect_all_bound: bool,
    gang_peer: bool,
) -> list[str]:
    """Return the failures of a run (empty when the outcome is right)."""
    failures: list[str] = []
    pods = recorder.pods
    if recorder.errors and any("410" in e for e in recorder.errors):
        failures.append("the pod watch could not follow the whole run: " + recorder.errors[-1])

    rebound = [p.name for p in pods.values() if len(p.nodes_seen) > 1]
    if rebound:
        failures.append(f"{len(rebound)} pod(s) bound to more than one node: {rebound[:5]}")
    unknown = sorted({p.node for p in pods.values() if p.node and p.node not in nodes})
    if unknown:
        failures.append(f"pods bound to nodes that do not exist: {unknown[:5]}")

    over = replay_overcommit(recorder, nodes)
    if over:
        failures.append(f"{len(over)} over-commit(s), first: {over[0]}")

    if expect_all_bound:
        pending = sorted(p.name for p in pods.values() if p.bound is None and p.deleted is None)
        if pending:
            failures.append(
                f"{len(pending)} pod(s) left unbound that fit the cluster: {pending[:5]}"
            )
    if gang_peer:
        bound_by_gang: dict[str, int] = defaultdict(int)
        for pod in pods.values():
            if pod.bound is not None:
                bound_by_gang[pod.gang] += 1
        partial = [
            f"{name} ({bound_by_gang[name]}/{gang.min_member})"
            for name, gang in gangs.items()
            if 0 < bound_by_gang.get(name, 0) < gang.min_member
        ]
        if partial:
            failures.append(f"{len(partial)} gang(s) left partially bound: {partial[:5]}")
    return failures


def replay_overcommit(recorder: Recorder, nodes: dict[str, NodeCapacity]) -> list[str]:
    """Replay binds and completions in commit order; report every node over its allocatable."""
    used: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    active: set[str] = set()
    found: list[str] = []
    for event in recorder.events:
        pod = recorder.pods[event.pod]
        if pod.node is None or pod.node not in nodes:
            continue
        use = used[pod.node]
        if event.kind == "bind":
            active.add(pod.name)
            use[0] += pod.cpu
            use[1] += pod.memory
            use[2] += 1
            cap = nodes[pod.node]
            if use[0] > cap.cpu + EPSILON or use[1] > cap.memory + EPSILON or use[2] > cap.pods:
                found.append(
                    f"node {pod.node} at {event.t:.1f}s after binding {pod.name}: "
                    f"cpu {use[0]:g}/{cap.cpu:g}, memory {use[1] / 2**30:.1f}/"
                    f"{cap.memory / 2**30:.1f}Gi, pods {int(use[2])}/{cap.pods}"
                )
        elif pod.name in active:  # finish or delete frees its requests
            active.discard(pod.name)
            use[0] -= pod.cpu
            use[1] -= pod.memory
            use[2] -= 1
    return found


# --- figures --------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[rank]


def throughput_figures(recorder: Recorder, started: float) -> Json:
    pods = [p for p in recorder.pods.values() if p.bound is not None]
    if not pods:
        return {"pods_bound": 0}
    times = [p.bound for p in pods if p.bound is not None]
    first, last = min(times), max(times)
    created = [p.created for p in recorder.pods.values() if p.created is not None]
    window = max(last - first, 1e-3)
    return {
        "pods_bound": len(pods),
        "bind_rate_pods_per_s": round(len(pods) / window, 1),
        "first_bind_after_start_s": round(first - started, 2),
        "all_bound_after_start_s": round(last - started, 2),
        "all_bound_after_last_create_s": round(last - max(created), 2) if created else None,
        "pods_per_s_from_start": round(len(pods) / max(last - started, 1e-3), 1),
    }


def gang_latencies(recorder: Recorder, gangs: dict[str, GangInfo]) -> dict[str, float]:
    """Per gang: from its last member's creation to its min_member-th binding."""
    by_gang: dict[str, list[PodRecord]] = defaultdict(list)
    for pod in recorder.pods.values():
        by_gang[pod.gang].append(pod)
    result = {}
    for name, gang in gangs.items():
        members = by_gang.get(name, [])
        created = [p.created if p.created is not None else p.seen for p in members]
        known = [moment for moment in created if moment is not None]
        binds = sorted(p.bound for p in members if p.bound is not None)
        if len(binds) >= gang.min_member and known and len(known) == len(created):
            result[name] = binds[gang.min_member - 1] - max(known)
    return result


def contention_figures(
    recorder: Recorder,
    gangs: dict[str, GangInfo],
    submitted: dict[str, float],
    total_cpu: float,
    *,
    qps: float,
    sample_step: float = 1.0,
    amount: Callable[[PodRecord], float] | None = None,
    committed: Mapping[str, float] | None = None,
    peer_started: float | None = None,
) -> Json:
    """Makespan, waits, utilization, partial gangs and cpu-seconds held by incomplete gangs.

    The first gang made whole is counted from its Job's creation (``waits``), and also
    from the peer's start (``peer_started``: start-up included) and from the peer's first
    Binding of the workload (how soon a gang completes once it binds at all).

    ``amount``: what a bound pod holds, when not its cpu (the ``dra`` suite: its GPUs);
    the held and utilization figures are then in that unit, over ``total_cpu`` of it.
    ``committed``: when the API server committed each pod's Binding, by its own clock
    (:func:`bench.identity.binding_commits`); a gang's bindings are timed by it where
    known (:func:`on_watch_clock`), not by when the watch saw them.

    A gang's bindings are separate API writes, so even an all-at-once scheduler shows a
    gang with some but not all members bound for the moment its bindings are in flight.
    That moment ("bind burst") is allowed ``1 s + min_member / qps`` (the time the client
    limit itself imposes) and counted apart; what lasts longer is holding. Timed by the
    watch alone, its lag (up to a second on a loaded machine) can pass that allowance.
    """
    pods = recorder.pods
    held_by = amount or (lambda pod: pod.cpu)
    bound_at = on_watch_clock(recorder, committed or {})
    by_gang: dict[str, list[PodRecord]] = defaultdict(list)
    for pod in pods.values():
        by_gang[pod.gang].append(pod)

    # Replay per gang: active bound members over time, before the gang first reaches min.
    held_cpu_s = 0.0
    burst_cpu_s = 0.0
    partial = 0
    waits: dict[str, float] = {}
    admitted: list[float] = []
    first_binds: list[float] = []
    done: dict[str, float] = {}
    for name, gang in gangs.items():
        members = by_gang.get(name, [])
        events = []
        for p in members:
            if p.bound is not None:
                events.append((bound_at.get(p.name, p.bound), 1, held_by(p)))
                end = (
                    min(t for t in (p.finished, p.deleted) if t is not None)
                    if (p.finished is not None or p.deleted is not None)
                    else None
                )
                if end is not None:
                    events.append((end, -1, held_by(p)))
        events.sort()
        active = 0
        cpu = 0.0
        last_t = None
        admitted_at = None
        incomplete_cpu_s = 0.0
        first_bind = None
        for t, delta, c in events:
            if admitted_at is None and last_t is not None and 0 < active < gang.min_member:
                incomplete_cpu_s += cpu * (t - last_t)
            active += delta
            cpu += c * delta
            last_t = t
            if delta > 0 and first_bind is None:
                first_bind = t
            if admitted_at is None and active >= gang.min_member:
                admitted_at = t
        if admitted_at is None and active > 0 and last_t is not None:
            incomplete_cpu_s += cpu * (recorder.now() - last_t)  # still holding at the end
        allowance = 1.0 + gang.min_member / qps
        span = (admitted_at if admitted_at is not None else recorder.now()) - (first_bind or 0)
        if first_bind is not None and (admitted_at is None or span > allowance):
            partial += 1
            held_cpu_s += incomplete_cpu_s
        else:
            burst_cpu_s += incomplete_cpu_s
        if admitted_at is not None and name in submitted:
            waits[name] = admitted_at - submitted[name]
            admitted.append(admitted_at)
        if first_bind is not None:
            first_binds.append(first_bind)
        finished = [p.finished for p in members if p.finished is not None]
        if members and len(members) >= gang.size and len(finished) == len(members):
            done[name] = max(finished)

    start = min(submitted.values()) if submitted else 0.0
    end = max(done.values()) if done else recorder.now()
    makespan = end - start
    series = utilization_series(recorder, total_cpu, start, end, sample_step, held_by)
    mean_util = sum(u for _, u in series) / len(series) if series else 0.0
    wait_values = list(waits.values())
    return {
        "gangs": len(gangs),
        "gangs_completed": len(done),
        "makespan_s": round(makespan, 2),
        "wait_mean_s": round(sum(wait_values) / len(wait_values), 2) if wait_values else None,
        "wait_p50_s": _r(percentile(wait_values, 50)),
        "wait_p99_s": _r(percentile(wait_values, 99)),
        "utilization_mean": round(mean_util, 4),
        "partially_bound_gangs": partial,
        "held_by_incomplete_gangs_cpu_s": round(held_cpu_s, 2),
        "bind_burst_cpu_s": round(burst_cpu_s, 3),
        "utilization_series": [[round(t, 2), round(u, 4)] for t, u in series],
        "waits": sorted(round(w, 3) for w in wait_values),
        "first_whole_after_start_s": (
            _r(min(admitted) - peer_started) if admitted and peer_started is not None else None
        ),
        "first_whole_after_first_binding_s": (
            _r(min(admitted) - min(first_binds)) if admitted else None
        ),
    }


def on_watch_clock(recorder: Recorder, committed: Mapping[str, float]) -> dict[str, float]:
    """Each bound pod's Binding commit (server clock) moved onto the watch's clock.

    Shifted by the smallest lag seen, so no binding is placed after the watch saw it;
    spans between bindings are the server's own.
    """
    seen = {
        name: pod.bound
        for name, pod in recorder.pods.items()
        if pod.bound is not None and name in committed
    }
    if not seen:
        return {}
    lag = min(seen[name] - committed[name] for name in seen)
    return {name: committed[name] + lag for name in seen}


def utilization_series(
    recorder: Recorder,
    total_cpu: float,
    start: float,
    end: float,
    step: float,
    amount: Callable[[PodRecord], float] | None = None,
) -> list[tuple[float, float]]:
    """Bound, unfinished cpu (or ``amount``) over capacity, every ``step`` from start to end."""
    held_by = amount or (lambda pod: pod.cpu)
    changes = []
    for pod in recorder.pods.values():
        if pod.bound is None:
            continue
        changes.append((pod.bound, held_by(pod)))
        ends = [t for t in (pod.finished, pod.deleted) if t is not None]
        if ends:
            changes.append((min(ends), -held_by(pod)))
    changes.sort()
    series = []
    cpu = 0.0
    index = 0
    t = start
    while t <= end + EPSILON:
        while index < len(changes) and changes[index][0] <= t:
            cpu += changes[index][1]
            index += 1
        series.append((t - start, cpu / total_cpu if total_cpu else 0.0))
        t += step
    return series


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


# --- cost -----------------------------------------------------------------------------------


def read_proc(pid: int) -> Json | None:
    """CPU seconds (user + system) and peak RSS (VmHWM) of a process, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/status") as handle:
            status = handle.read()
    except OSError:
        return None
    import os

    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    hwm = 0
    rss = 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) * 1024
        elif line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
    return {"cpu_s": cpu, "peak_rss_bytes": hwm, "rss_bytes": rss}


def parse_request_totals(text: str) -> dict[tuple[str, str, str, str], float]:
    """``apiserver_request_total`` by (verb, group, resource, subresource), codes summed."""
    totals: dict[tuple[str, str, str, str], float] = defaultdict(float)
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value = line.rpartition("} ")
        labels: dict[str, str] = {}
        for part in _split_labels(labels_text[len("apiserver_request_total{") :]):
            name, _, raw = part.partition("=")
            labels[name] = raw.strip('"')
        key = (
            labels.get("verb", ""),
            labels.get("group", ""),
            labels.get("resource", ""),
            labels.get("subresource", ""),
        )
        totals[key] += float(value)
    return dict(totals)


def _split_labels(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if current:
        parts.append("".join(current))
    return parts


def request_delta(
    before: dict[tuple[str, str, str, str], float], after: dict[tuple[str, str, str, str], float]
) -> dict[str, float]:
    """After minus before, keyed ``VERB resource[/subresource]`` (group dropped: unambiguous
    here but for podgroups, which keep theirs)."""
    delta: dict[str, float] = {}
    for key, value in after.items():
        diff = value - before.get(key, 0.0)
        if diff <= 0:
            continue
        verb, group, resource, sub = key
        name = resource + (f"/{sub}" if sub else "")
        if resource in ("podgroups", "workloads") and group:
            name = f"{name}.{group}"
        label = f"{verb} {name}"
        delta[label] = delta.get(label, 0.0) + diff
    return delta
