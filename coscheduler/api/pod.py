"""Pods as the scheduler sees them: slim, typed, immutable, parsed once.

The watch delivers pods as raw JSON objects. Turning each into the client's
generated ``V1Pod`` model costs far more than the scheduler can afford at
thousands of pods per second (see the design's "Performance" section), so this
module keeps only the fields that scheduling decisions read, converted once:
quantities into integers (millicores, bytes, counts) and the pod's *effective*
requests computed here, the way Kubernetes computes them, so nothing
downstream parses a quantity again.

Effective requests follow :mod:`coscheduler.api.requests`, read by
:mod:`coscheduler.api.pod_requests` (a bound pod's also count its in-place resizes).

Anything malformed raises :class:`PodParseError`, which names the pod and
quotes the bad value, never a bare ``KeyError`` or ``TypeError``.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache, partial
from typing import Any, Final

import orjson

from coscheduler.api.asks import NO_ASKS, Asks, read_asks
from coscheduler.api.devices import PodClaim, read_pod_claims
from coscheduler.api.fields import FieldReader, ObjectParseError
from coscheduler.api.labels import (
    POD_GROUP_ANNOTATIONS,
    VOLCANO_QUEUE_ANNOTATION,
    VOLCANO_TASK_KEY,
    pod_group_name,
    pod_role,
)
from coscheduler.api.node_features import required_node_features
from coscheduler.api.node_selector import (
    NodeSelectorTerm,
    parse_node_selector,
)
from coscheduler.api.pod_requests import read_pod_requests, resize_inputs
from coscheduler.api.pod_topology import (
    NO_PREFERENCES,
    NO_TOPOLOGY,
    PodTopology,
    Preferences,
    read_pod_topology,
    read_preferences,
)
from coscheduler.api.workload_ref import WorkloadRef, read_scheduling_group, read_workload_ref

__all__ = [
    "TERMINAL_PHASES",
    "HostPort",
    "PodInfo",
    "PodParseError",
    "Toleration",
    "progress_fingerprint",
]

#: Phases after which a pod holds no resources on its node.
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})

_TOLERATION_OPERATORS: Final = frozenset({"Equal", "Exists"})
#: Kueue's annotation naming the Workload that admitted the pod (Kueue v0.17 puts it on
#: every admitted pod while its TopologyAwareScheduling feature is on, the default).
KUEUE_WORKLOAD_ANNOTATION: Final = "kueue.x-k8s.io/workload"
MEMBERSHIP_ANNOTATIONS: Final = (
    *POD_GROUP_ANNOTATIONS,
    VOLCANO_TASK_KEY,
    VOLCANO_QUEUE_ANNOTATION,
    KUEUE_WORKLOAD_ANNOTATION,
)
_EFFECTS: Final = frozenset({"", "NoSchedule", "PreferNoSchedule", "NoExecute"})
#: Toleration lists read so far, by their fields (:func:`_parse_tolerations`); a bound.
_KNOWN_TOLERATIONS: dict[tuple[tuple[object, ...], ...], tuple[Toleration, ...]] = {}
_KNOWN_TOLERATIONS_MAX: Final = 1024


class PodParseError(ObjectParseError):
    """A pod object the scheduler cannot read."""

    kind = "pod"


@dataclass(frozen=True, slots=True)
class Toleration:
    """One ``spec.tolerations`` entry; ``operator`` is ``Equal`` or ``Exists``."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


@dataclass(frozen=True, slots=True)
class HostPort:
    """A host port a container binds: ``0.0.0.0`` stands for every address."""

    ip: str
    protocol: str
    port: int


