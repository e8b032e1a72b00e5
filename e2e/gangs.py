"""The gang invariant, judged from a timeline of pod watch events.

coscheduler promises that no gang is ever partially bound. Its Bindings are
separate API writes, so a gang is briefly partial while they land (the *bind
burst*); what the promise rules out is a gang left partial. This module
replays a watch of pods (each event: when it was seen, ADDED / MODIFIED /
DELETED, the pod as the API server sent it) and returns the intervals that
break it. It is pure (no I/O, no clock) and shares nothing with coscheduler's
code, like :mod:`e2e.invariants`, so a bug in the scheduler cannot hide a
violation; the e2e tests (``e2e/tests/conftest.py``) and every benchmark
trial (``bench/trial.py``) run it.

Definitions:

* a member is **bound** while it has ``spec.nodeName``, no
  ``deletionTimestamp`` and still exists (``Succeeded`` or ``Failed``: it ran);
* a gang is **partial** while ``0 < bound < minMember``;
* a **violation** is a partial interval longer than ``burst_seconds`` (one
  still open when the trace ends counts until the end) in which a member was
  bound (``nodeName`` newly set), or was bound at most ``burst_seconds``
  before it began, unless it was a **bind burst** (below). The binding that
  ends an interval by making the gang whole again is not counted: completing
  a gang short of members is the scheduler's job (after a crash, or a
  victim's eviction refused halfway).
* a **bind burst** is a partial interval in which the gang's bindings kept
  coming: no gap longer than ``burst_seconds`` from its start to its first
  member binding, between two consecutive ones, or from the last one to its
  end; and no longer in all than ``burst_seconds + minMember /
  floor_bindings_per_second``. The writes of a gang decided whole take
  ``minMember / rate`` at the rate the API server accepts Bindings, which at
  a gang of 512 and thousands of nodes can pass any fixed allowance (46-75/s
  were seen at 5,000 nodes); a gang left short stops gaining members, so its
  gap to the interval's end (or the trace's) grows past the burst whatever
  the rate. The floor (:data:`DEFAULT_FLOOR_BINDINGS_PER_SECOND`) bounds a
  trickle: bindings that keep coming, but slower than any API server this
  project runs on accepts them, are not a burst. :class:`BindBurst` is this
  rule, the only one: the fault checker of :mod:`e2e.invariants` asks it too.

The culprit rule tells the scheduler's doing from the user's: a whole gang that
later loses members to deletions nobody replaces was never bound partially;
a member bound alone, or a replacement bound into a gang whose other members
then go (issue #26), was.

Membership: the group label of coscheduler (``scheduling.sigs.k8s.io/pod-group``)
or of the legacy APIs, T9k's label or Volcano's annotation, in the pod's
namespace (a T9k role's or Volcano task's minimums raise ``minMember`` to
their sum); an unlabelled pod whose
controlling owner is a Job joins the group named after the Job when one is
known (coscheduler makes it for a Job that asks for a gang); a pod with
``spec.workloadRef`` joins that podGroup of the native Workload; a pod with
``spec.schedulingGroup`` joins that native PodGroup (keyed ``native:<name>``,
apart from a label's group of the same name). ``minMember`` comes from the
PodGroup and Workload objects (:func:`min_members`). Only pods
of the given scheduler names count; a group whose ``minMember`` is unknown is
not judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

Json = dict[str, Any]
GangKey = tuple[str, str]
"""(namespace, group name); a Workload's gang is named ``<workload>/<podGroup>[/<replica>]``."""

GROUP_LABELS: tuple[str, ...] = (
    "scheduling.sigs.k8s.io/pod-group",
    "pod-group.scheduling.sigs.k8s.io",
    "scheduling.x-k8s.io/pod-group",
    "scheduler.tensorstack.dev/group-name",
)
"""Labels that name a pod's PodGroup, coscheduler's first (the order it reads them)."""
GROUP_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
"""Volcano's pod annotations that name its group, read after the labels."""
PODGROUP_API_VERSIONS = (
    "scheduling.sigs.k8s.io/v1alpha1",
    "scheduling.x-k8s.io/v1alpha1",
    "scheduling.volcano.sh/v1beta1",
    "scheduler.tensorstack.dev/v1beta1",
)
WORKLOAD_API_VERSION = "scheduling.k8s.io/v1alpha1"
#: Kubernetes' own PodGroup (1.36: v1alpha2, 1.37: v1beta1).
NATIVE_PODGROUP_API_VERSIONS = ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha2")
NATIVE_PREFIX = "native:"
DEFAULT_BURST_SECONDS = 10.0
#: The slowest steady rate of a gang's own Bindings still taken for a bind burst. At
#: 5,000 nodes the API server took 46-75 Bindings/s, and a gang of 512 whose Bindings
#: shared it with other gangs' took 28.5 s (18/s): about half that.
DEFAULT_FLOOR_BINDINGS_PER_SECOND = 10.0


