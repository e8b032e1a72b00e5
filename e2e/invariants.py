"""What must hold whatever the faults, read from the API server's own state.

The checkers never ask the scheduler what it believes: they list nodes, pods
and PodGroups straight from the API server (not through the fault proxy) and
judge the outcome. They share nothing with the scheduler's code either (not
even its quantity parser), so a bug in it cannot hide a violation.

During a run, :meth:`InvariantChecker.sample` looks every few seconds:

* **no node over-committed**: on every node, the requests (cpu, memory, pod
  count) of the pods bound there and not finished stay within allocatable;
* **no gang partially bound for long**: a PodGroup with some but fewer than
  ``minMember`` members bound (none terminating) is timed; once faults have
  stopped, it is judged by the same rule as the pod-watch judge
  (:class:`e2e.gangs.BindBurst`), from the later of its first partial look and
  the end of the last fault, with ``partial_bound_seconds`` (the time to
  recover) as the burst: a violation once no member was newly bound for that
  long, or once it is still short after that plus ``minMember`` at the floor
  rate. The longest partial time is kept either way.

Once the run is quiet, :meth:`InvariantChecker.settle` waits (bounded) for:

* **no pod lost**: every pod of ours is bound, or carries ``PodScheduled=False``
  with a reason;
* **PodGroup status agrees with the pods**: its pending, scheduled, running
  and succeeded counters equal those counted from its members.

And from the fault proxy's journal of every Binding, :func:`double_bindings`:
a ``409`` on a Binding means the scheduler bound a pod that was already
bound. That is expected only when another Binding of the same pod had an
outcome the scheduler could not know: its answer never reached the scheduler
(a lost answer, a client gone, a server gone mid-request), or the API server
answered 5xx (a write that timed out on etcd may yet be committed), and the
scheduler had not heard of a success before sending it. Any other 409 is a
violation.

:class:`RssSampler` records the scheduler's resident memory over time;
:func:`rss_growth` flags a process whose memory keeps climbing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from e2e.api import ApiClient, Json
from e2e.gangs import BindBurst

GROUP_LABEL = "scheduling.sigs.k8s.io/pod-group"
PODGROUPS = "/apis/scheduling.sigs.k8s.io/v1alpha1/podgroups"
FINISHED = ("Succeeded", "Failed")

_SUFFIXES = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


def quantity(text: str | int | float) -> Decimal:
    """A Kubernetes quantity (``250m``, ``1Gi``, ``1e3``) as an exact decimal."""
    raw = str(text).strip()
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if raw.endswith(suffix) and not raw.endswith(f"e{suffix}"):
            return Decimal(raw[: -len(suffix)]) * _SUFFIXES[suffix]
    return Decimal(raw)


@dataclass(frozen=True)
class Violation:
    kind: str
    detail: str
    at: float = field(default_factory=time.time)

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


def pod_requests(pod: Json) -> dict[str, Decimal]:
    """Effective requests as kube-scheduler counts them: containers, the largest init, overhead."""
    spec = pod.get("spec") or {}

    def summed(containers: Iterable[Json]) -> dict[str, Decimal]:
        total: dict[str, Decimal] = {}
        for container in containers:
            requests = (container.get("resources") or {}).get("requests") or {}
            for name, value in requests.items():
                total[name] = total.get(name, Decimal(0)) + quantity(value)
        return total

    total = summed(spec.get("containers") or [])
    for init in spec.get("initContainers") or []:
        for name, value in summed([init]).items():
            total[name] = max(total.get(name, Decimal(0)), value)
    for name, value in (spec.get("overhead") or {}).items():
        total[name] = total.get(name, Decimal(0)) + quantity(value)
    total["pods"] = Decimal(1)
    return total


def over_committed(nodes: list[Json], pods: list[Json]) -> list[Violation]:
    """Nodes whose bound, unfinished pods ask for more than they can give."""
    used: dict[str, dict[str, Decimal]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in FINISHED:
            continue
        slot = used.setdefault(node, {})
        for name, amount in pod_requests(pod).items():
            slot[name] = slot.get(name, Decimal(0)) + amount
    found = []
    for node in nodes:
        name = node["metadata"]["name"]
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        for resource, amount in used.get(name, {}).items():
            if resource in allocatable and amount > quantity(allocatable[resource]):
                found.append(
                    Violation(
                        "over-committed node",
                        f"{name}: {resource} requested {amount} > allocatable "
                        f"{allocatable[resource]}",
                    )
                )
    return found


def _members(pods: list[Json]) -> dict[tuple[str, str], list[Json]]:
    members: dict[tuple[str, str], list[Json]] = {}
    for pod in pods:
        group = (pod["metadata"].get("labels") or {}).get(GROUP_LABEL)
        if group:
            members.setdefault((pod["metadata"]["namespace"], group), []).append(pod)
    return members


def _bound(pod: Json) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def _pod_scheduled_false(pod: Json) -> Json | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return dict(condition)
    return None


def counted_status(members: list[Json]) -> dict[str, int]:
    """A PodGroup's counters as the README defines them, counted from its member pods."""
    counts = {"pending": 0, "scheduled": 0, "running": 0, "succeeded": 0}
    for pod in members:
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Succeeded":
            counts["succeeded"] += 1
        elif phase == "Running":
            counts["running"] += 1
        elif phase not in ("Failed", "Unknown") and not _bound(pod):
            counts["pending"] += 1
        if _bound(pod):
            counts["scheduled"] += 1
    return counts