@dataclass(frozen=True, slots=True)
class PodInfo:
    """The fields of a pod that scheduling reads, already converted.

    ``requests`` is the effective request (see the module docstring), always
    including ``pods: 1``; for a pod bound to a node, what it holds there
    (in-place resizes counted, :mod:`~coscheduler.api.pod_requests`).
    ``required_affinity`` is None when the pod has no required node affinity,
    else its terms (ORed). ``placement`` is a hashable key of everything that
    decides *which* nodes suit the pod apart from free capacity; ``shape`` adds
    the requests and host ports: two pods with equal shapes fit exactly the
    same nodes.
    """

    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    group: str | None
    role: str | None
    scheduler_name: str
    node_name: str | None
    phase: str
    deleting: bool
    priority: int
    created: float
    owner_uid: str | None
    requests: Mapping[str, int]
    node_selector: Mapping[str, str]
    required_affinity: tuple[NodeSelectorTerm, ...] | None
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[HostPort, ...]
    placement: tuple[object, ...]
    shape: tuple[object, ...]
    #: Requirements and preferences coscheduler does not honour yet (:mod:`~coscheduler.api.asks`).
    asks: Asks = NO_ASKS
    #: Required pod (anti-)affinity and DoNotSchedule spread (:mod:`~coscheduler.api.pod_topology`).
    topology: PodTopology = NO_TOPOLOGY
    #: Preferred node and pod (anti-)affinity, ScheduleAnyway spread: weighed in scoring.
    preferences: Preferences = NO_PREFERENCES
    #: The PersistentVolumeClaims the pod uses, by name in its namespace
    #: (``persistentVolumeClaim`` volumes, and the claims of ``ephemeral`` ones).
    claims: tuple[str, ...] = ()
    #: Filled in by the scheduler from the claims' volumes just before placing
    #: (:mod:`~coscheduler.core.volumes`): each bound volume's node affinity
    #: (all must hold), and why the pod cannot be placed at all, if it cannot.
    volume_affinity: tuple[tuple[NodeSelectorTerm, ...], ...] = ()
    volume_wait: str | None = None
    #: Claims waiting for their first consumer that the scheduler binds (to a
    #: chosen volume) or has provisioned (near the chosen node) before the pod.
    volume_binds: tuple[str, ...] = ()
    #: ``(CSI driver, volume name)`` of the bound volumes the pod attaches, for attach limits.
    volume_attach: tuple[tuple[str, str], ...] = ()
    #: ``spec.schedulingGates`` is not empty: nobody may place the pod until it is.
    gated: bool = False
    #: The controlling owner's name (a Job, a ReplicaSet...), for ``occupiedBy`` in
    #: scheduling.x-k8s.io's status, which names owners rather than their UIDs.
    owner_name: str | None = None
    #: The controlling owner's kind (``Job``...). A Job that asks for a gang by
    #: annotation (:mod:`~coscheduler.api.owners`) makes its pods members of the
    #: group named after it: the runtime sets ``owner_group`` to that name by the
    #: core's rule (:func:`coscheduler.core.owners.owner_group`); never parsed.
    owner_kind: str | None = None
    owner_group: str | None = None
    #: The queue Volcano's annotation names (``scheduling.volcano.sh/queue-name``).
    volcano_queue: str | None = None
    #: When the kubelet started the pod (``status.startTime``), else None: how
    #: long a preemption victim has run.
    started: float | None = None
    #: ``spec.preemptionPolicy`` (admission copies it from the PriorityClass):
    #: ``Never`` means the pod waits rather than evicting anyone.
    preemption_policy: str = "PreemptLowerPriority"
    #: ``spec.workloadRef``: the native Workload gang the pod belongs to, if any.
    workload: WorkloadRef | None = None
    #: ``spec.schedulingGroup.podGroupName``: the native PodGroup (``scheduling.k8s.io``)
    #: the pod belongs to, if any.
    scheduling_group: str | None = None
    #: The CompositePodGroup whose gang the pod's native PodGroup is a child of:
    #: set by the runtime (:mod:`coscheduler.runtime.handlers.composites`), with
    #: ``role`` the child's name; never parsed.
    composite: str | None = None
    #: The Kueue ``Workload`` whose admitted gang the pod is a member of (or waits
    #: for, when not admitted or not known yet): set by the runtime
    #: (:mod:`coscheduler.runtime.handlers.kueue`), with ``role`` its pod set; never parsed.
    kueue_workload: str | None = None
    #: Kueue's ``kueue.x-k8s.io/workload`` annotation: the Workload that admitted the pod.
    kueue_admitted_by: str | None = None
    #: ``spec.resourceClaims`` (DRA), each with its claim's name once known
    #: (:mod:`~coscheduler.api.devices`).
    device_claims: tuple[PodClaim, ...] = ()
    #: Features a node must declare to take the pod (:mod:`~coscheduler.api.node_features`).
    node_features: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """``namespace/name``, as kubectl and events spell it."""
        return f"{self.namespace}/{self.name}"

    @property
    def terminal(self) -> bool:
        """True once the pod has succeeded or failed: it holds nothing any more."""
        return self.phase in TERMINAL_PHASES

    @property
    def bound(self) -> bool:
        """True when the pod has a node (bound by us or by anyone)."""
        return self.node_name is not None

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> PodInfo:
        """Parse a raw pod (``orjson.loads`` of the API's JSON)."""
        return _parse_pod(raw)

    def progressed(self, raw: Mapping[str, Any]) -> PodInfo:
        """This pod with its progress read again from ``raw``: node, phase, start time.

        Only for a newer version of this pod whose :func:`progress_fingerprint`
        equals that of the version this one was read from: everything else in it
        is what :meth:`from_object` would read again (a bound pod's two updates,
        bound then running, cost a small part of a full read).
        """
        spec = raw.get("spec")
        status = raw.get("status")
        if type(spec) is dict and type(status) is dict:
            # The usual shapes read without a reader (this runs twice per pod bound);
            # anything else, or an unreadable time, goes the checked way below.
            node = spec.get("nodeName")
            phase = status.get("phase")
            start = status.get("startTime")
            if (
                (node is None or type(node) is str)
                and (phase is None or type(phase) is str)
                and (start is None or type(start) is str)
            ):
                try:
                    started = None if start is None else _started_at(start) or None
                except ValueError:
                    pass  # the checked way says what is wrong with it
                else:
                    return self._with(node or None, "Pending" if phase is None else phase, started)
        reader = FieldReader(partial(PodParseError, self.key))
        spec = reader.mapping(raw.get("spec"), "spec")
        status = reader.mapping(raw.get("status"), "status")
        node_name = reader.text(spec.get("nodeName"), "spec.nodeName") or None
        phase = reader.text(status.get("phase"), "status.phase", "Pending")
        started = reader.timestamp(status.get("startTime"), "status.startTime") or None
        return self._with(node_name, phase, started)

    def _with(self, node_name: str | None, phase: str, started: float | None) -> PodInfo:
        if node_name == self.node_name and phase == self.phase and started == self.started:
            return self
        return _with_progress(self, node_name, phase, started)