@dataclass(frozen=True)
class BindBurst:
    """The one rule for a gang short of ``minMember``: still binding, or left partial.

    A gang decided whole is short while its Bindings land. The interval is a bind
    burst while no ``seconds`` pass without a member newly bound (from its start to
    the first, between two, from the last to its end) and it is over within
    ``seconds + minMember / floor_per_second``; anything else is a gang left partial.
    The pod-watch judge (:func:`partial_gangs`) and the fault checker that samples the
    API server's state (:mod:`e2e.invariants`, ``seconds`` its wait for recovery) both
    ask it.
    """

    seconds: float = DEFAULT_BURST_SECONDS
    floor_per_second: float = DEFAULT_FLOOR_BINDINGS_PER_SECOND

    def allowance(self, min_member: int) -> float:
        """How long a burst of a gang of ``min_member`` may last in all."""
        return self.seconds + min_member / self.floor_per_second

    @staticmethod
    def longest_gap(start: float, bindings: Iterable[float], end: float) -> float:
        """The longest wait for a member's binding in ``[start, end]`` (or for its end)."""
        moments = [start, *sorted(b for b in bindings if start <= b <= end), end]
        return max(later - earlier for earlier, later in pairwise(moments))

    def holds(self, start: float, bindings: Iterable[float], end: float, min_member: int) -> bool:
        """Whether ``[start, end]``, with members newly bound at ``bindings``, is a burst."""
        stalled = self.longest_gap(start, bindings, end) > self.seconds
        return not stalled and end - start <= self.allowance(min_member)


@dataclass(frozen=True)
class PodEvent:
    """One pod watch event: when it was seen (seconds, any clock), its type, the pod."""

    at: float
    type: str
    pod: Json


@dataclass(frozen=True)
class PartialGang:
    """A gang partial beyond a bind burst, with a member bound in or just before it."""

    gang: GangKey
    start: float
    end: float
    min_member: int
    bound: int
    """Members bound at its last moment (before it closed, or at the end of the trace)."""
    fewest_bound: int
    most_bound: int
    bound_pods: tuple[str, ...]
    """The members whose binding makes the interval the scheduler's (name @ seen at)."""
    open_at_end: bool = False
    longest_gap: float = 0.0
    """The longest wait for the gang's next binding in it (or for its end): past the
    burst, the gang stalled."""
    allowance: float = 0.0
    """How long a bind burst of this gang may last (``burst + minMember / floor``)."""

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def __str__(self) -> str:
        namespace, name = self.gang
        spread = (
            f" ({self.fewest_bound}-{self.most_bound} during it)"
            if self.fewest_bound != self.most_bound
            else ""
        )
        until = "the end of the trace" if self.open_at_end else f"{self.end:.1f}s"
        return (
            f"gang {namespace}/{name} partially bound for {self.seconds:.1f}s "
            f"(from {self.start:.1f}s to {until}): {self.bound}/{self.min_member} bound"
            f"{spread}; {self.longest_gap:.1f}s without a binding, a bind burst may last "
            f"{self.allowance:.1f}s; members bound in or just before it: "
            f"{', '.join(self.bound_pods)}"
        )


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def min_members(objects: Iterable[Json]) -> dict[GangKey, int]:
    """Each gang's ``minMember`` from raw PodGroups (both APIs) and native Workloads.

    A Workload's ``gang`` podGroups count with their ``minCount`` (each replica key of
    one is a gang of its own with that ``minCount``: :func:`min_member_of`); ``basic``
    ones are lone pods and are left out.
    """
    found: dict[GangKey, int] = {}
    for obj in objects:
        meta = _mapping(obj.get("metadata"))
        namespace, name = meta.get("namespace"), meta.get("name")
        if not isinstance(namespace, str) or not isinstance(name, str):
            continue
        spec = _mapping(obj.get("spec"))
        version = obj.get("apiVersion")
        if version in PODGROUP_API_VERSIONS:
            found[(namespace, name)] = max(
                _positive(spec.get("minMember"), default=1), _floor_of_roles(spec)
            )
        elif version in NATIVE_PODGROUP_API_VERSIONS:
            gang = _mapping(_mapping(spec.get("schedulingPolicy")).get("gang"))
            if gang:  # basic: its members are placed one by one, no gang to judge
                found[(namespace, NATIVE_PREFIX + name)] = _positive(gang.get("minCount"))
        elif version == WORKLOAD_API_VERSION:
            for group in spec.get("podGroups") or []:
                gang = _mapping(_mapping(_mapping(group).get("policy")).get("gang"))
                group_name = _mapping(group).get("name")
                if gang and isinstance(group_name, str):
                    found[(namespace, f"{name}/{group_name}")] = _positive(gang.get("minCount"))
    return found