class InvariantChecker:
    """Samples the cluster during a fault run and judges it once quiet (module docstring)."""

    def __init__(
        self,
        api: ApiClient,
        namespaces: Callable[[], Iterable[str]],
        *,
        scheduler_name: str = "coscheduler",
        partial_bound_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.namespaces = namespaces
        self.scheduler_name = scheduler_name
        self.partial_bound_seconds = partial_bound_seconds
        self.clock = clock
        self.violations: list[Violation] = []
        self.longest_partial_seconds = 0.0
        self.samples = 0
        self._partial_since: dict[tuple[str, str], float] = {}
        self._bound_seen: dict[tuple[str, str], int] = {}
        self._gained_at: dict[tuple[str, str], list[float]] = {}
        """Looks at which a partial gang had more members bound than at the one before."""
        self._burst = BindBurst(partial_bound_seconds)
        self._faults_active = False
        self._last_fault_end = clock()

    # -- what the fault driver tells -----------------------------------------------------------

    def fault_started(self) -> None:
        self._faults_active = True

    def fault_ended(self) -> None:
        self._faults_active = False
        self._last_fault_end = self.clock()

    # -- reading ---------------------------------------------------------------------------------

    def _ours(self, pods: list[Json]) -> list[Json]:
        wanted = set(self.namespaces())
        return [
            p
            for p in pods
            if p["metadata"]["namespace"] in wanted
            and (p.get("spec") or {}).get("schedulerName") == self.scheduler_name
        ]

    def _podgroups(self) -> dict[tuple[str, str], Json]:
        wanted = set(self.namespaces())
        return {
            (g["metadata"]["namespace"], g["metadata"]["name"]): g
            for g in self.api.get(PODGROUPS).get("items", [])
            if g["metadata"]["namespace"] in wanted
        }

    # -- during the run ------------------------------------------------------------------------

    def sample(self) -> list[Violation]:
        """One look: over-commitment and partial gangs; returns (and keeps) new violations."""
        nodes = self.api.get("/api/v1/nodes").get("items", [])
        everything = self.api.get("/api/v1/pods").get("items", [])
        groups = self._podgroups()
        found = over_committed(nodes, everything)
        found += self._partial_gangs(groups, _members(self._ours(everything)))
        self.samples += 1
        self.violations += found
        return found

    def _partial_gangs(
        self, groups: Mapping[tuple[str, str], Json], members: Mapping[tuple[str, str], list[Json]]
    ) -> list[Violation]:
        now = self.clock()
        partial_now = set()
        found = []
        for key, group in groups.items():
            pods = members.get(key, [])
            if group["metadata"].get("deletionTimestamp") or any(
                p["metadata"].get("deletionTimestamp") for p in pods
            ):
                continue  # being taken down: members go one by one
            bound = sum(1 for p in pods if _bound(p))
            needed = int((group.get("spec") or {}).get("minMember") or 1)
            if not 0 < bound < needed:
                continue
            partial_now.add(key)
            since = self._partial_since.setdefault(key, now)
            gained = self._gained_at.setdefault(key, [])
            if bound > self._bound_seen.get(key, bound):
                gained.append(now)
            self._bound_seen[key] = bound
            self.longest_partial_seconds = max(self.longest_partial_seconds, now - since)
            if self._faults_active:
                continue
            start = max(since, self._last_fault_end)
            if not self._burst.holds(start, gained, now, needed):
                found.append(
                    Violation(
                        "gang partially bound",
                        f"{key[0]}/{key[1]}: {bound}/{needed} bound {now - start:.0f}s after "
                        f"the faults stopped, "
                        f"{self._burst.longest_gap(start, gained, now):.0f}s without a new "
                        f"member bound (a gang still binding may take "
                        f"{self._burst.seconds:.0f}s between members, "
                        f"{self._burst.allowance(needed):.0f}s in all)",
                    )
                )
                # Once per episode: forget it, so the next look starts a new one.
                self._partial_since[key] = now
                gained.clear()
        for key in set(self._partial_since) - partial_now:
            del self._partial_since[key], self._gained_at[key], self._bound_seen[key]
        return found

    # -- once quiet ----------------------------------------------------------------------------

    def settled(self) -> list[Violation]:
        """One look at what must hold once quiet: no pod lost, status agrees with the pods."""
        pods = self._ours(self.api.get("/api/v1/pods").get("items", []))
        found = []
        for pod in pods:
            if _bound(pod) or pod["metadata"].get("deletionTimestamp"):
                continue
            condition = _pod_scheduled_false(pod)
            if condition is None or not condition.get("reason"):
                name = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
                found.append(
                    Violation("pod lost", f"{name}: not bound and no PodScheduled=False reason")
                )
        members = _members(pods)
        for key, group in self._podgroups().items():
            if group["metadata"].get("deletionTimestamp"):
                continue
            status = group.get("status") or {}
            counted = counted_status(members.get(key, []))
            written = {name: int(status.get(name) or 0) for name in counted}
            if written != counted:
                found.append(
                    Violation(
                        "PodGroup status disagrees",
                        f"{key[0]}/{key[1]}: status says {written}, its pods say {counted}",
                    )
                )
        return found

    def settle(self, *, timeout: float = 60.0, interval: float = 1.0) -> list[Violation]:
        """Look until the quiet invariants hold or ``timeout`` passes; keep what still fails."""
        deadline = self.clock() + timeout
        while True:
            found = self.settled()
            self.sample()
            if not found or self.clock() >= deadline:
                self.violations += found
                return found
            time.sleep(interval)


BINDING_CREATE = "create pods/binding"


def _unknown_to_scheduler(outcome: str) -> bool:
    """A Binding the server may have committed while the scheduler did not hear so."""
    status = outcome.split()[0]
    return (
        outcome.endswith(("undelivered", "lost"))
        or outcome == "upstream error"
        or (status.isdigit() and status.startswith("5"))
    )


def double_bindings(stats: Mapping[str, Any]) -> tuple[int, int, list[Violation]]:
    """(409s on Bindings, Bindings whose outcome the scheduler could not know, violations).

    Per pod, from the proxy's journal (in order of arrival): a 409 is a double binding
    when it arrived after a success the scheduler heard (it knew the pod bound), or
    when no Binding of the pod was committed or left unknown at all (it bound a pod
    bound before it ever tried). Attempts that wait on the server together (etcd
    down) commit in any order, so arrival order says nothing else.
    """
    conflicts = unknown = 0
    found = []
    for path, outcomes in (stats.get("bindings") or {}).items():
        knew_bound = False
        ours = any(o.startswith("2") or _unknown_to_scheduler(o) for o in outcomes)
        for outcome in outcomes:
            if _unknown_to_scheduler(outcome):
                unknown += 1
            if outcome.startswith("409"):
                conflicts += 1
                if knew_bound or not ours:
                    found.append(
                        Violation("pod bound twice", f"{path}: 409 unexplained in {outcomes}")
                    )
            elif outcome.startswith("2") and not _unknown_to_scheduler(outcome):
                knew_bound = True
    return conflicts, unknown, found


@dataclass
class RssSampler:
    """Resident memory of processes over time, read from /proc (kB -> MiB)."""

    samples: list[tuple[float, int, float]] = field(default_factory=list)
    """(seconds since the first sample, pid, MiB)."""
    _started: float | None = None

    def sample(self, pid: int) -> float | None:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                mib = int(line.split()[1]) / 1024
                now = time.monotonic()
                if self._started is None:
                    self._started = now
                self.samples.append((now - self._started, pid, mib))
                return mib
        return None


def rss_growth(
    samples: list[tuple[float, int, float]], *, min_seconds: float = 120.0
) -> list[Violation]:
    """Flag a process whose memory in the last quarter of its life exceeds, by more than
    half and 32 MiB, the median of its second quarter (the first is warm-up).

    A heuristic for "grows without bound": a leak climbs steadily; caches fill
    once. Processes that lived less than ``min_seconds`` are not judged.
    """
    by_pid: dict[int, list[tuple[float, float]]] = {}
    for at, pid, mib in samples:
        by_pid.setdefault(pid, []).append((at, mib))
    found = []
    for pid, points in by_pid.items():
        start, end = points[0][0], points[-1][0]
        if end - start < min_seconds or len(points) < 8:
            continue
        quarter = (end - start) / 4
        second = sorted(m for at, m in points if start + quarter <= at < start + 2 * quarter)
        last = [m for at, m in points if at >= end - quarter]
        if not second or not last:
            continue
        median = second[len(second) // 2]
        if max(last) > median * 1.5 and max(last) - median > 32:
            found.append(
                Violation(
                    "scheduler memory grows",
                    f"pid {pid}: {median:.0f} MiB in its second quarter, "
                    f"{max(last):.0f} MiB in its last",
                )
            )
    return found