@lru_cache(maxsize=1024)
def _started_at(text: str) -> float:
    """A ``startTime`` (RFC 3339) in seconds; pods started in one burst share a few."""
    return datetime.fromisoformat(text).timestamp()


_PROGRESS: Final = ("node_name", "phase", "started")


def _progress_copier() -> Callable[[PodInfo, str | None, str, float | None], PodInfo]:
    """A function copying a PodInfo with new progress, one line per field.

    Made once, as dataclasses makes ``__init__``: a loop over the fields, or
    ``dataclasses.replace``, costs two to three times as much per pod update.
    Each field is set through its slot's own descriptor, a third of the cost of
    ``object.__setattr__`` (which looks the descriptor up on every call).
    """
    names = [field.name for field in dataclasses.fields(PodInfo)]
    lines = [
        f"    _set{index}(pod, {name if name in _PROGRESS else f'old.{name}'})"
        for index, name in enumerate(names)
    ]
    source = "\n".join(
        ["def copy(old, node_name, phase, started):", "    pod = _new(_PodInfo)", *lines]
    )
    scope: dict[str, Any] = {"_new": object.__new__, "_PodInfo": PodInfo}
    for index, name in enumerate(names):
        scope[f"_set{index}"] = PodInfo.__dict__[name].__set__  # the slot's member descriptor
    exec(source + "\n    return pod\n", scope)  # built from the field names alone
    copier: Callable[[PodInfo, str | None, str, float | None], PodInfo] = scope["copy"]
    return copier


_with_progress: Final = _progress_copier()