def _floor_of_roles(spec: Mapping[str, Any]) -> int:
    """The roles' (T9k) or tasks' (Volcano) minimums together: a pod has one."""
    minimums = [_mapping(role).get("minMember") for role in spec.get("roles") or []]
    minimums += list(_mapping(spec.get("minTaskMember")).values())
    return sum(_positive(value, default=0) for value in minimums)


def _positive(value: object, default: int = 1) -> int:
    try:
        number = int(str(value))
    except ValueError:
        return default
    return number if number > 0 else default


def gang_of(
    pod: Json,
    known: Mapping[GangKey, int],
    group_labels: Sequence[str] = GROUP_LABELS,
) -> GangKey | None:
    """The gang a pod belongs to (module docstring), or None for a lone pod."""
    meta = _mapping(pod.get("metadata"))
    namespace = meta.get("namespace") or ""
    labels = _mapping(meta.get("labels"))
    for label in group_labels:
        value = labels.get(label)
        if isinstance(value, str) and value:
            return (namespace, value)
    annotations = _mapping(meta.get("annotations"))
    for annotation in GROUP_ANNOTATIONS:
        value = annotations.get(annotation)
        if isinstance(value, str) and value:
            return (namespace, value)
    native = _mapping(_mapping(pod.get("spec")).get("schedulingGroup")).get("podGroupName")
    if isinstance(native, str) and native:
        return (namespace, NATIVE_PREFIX + native)
    ref = _mapping(_mapping(pod.get("spec")).get("workloadRef"))
    if ref.get("name") and ref.get("podGroup"):
        base = f"{ref['name']}/{ref['podGroup']}"
        replica = ref.get("podGroupReplicaKey")
        # Each replica key is a gang of its own, with the podGroup's minCount.
        return (namespace, f"{base}/{replica}" if replica else base)
    for owner in meta.get("ownerReferences") or []:
        owner = _mapping(owner)
        if owner.get("controller") and owner.get("kind") == "Job":
            key = (namespace, str(owner.get("name")))
            if key in known:
                return key
    return None


def min_member_of(key: GangKey, known: Mapping[GangKey, int]) -> int | None:
    """A gang's minMember; a Workload replica's is its podGroup's."""
    namespace, name = key
    if key in known:
        return known[key]
    if name.count("/") == 2:
        return known.get((namespace, name.rsplit("/", 1)[0]))
    return None


def slim(pod: Json) -> Json:
    """Only what this module reads of a pod: a long trace kept in memory stays small."""
    meta = _mapping(pod.get("metadata"))
    spec = _mapping(pod.get("spec"))
    kept_meta = {
        key: meta[key]
        for key in ("name", "namespace", "uid", "labels", "ownerReferences", "deletionTimestamp")
        if key in meta
    }
    annotations = _mapping(meta.get("annotations"))
    if any(key in annotations for key in GROUP_ANNOTATIONS):
        kept_meta["annotations"] = {
            k: annotations[k] for k in GROUP_ANNOTATIONS if k in annotations
        }
    kept_spec = {
        key: spec[key]
        for key in ("nodeName", "schedulerName", "workloadRef", "schedulingGroup")
        if key in spec
    }
    return {"metadata": kept_meta, "spec": kept_spec}


@dataclass
class _Gang:
    min_member: int
    bound: set[str] = field(default_factory=set)
    bindings: list[tuple[float, str]] = field(default_factory=list)
    """(when, pod) of every new binding of a member, in order."""
    partial_since: float | None = None
    fewest: int = 0
    most: int = 0
    latest: int = 0
    """Members bound at the last event of the current partial interval."""