def progress_fingerprint(raw: Mapping[str, Any]) -> bytes | None:
    """A digest of every field :meth:`PodInfo.from_object` reads but a pod's progress.

    Two versions of a pod with equal fingerprints differ at most in
    ``spec.nodeName``, ``status.phase``, ``status.startTime`` and fields no
    pod reading looks at (``resourceVersion``, ``managedFields``, IPs, container
    states, conditions but ``PodResizePending``): :meth:`PodInfo.progressed`
    reads the first three again. What the kubelet reports of resizes
    (:func:`~coscheduler.api.pod_requests.resize_inputs`) is in it, with
    whether the pod is bound when it reports any (a bound pod's requests are
    read from them). None when ``raw`` is not shaped like a pod (read it in full).
    """
    meta = raw.get("metadata")
    spec = raw.get("spec")
    status = raw.get("status")
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        return None
    if "nodeName" in spec:
        spec = dict(spec)  # a copy without it, in the same order (one C call)
        del spec["nodeName"]
    claims = status.get("resourceClaimStatuses") if isinstance(status, dict) else status
    # A bound pod's requests are read from what the kubelet reports of resizes too;
    # with nothing reported, bound or not, they are the spec's.
    inputs = resize_inputs(status)
    # A container status that reports no resources says nothing about them.
    reported = [
        (name, allocated, resources)
        for name, allocated, resources in inputs.containers
        if allocated or resources
    ]
    resize: tuple[object, ...] = (reported, inputs.allocated, inputs.resources, inputs.pending)
    if any(resize):
        resize = (*resize, bool(raw["spec"].get("nodeName")))
    read = (
        meta.get("namespace"),
        meta.get("name"),
        meta.get("generateName"),
        meta.get("uid"),
        meta.get("labels"),
        meta.get("annotations"),
        meta.get("ownerReferences"),
        meta.get("deletionTimestamp"),
        meta.get("creationTimestamp"),
        spec,
        claims,
        resize,
    )
    try:
        encoded = orjson.dumps(read)
    except TypeError:  # not JSON: the full read says what is wrong
        return None
    return hashlib.blake2b(encoded, digest_size=16).digest()