def _identity(pod: Json) -> str:
    meta = _mapping(pod.get("metadata"))
    return str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")


def _is_bound(event_type: str, pod: Json) -> bool:
    if event_type == "DELETED":
        return False
    meta = _mapping(pod.get("metadata"))
    return bool(_mapping(pod.get("spec")).get("nodeName")) and not meta.get("deletionTimestamp")


def partial_gangs(
    events: Iterable[PodEvent],
    known: Mapping[GangKey, int],
    *,
    scheduler_names: Iterable[str] = ("coscheduler",),
    burst_seconds: float = DEFAULT_BURST_SECONDS,
    floor_bindings_per_second: float = DEFAULT_FLOOR_BINDINGS_PER_SECOND,
    start: float | None = None,
    end: float | None = None,
    group_labels: Sequence[str] = GROUP_LABELS,
) -> list[PartialGang]:
    """The violations of the gang invariant in a trace of pod events, in order of start.

    ``known``: each gang's ``minMember`` (:func:`min_members`). ``burst_seconds``,
    ``floor_bindings_per_second``: what a bind burst may take (module docstring).
    ``start``: pods first seen at or before it already on a node were bound before
    the trace (a listing that opens a watch), not by it. ``end``: when the trace
    ends (default: its last event); an interval still open then lasts until it.
    """
    ours = set(scheduler_names)
    gangs: dict[GangKey, _Gang] = {}
    members: dict[str, GangKey] = {}
    ever_on_node: set[str] = set()
    found: list[PartialGang] = []
    last = start if start is not None else float("-inf")

    def close(key: GangKey, gang: _Gang, at: float, *, open_at_end: bool, whole: bool) -> None:
        since = gang.partial_since
        assert since is not None
        gang.partial_since = None
        if at - since <= burst_seconds:
            return
        # A binding that makes the gang whole again ends the interval; it is not a cause.
        considered = gang.bindings[:-1] if whole else gang.bindings
        culprits = [
            f"{pod} @ {bound_at:.1f}s"
            for bound_at, pod in considered
            if since - burst_seconds <= bound_at <= at
        ]
        if not culprits:
            return
        during = [bound_at for bound_at, _ in gang.bindings if since <= bound_at <= at]
        burst = BindBurst(burst_seconds, floor_bindings_per_second)
        longest_gap = burst.longest_gap(since, during, at)
        allowance = burst.allowance(gang.min_member)
        if burst.holds(since, during, at, gang.min_member):
            return
        found.append(
            PartialGang(
                gang=key, start=since, end=at, min_member=gang.min_member,
                bound=gang.latest, fewest_bound=gang.fewest, most_bound=gang.most,
                bound_pods=tuple(culprits), open_at_end=open_at_end,
                longest_gap=longest_gap, allowance=allowance,
            )
        )  # fmt: skip

    for event in sorted(events, key=lambda e: e.at):
        pod = event.pod
        if _mapping(pod.get("spec")).get("schedulerName") not in ours:
            continue
        identity = _identity(pod)
        key = members.get(identity) or gang_of(pod, known, group_labels)
        needed = None if key is None else min_member_of(key, known)
        if key is None or needed is None:
            continue
        members[identity] = key
        gang = gangs.setdefault(key, _Gang(needed))
        last = max(last, event.at)
        name = str(_mapping(pod.get("metadata")).get("name"))
        on_node = bool(_mapping(pod.get("spec")).get("nodeName"))
        newly_bound = False
        if on_node and identity not in ever_on_node:
            ever_on_node.add(identity)
            if start is None or event.at > start:
                gang.bindings.append((event.at, name))
                newly_bound = True
        if _is_bound(event.type, pod):
            gang.bound.add(identity)
        else:
            gang.bound.discard(identity)
        count = len(gang.bound)
        partial = 0 < count < gang.min_member
        if partial and gang.partial_since is None:
            gang.partial_since = event.at
            gang.fewest = gang.most = count
        elif partial:
            gang.fewest, gang.most = min(gang.fewest, count), max(gang.most, count)
        if partial:
            gang.latest = count
        elif gang.partial_since is not None:
            whole = newly_bound and count >= gang.min_member
            close(key, gang, event.at, open_at_end=False, whole=whole)
    finish = end if end is not None else last
    for key, gang in gangs.items():
        if gang.partial_since is not None:
            close(key, gang, max(finish, gang.partial_since), open_at_end=True, whole=False)
    return sorted(found, key=lambda violation: (violation.start, violation.gang))