def _parse_affinity(
    reader: FieldReader, spec: Mapping[str, Any]
) -> tuple[NodeSelectorTerm, ...] | None:
    affinity = reader.mapping(spec.get("affinity"), "spec.affinity")
    node_affinity = reader.mapping(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity")
    where = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    return parse_node_selector(reader, required, where)


def _parse_tolerations(reader: FieldReader, raw: object) -> tuple[Toleration, ...]:
    # Pods of a workload, and every pod admission defaults (not-ready, unreachable),
    # carry the same few tolerations: each distinct list is read once.
    key = _tolerations_key(raw)
    known = _KNOWN_TOLERATIONS.get(key) if key is not None else None
    if known is not None:
        return known
    tolerations = _read_tolerations(reader, raw)
    if key is not None:
        if len(_KNOWN_TOLERATIONS) >= _KNOWN_TOLERATIONS_MAX:
            _KNOWN_TOLERATIONS.clear()
        _KNOWN_TOLERATIONS[key] = tolerations
    return tolerations


def _tolerations_key(raw: object) -> tuple[tuple[object, ...], ...] | None:
    """The fields a toleration list is read from; None when it is not a list of objects."""
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        return None
    key = tuple(
        (item.get("key"), item.get("operator"), item.get("value"), item.get("effect"))
        for item in raw
    )
    try:
        hash(key)
    except TypeError:  # a field of the wrong type (a list, an object): read it to say so
        return None
    return key


def _read_tolerations(reader: FieldReader, raw: object) -> tuple[Toleration, ...]:
    tolerations = []
    for index, item in enumerate(reader.items(raw, "spec.tolerations")):
        here = f"spec.tolerations[{index}]"
        entry = reader.mapping(item, here)
        operator = reader.text(entry.get("operator"), f"{here}.operator", "Equal") or "Equal"
        if operator not in _TOLERATION_OPERATORS:
            raise reader.fail(f"{here}.operator = {operator!r} is not Equal or Exists")
        effect = reader.text(entry.get("effect"), f"{here}.effect")
        if effect not in _EFFECTS:
            raise reader.fail(f"{here}.effect = {effect!r} is not a taint effect")
        tolerations.append(
            Toleration(
                key=reader.text(entry.get("key"), f"{here}.key"),
                operator=operator,
                value=reader.text(entry.get("value"), f"{here}.value"),
                effect=effect,
            )
        )
    return tuple(tolerations)


def _parse_host_ports(
    reader: FieldReader, spec: Mapping[str, Any], containers: list[Any]
) -> tuple[HostPort, ...]:
    # As kube-scheduler's NodePorts: the ports of the regular containers and of the
    # sidecars (restartable init containers), which run as long as the pod does.
    # A hostNetwork pod's ports carry hostPort already (the API server's defaulting).
    running = [(f"spec.containers[{i}]", c) for i, c in enumerate(containers)]
    for index, item in enumerate(reader.items(spec.get("initContainers"), "spec.initContainers")):
        where = f"spec.initContainers[{index}]"
        init = reader.mapping(item, where)
        if reader.text(init.get("restartPolicy"), f"{where}.restartPolicy") == "Always":
            running.append((where, init))
    ports: set[HostPort] = set()
    for owner, item in running:
        container = reader.mapping(item, owner)
        where = f"{owner}.ports"
        for number, entry_raw in enumerate(reader.items(container.get("ports"), where)):
            entry = reader.mapping(entry_raw, f"{where}[{number}]")
            port = reader.integer(entry.get("hostPort"), f"{where}[{number}].hostPort")
            if port <= 0:
                continue
            ports.add(
                HostPort(
                    ip=reader.text(entry.get("hostIP"), f"{where}[{number}].hostIP") or "0.0.0.0",
                    protocol=reader.text(entry.get("protocol"), f"{where}[{number}].protocol")
                    or "TCP",
                    port=port,
                )
            )
    return tuple(sorted(ports, key=lambda p: (p.port, p.protocol, p.ip)))


def _parse_claims(reader: FieldReader, spec: Mapping[str, Any], pod: str) -> tuple[str, ...]:
    claims = []
    for index, item in enumerate(reader.items(spec.get("volumes"), "spec.volumes")):
        volume = reader.mapping(item, f"spec.volumes[{index}]")
        if "persistentVolumeClaim" in volume:
            source = reader.mapping(
                volume["persistentVolumeClaim"], f"spec.volumes[{index}].persistentVolumeClaim"
            )
            where = f"spec.volumes[{index}].persistentVolumeClaim.claimName"
            claims.append(reader.text(source.get("claimName"), where))
        elif "ephemeral" in volume:
            # The claim Kubernetes makes for a generic ephemeral volume: <pod>-<volume>.
            claims.append(f"{pod}-{reader.text(volume.get('name'), f'spec.volumes[{index}].name')}")
    return tuple(claims)


def _controller_owner(
    reader: FieldReader, meta: Mapping[str, Any]
) -> tuple[str | None, str | None, str | None]:
    """The uid, name and kind of the pod's controlling owner, if it has one."""
    for index, item in enumerate(
        reader.items(meta.get("ownerReferences"), "metadata.ownerReferences")
    ):
        owner = reader.mapping(item, f"metadata.ownerReferences[{index}]")
        if owner.get("controller") is True:
            where = f"metadata.ownerReferences[{index}]"
            return (
                reader.text(owner.get("uid"), f"{where}.uid"),
                reader.text(owner.get("name"), f"{where}.name"),
                reader.text(owner.get("kind"), f"{where}.kind"),
            )
    return None, None, None


def _membership_annotations(reader: FieldReader, raw: object) -> dict[str, str]:
    """The pod annotations that name its group, task or queue in Volcano's API, or its Kueue
    Workload."""
    if type(raw) is not dict and not isinstance(raw, Mapping):
        return {}
    return {
        key: reader.text(raw[key], f"metadata.annotations.{key}")
        for key in MEMBERSHIP_ANNOTATIONS
        if key in raw
    }


@dataclass(frozen=True, slots=True)
class _SpecRead:
    """What a pod's reading takes from its spec and from what its status says of resizes.

    Pods of one workload share it (one spec, one namespace): the first is read
    in full, the others take this (:func:`_read_spec`).
    """

    scheduler_name: str
    priority: int
    requests: Mapping[str, int]
    node_selector: Mapping[str, str]
    required_affinity: tuple[NodeSelectorTerm, ...] | None
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[HostPort, ...]
    placement: tuple[object, ...]
    shape: tuple[object, ...]
    asks: Asks
    topology: PodTopology
    preferences: Preferences
    claims: tuple[str, ...]
    gated: bool
    preemption_policy: str
    workload: WorkloadRef | None
    scheduling_group: str | None
    device_claims: tuple[PodClaim, ...]
    node_features: tuple[str, ...]
    #: The pod labels it was read with, when it depends on them (inter-pod rules), else None.
    labels: Mapping[str, str] | None
    #: The pod name it was read with, when it depends on it (its claims), else None.
    name: str | None


#: Spec reads by what they were read from (:func:`_spec_key`); a bound.
_KNOWN_SPECS: dict[bytes, _SpecRead] = {}
_KNOWN_SPECS_MAX: Final = 1024


def _spec_key(
    namespace: str, spec: dict[str, Any], status: Mapping[str, Any], bound: bool
) -> bytes | None:
    """Everything :func:`_read_spec_fields` reads but the pod's labels and name, encoded.

    The spec but ``nodeName``, and of the status what a bound pod's requests and
    its claims are read from (:func:`progress_fingerprint`'s choice): two pods of
    one workload, pending or bound, have the same key. None when it cannot be
    encoded (the full read says what is wrong).
    """
    if "nodeName" in spec:
        spec = dict(spec)
        del spec["nodeName"]
    inputs = resize_inputs(status)
    read = (
        namespace,
        bound,
        spec,
        status.get("resourceClaimStatuses"),
        inputs.containers,
        inputs.allocated,
        inputs.resources,
        inputs.pending,
    )
    try:
        return orjson.dumps(read)
    except TypeError:
        return None


def _read_spec(
    reader: FieldReader,
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    containers: list[Any],
    *,
    namespace: str,
    name: str,
    labels: Mapping[str, str],
    bound: bool,
) -> _SpecRead:
    """The spec's part of a pod's reading, read once per distinct spec (see :class:`_SpecRead`)."""
    key = _spec_key(namespace, spec, status, bound) if type(spec) is dict else None
    known = _KNOWN_SPECS.get(key) if key is not None else None
    if (
        known is not None
        and (known.labels is None or known.labels == labels)
        and (known.name is None or known.name == name)
    ):
        return known
    read = _read_spec_fields(
        reader, spec, status, containers, namespace=namespace, name=name, labels=labels,
        bound=bound,
    )  # fmt: skip
    if key is not None:
        if len(_KNOWN_SPECS) >= _KNOWN_SPECS_MAX:
            _KNOWN_SPECS.clear()
        _KNOWN_SPECS[key] = read
    return read


def _read_spec_fields(
    reader: FieldReader,
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    containers: list[Any],
    *,
    namespace: str,
    name: str,
    labels: Mapping[str, str],
    bound: bool,
) -> _SpecRead:
    requests = read_pod_requests(reader, spec, status, containers, bound=bound)
    node_selector = reader.strings(spec.get("nodeSelector"), "spec.nodeSelector")
    affinity = _parse_affinity(reader, spec)
    tolerations = _parse_tolerations(reader, spec.get("tolerations"))
    host_ports = _parse_host_ports(reader, spec, containers)
    placement: tuple[object, ...] = (tuple(sorted(node_selector.items())), affinity, tolerations)
    node_features = required_node_features(reader, spec)
    if node_features:
        placement = (*placement, node_features)
    topology = read_pod_topology(reader, spec, namespace, labels)
    shape: tuple[object, ...] = (placement, tuple(sorted(requests.items())), host_ports)
    preferences = read_preferences(reader, spec, namespace, labels)
    if topology or preferences:
        # Pods with inter-pod rules see (and are seen by) each other by labels.
        shape = (*shape, namespace, tuple(sorted(labels.items())), topology, preferences)
    device_claims = read_pod_claims(reader, spec, status)
    if device_claims:
        # Claims from one template ask alike; a named claim is itself.
        asked = tuple(
            (c.name, c.template or "", c.claim if not c.template else "") for c in device_claims
        )
        shape = (*shape, namespace, asked)
    claims = _parse_claims(reader, spec, name)
    # Only these two readers look at labels, and only when the spec has rules to read.
    by_labels = "affinity" in spec or "topologySpreadConstraints" in spec
    return _SpecRead(
        scheduler_name=reader.text(
            spec.get("schedulerName"), "spec.schedulerName", "default-scheduler"
        ),
        priority=reader.integer(spec.get("priority"), "spec.priority"),
        requests=requests,
        node_selector=node_selector,
        required_affinity=affinity,
        tolerations=tolerations,
        host_ports=host_ports,
        placement=placement,
        shape=shape,
        asks=read_asks(spec),
        topology=topology,
        preferences=preferences,
        claims=claims,
        gated=bool(reader.items(spec.get("schedulingGates"), "spec.schedulingGates")),
        preemption_policy=reader.text(
            spec.get("preemptionPolicy"), "spec.preemptionPolicy", "PreemptLowerPriority"
        ),
        workload=read_workload_ref(reader, spec),
        scheduling_group=read_scheduling_group(reader, spec),
        device_claims=device_claims,
        node_features=node_features,
        labels=labels if by_labels else None,
        # An ephemeral volume's claim is named after the pod.
        name=name if claims else None,
    )


def _parse_pod(raw: Mapping[str, Any]) -> PodInfo:
    # ``type(x) is dict`` first: the ABC's isinstance is slow, and this runs per pod read.
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise PodParseError("<unknown>", f"expected an object, got {type(raw).__name__}")
    meta_raw = raw.get("metadata")
    meta: Mapping[str, Any] = (
        meta_raw if type(meta_raw) is dict or isinstance(meta_raw, Mapping) else {}
    )
    is_mapping = meta is meta_raw
    namespace = meta.get("namespace") or "default"
    name = meta.get("name") or meta.get("generateName") or "<unnamed>"
    reader = FieldReader(partial(PodParseError, f"{namespace}/{name}"))
    if not is_mapping:
        raise reader.fail(f"metadata must be an object, got {meta_raw!r}")
    namespace = reader.text(namespace, "metadata.namespace")
    name = reader.text(meta.get("name"), "metadata.name")
    if not name:
        raise reader.fail("metadata.name is missing")
    uid = reader.text(meta.get("uid"), "metadata.uid") or f"{namespace}/{name}"
    labels = reader.strings(meta.get("labels"), "metadata.labels")
    # Only the few keys that name a group or a task: other annotations may hold anything.
    annotations = _membership_annotations(reader, meta.get("annotations"))
    owner_uid, owner_name, owner_kind = _controller_owner(reader, meta)
    spec = reader.mapping(raw.get("spec"), "spec")
    status = reader.mapping(raw.get("status"), "status")
    containers = reader.items(spec.get("containers"), "spec.containers")
    node_name = reader.text(spec.get("nodeName"), "spec.nodeName") or None
    read = _read_spec(
        reader, spec, status, containers, namespace=namespace, name=name, labels=labels,
        bound=node_name is not None,
    )  # fmt: skip
    return PodInfo(
        namespace=namespace,
        name=name,
        uid=uid,
        labels=labels,
        group=pod_group_name(labels, annotations),
        role=pod_role(labels, annotations),
        scheduler_name=read.scheduler_name,
        node_name=node_name,
        phase=reader.text(status.get("phase"), "status.phase", "Pending"),
        deleting=meta.get("deletionTimestamp") is not None,
        priority=read.priority,
        created=reader.timestamp(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
        owner_uid=owner_uid,
        requests=read.requests,
        node_selector=read.node_selector,
        required_affinity=read.required_affinity,
        tolerations=read.tolerations,
        host_ports=read.host_ports,
        placement=read.placement,
        shape=read.shape,
        asks=read.asks,
        topology=read.topology,
        preferences=read.preferences,
        claims=read.claims,
        gated=read.gated,
        owner_name=owner_name or None,
        owner_kind=owner_kind or None,
        volcano_queue=annotations.get(VOLCANO_QUEUE_ANNOTATION) or None,
        started=reader.timestamp(status.get("startTime"), "status.startTime") or None,
        preemption_policy=read.preemption_policy,
        workload=read.workload,
        scheduling_group=read.scheduling_group,
        device_claims=read.device_claims,
        node_features=read.node_features,
        kueue_admitted_by=annotations.get(KUEUE_WORKLOAD_ANNOTATION) or None,
    )
