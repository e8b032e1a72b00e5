"""The simulator's input: a cluster and a workload, in one YAML file.

Why a schema of its own rather than Kubernetes objects: a simulation is about
*many* equal things (a pool of 5,000 identical nodes, 300 gangs arriving every
few seconds), so a node pool or a series of gangs is one entry with a
``count``. Field names follow Kubernetes (camelCase, quantities as strings such
as ``500m`` or ``4Gi``) and carry their unit when they are times::

    cluster:
      nodes:
        - name: cpu            # with count > 1: cpu-0, cpu-1, ...
          count: 4
          allocatable: {cpu: "8", memory: 32Gi}   # pods defaults to 110
          labels: {pool: cpu}
          taints: [{key: gpu, value: "true", effect: NoSchedule}]
          devices: {gpu: 8}    # DRA: devices per node, by DeviceClass
    workload:
      gangs:
        - name: train          # with count > 1: train-0, train-1, ...
          size: 4              # pods in the gang
          minMember: 4         # pods that must run together (default: size)
          requests: {cpu: "3", memory: 4Gi}   # per pod
          priority: 0
          arrivalSeconds: 0    # when its pods are created
          runSeconds: 600      # how long it runs once minMember are bound
          count: 1
          intervalSeconds: 0   # between the arrivals of a series (count > 1)
          nodeSelector: {pool: cpu}
          tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
          topology: {required: rack}   # as a PodGroup's spec.topology
          onePer: kubernetes.io/hostname   # members keep apart (required anti-affinity)
          queue: team-a        # the queue it draws from (default: the implicit ``default``)
          namespace: ml        # its namespace (default: ``sim``)
          devices: {gpu: 2}    # DRA: devices per pod, by DeviceClass (a claim per pod)
    queues:                    # optional: as Queue objects' specs, by name
      - name: team-a
        weight: 3              # 1 to 1000 (default 1)
        nominal: {cpu: "16"}   # entitled quota per resource
        max: {cpu: "48"}       # hard cap, borrowing included
        lendingLimit: {cpu: "4"}   # lends at most this of its unused nominal; keeps the rest
        state: Open            # or Closed: admits no new gang
        parent: org            # optional; gangs draw from queues without children
        namespaces: [ml]       # who may use it; ``all`` (the default) lets every namespace
    usageHalfLifeSeconds: 600  # optional: fair share over time (the scheduler's
                               # --usage-half-life-seconds; default 0, off)

Every node carries the ``kubernetes.io/hostname`` label, as a kubelet sets it.
Devices are allocated by the core's DRA allocator (:mod:`~coscheduler.sim.devices`):
a gang gets all its pods' devices or none; queues count them as
``deviceclass.resource.kubernetes.io/<class>``.

Every mistake is reported with its path in the file and what was expected,
all at once (:class:`ScenarioError`), never as a traceback; what holds queues
and gangs together (parents, the queue a series names, its namespace) is
checked once every field is valid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from coscheduler.api import validation
from coscheduler.api.node import NodeInfo
from coscheduler.api.node import Taint as NodeTaint
from coscheduler.api.pod_topology import LabelSelector
from coscheduler.api.podgroup import DEFAULT_QUEUE, GroupTopology
from coscheduler.api.quantity import QuantityError, resource_amount
from coscheduler.api.requests import POD_RESOURCE
from coscheduler.core.quota import QueuePolicy

__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_NODE_PODS",
    "Gang",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "parse_scenario",
]

#: The label every kubelet puts on its node.
HOSTNAME = "kubernetes.io/hostname"

#: The namespace of a gang that names none.
DEFAULT_NAMESPACE = "sim"

#: The kubelet's default ``pods`` capacity, used when a node pool does not say.
DEFAULT_NODE_PODS = 110


class ScenarioError(ValueError):
    """A scenario file that cannot be simulated; the message lists every problem."""


def _amounts(value: object) -> dict[str, int]:
    """A ResourceList in the scheduler's integers (millicores, bytes, counts)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a map of resource name to quantity, got {value!r}")
    amounts: dict[str, int] = {}
    for name, quantity in value.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"resource names are strings, got {name!r}")
        if isinstance(quantity, float):
            quantity = repr(quantity)
        try:
            amount = resource_amount(name, quantity)
        except QuantityError as error:
            raise ValueError(f"{name}: {error}") from None
        if amount < 0:
            raise ValueError(f"{name}: {quantity!r} must not be negative")
        amounts[name] = amount
    return amounts


#: Quantities as users write them, converted on input.
ResourceList = Annotated[dict[str, int], BeforeValidator(_amounts)]


#: A DeviceClass name (a DNS label, so that it can name objects too).
DeviceClassName = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class TaintSpec(_Strict):
    key: str = Field(min_length=1)
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class TolerationSpec(_Strict):
    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""


class NodePool(_Strict):
    """``count`` equal nodes."""

    name: str = Field(min_length=1)
    count: int = Field(1, ge=1)
    allocatable: ResourceList
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[TaintSpec] = Field(default_factory=list)
    unschedulable: bool = False
    #: DRA: how many devices each node has, per DeviceClass.
    devices: dict[DeviceClassName, Annotated[int, Field(ge=0, le=1024)]] = Field(
        default_factory=dict
    )


class GangSeries(_Strict):
    """``count`` equal gangs arriving ``intervalSeconds`` apart."""

    name: str = Field(min_length=1)
    size: int = Field(ge=1)
    min_member: int | None = Field(None, alias="minMember", ge=1)
    requests: ResourceList = Field(default_factory=dict)
    priority: int = 0
    arrival_seconds: float = Field(0.0, alias="arrivalSeconds", ge=0)
    run_seconds: float = Field(alias="runSeconds", gt=0)
    count: int = Field(1, ge=1)
    interval_seconds: float = Field(0.0, alias="intervalSeconds", ge=0)
    node_selector: dict[str, str] = Field(default_factory=dict, alias="nodeSelector")
    tolerations: list[TolerationSpec] = Field(default_factory=list)
    topology: GroupTopology | None = None
    one_per: str | None = Field(None, alias="onePer", min_length=1)
    queue: str = Field(DEFAULT_QUEUE, min_length=1, max_length=63)
    namespace: str = Field(DEFAULT_NAMESPACE, min_length=1, max_length=63)
    #: DRA: how many devices each pod asks, per DeviceClass.
    devices: dict[DeviceClassName, Annotated[int, Field(ge=1, le=1024)]] = Field(
        default_factory=dict
    )

    @model_validator(mode="after")
    def _min_member_fits(self) -> GangSeries:
        if self.min_member is not None and self.min_member > self.size:
            raise ValueError(
                f"minMember {self.min_member} is larger than size {self.size}: "
                "the gang could never start"
            )
        return self


def _namespaces(value: object) -> object:
    """``all`` or a list of names: anything else gets one message, not one per alternative."""
    if value == "all" or isinstance(value, list):
        return value
    raise ValueError("expected a list of namespace names, or all")


class QueueEntry(_Strict):
    """One queue, as a Queue object's spec with its name."""

    name: str = Field(min_length=1, max_length=63)
    weight: int = Field(1, ge=1, le=1000)
    nominal: ResourceList = Field(default_factory=dict)
    max: ResourceList = Field(default_factory=dict)
    lending_limit: ResourceList = Field(default_factory=dict, alias="lendingLimit")
    state: Literal["Open", "Closed"] = "Open"
    parent: str | None = Field(None, min_length=1, max_length=63)
    namespaces: Annotated[
        Literal["all"] | list[Annotated[str, Field(min_length=1)]],
        BeforeValidator(_namespaces),
    ] = "all"

    @model_validator(mode="after")
    def _max_holds_nominal(self) -> QueueEntry:
        low = sorted(r for r, cap in self.max.items() if cap < self.nominal.get(r, 0))
        if low:
            raise ValueError(f"queue {self.name}: max is below nominal for {', '.join(low)}")
        if self.parent == self.name:
            raise ValueError(f"queue {self.name} cannot be its own parent")
        over = sorted(r for r, a in self.lending_limit.items() if a > self.nominal.get(r, 0))
        if over:
            raise ValueError(
                f"queue {self.name}: lendingLimit is above nominal for {', '.join(over)} "
                "(a queue lends at most its nominal)"
            )
        return self

    def allows(self, namespace: str) -> bool:
        return self.namespaces == "all" or namespace in self.namespaces

    def policy(self) -> QueuePolicy:
        """The queue as the core sees it."""
        every = self.namespaces == "all"
        return QueuePolicy(
            name=self.name,
            nominal=dict(self.nominal),
            max=dict(self.max),
            lending_limit=dict(self.lending_limit),
            weight=self.weight,
            open=self.state == "Open",
            parent=self.parent,
            namespaces=frozenset() if every else frozenset(self.namespaces),
            selector=LabelSelector() if every else None,  # empty: every namespace
        )


class ClusterSpec(_Strict):
    nodes: list[NodePool] = Field(min_length=1)


class WorkloadSpec(_Strict):
    gangs: list[GangSeries] = Field(min_length=1)


class ScenarioSpec(_Strict):
    cluster: ClusterSpec
    workload: WorkloadSpec
    queues: list[QueueEntry] = Field(default_factory=list)
    usage_half_life_seconds: float = Field(0.0, alias="usageHalfLifeSeconds", ge=0)

    @model_validator(mode="after")
    def _names_unique(self) -> ScenarioSpec:
        for what, names in (
            ("node", [n for pool in self.cluster.nodes for n in _names(pool.name, pool.count)]),
            ("gang", [n for s in self.workload.gangs for n in _names(s.name, s.count)]),
        ):
            seen: set[str] = set()
            for name in names:
                if name in seen:
                    raise ValueError(f"two {what}s are named {name!r} (after expanding count)")
                seen.add(name)
        return self


@dataclass(frozen=True, slots=True)
class Gang:
    """One gang of the workload, as the replay uses it.

    ``requests`` are per pod, in the scheduler's integers; ``min_member`` is
    how many pods must be bound before the gang starts running.
    """

    name: str
    size: int
    min_member: int
    requests: Mapping[str, int]
    priority: int
    arrival: float
    run: float
    node_selector: Mapping[str, str]
    tolerations: tuple[Mapping[str, str], ...]
    #: The PodGroup's ``spec.topology`` levels, narrow to wide (empty: none).
    topology_levels: tuple[str, ...] = ()
    #: A topology key its members keep apart by (required anti-affinity), if any.
    one_per: str | None = None
    queue: str = DEFAULT_QUEUE
    namespace: str = DEFAULT_NAMESPACE
    #: DRA: devices per pod, by DeviceClass.
    devices: Mapping[str, int] = dataclasses.field(default_factory=dict)

    @property
    def constrained(self) -> bool:
        """Whether where it fits depends on more than free room."""
        return bool(self.topology_levels or self.one_per)

    def without_topology(self) -> Gang:
        """The same gang, free to go anywhere room allows."""
        return dataclasses.replace(self, topology_levels=(), one_per=None)

    @property
    def cpu(self) -> int:
        """Millicores per pod."""
        return self.requests.get("cpu", 0)


@dataclass(frozen=True, slots=True)
class Scenario:
    """A validated scenario: the nodes and the gangs, expanded."""

    nodes: tuple[NodeInfo, ...]
    gangs: tuple[Gang, ...]
    #: The queues the scenario defines (none: every gang in the implicit default).
    queues: tuple[QueuePolicy, ...] = ()
    #: The scheduler's usage half-life (0: queues are ordered by their usage now only).
    usage_half_life_seconds: float = 0.0
    #: DRA: per node with devices, how many of each DeviceClass.
    node_devices: Mapping[str, Mapping[str, int]] = dataclasses.field(default_factory=dict)

    @property
    def cpu_capacity(self) -> int:
        """Millicores of schedulable nodes."""
        return sum(n.allocatable.get("cpu", 0) for n in self.nodes if not n.unschedulable)

    @property
    def pods(self) -> int:
        return sum(g.size for g in self.gangs)

    def without_topology(self) -> Scenario:
        """The same scenario with every gang free to go anywhere room allows."""
        return dataclasses.replace(self, gangs=tuple(g.without_topology() for g in self.gangs))

    @property
    def queue_names(self) -> tuple[str, ...]:
        """The queues gangs draw from, sorted."""
        return tuple(sorted({g.queue for g in self.gangs}))


def _queue_problems(spec: ScenarioSpec) -> list[str]:
    """What does not hold together between the queues and the gangs naming them."""
    queues: dict[str, QueueEntry] = {}
    problems = []
    for number, queue in enumerate(spec.queues):
        if queue.name in queues:
            problems.append(f"queues[{number}]: two queues are named {queue.name!r}")
        queues[queue.name] = queue
    for number, queue in enumerate(spec.queues):
        seen = [queue.name]
        parent = queue.parent
        while parent is not None:
            if parent not in queues:
                problems.append(
                    f"queues[{number}]: queue {queue.name}: its parent queue {parent} "
                    "is not defined"
                )
                break
            if parent in seen:
                cycle = " -> ".join([*seen[seen.index(parent) :], parent])
                problems.append(
                    f"queues[{number}]: queue {queue.name}: its parents form a cycle ({cycle})"
                )
                break
            seen.append(parent)
            parent = queues[parent].parent
    parents = {q.parent for q in spec.queues if q.parent is not None}
    for number, series in enumerate(spec.workload.gangs):
        where = f"workload.gangs[{number}].queue"
        named = queues.get(series.queue)
        if named is None and series.queue != DEFAULT_QUEUE:
            defined = ", ".join(sorted(queues)) or "none"
            problems.append(f"{where}: queue {series.queue} is not defined (queues: {defined})")
        elif series.queue in parents:
            problems.append(
                f"{where}: queue {series.queue} has child queues; "
                "gangs draw from a queue without children"
            )
        elif named is not None and not named.allows(series.namespace):
            problems.append(
                f"{where}: queue {series.queue} does not allow namespace {series.namespace} "
                "(see its namespaces)"
            )
    return problems


def _device_problems(spec: ScenarioSpec) -> list[str]:
    """Gangs asking for a class of device no node has: they could never start."""
    published = {name for pool in spec.cluster.nodes for name, n in pool.devices.items() if n}
    return [
        f"workload.gangs[{number}].devices: no node pool has devices of class {name}"
        for number, series in enumerate(spec.workload.gangs)
        for name in sorted(set(series.devices) - published)
    ]


def _names(name: str, count: int) -> list[str]:
    if count == 1:
        return [name]
    width = len(str(count - 1))
    return [f"{name}-{i:0{width}d}" for i in range(count)]


def _explain(error: ValidationError, source: str) -> ScenarioError:
    lines = [f"  {line}" for line in validation.problems(error)]
    return ScenarioError(f"{source}: invalid scenario:\n" + "\n".join(lines))


def _expand(spec: ScenarioSpec) -> Scenario:
    nodes: list[NodeInfo] = []
    node_devices: dict[str, dict[str, int]] = {}
    for pool in spec.cluster.nodes:
        allocatable = {POD_RESOURCE: DEFAULT_NODE_PODS, **pool.allocatable}
        taints = tuple(NodeTaint(t.key, t.value, t.effect) for t in pool.taints)
        for name in _names(pool.name, pool.count):
            nodes.append(
                NodeInfo.build(
                    name,
                    allocatable=allocatable,
                    labels={HOSTNAME: name, **pool.labels},
                    taints=taints,
                    unschedulable=pool.unschedulable,
                )
            )
            if any(pool.devices.values()):
                node_devices[name] = {k: n for k, n in pool.devices.items() if n}
    gangs: list[Gang] = []
    for series in spec.workload.gangs:
        tolerations = tuple(t.model_dump(exclude_defaults=True) for t in series.tolerations)
        for index, name in enumerate(_names(series.name, series.count)):
            gangs.append(
                Gang(
                    name=name,
                    size=series.size,
                    min_member=series.min_member or series.size,
                    requests=dict(series.requests),
                    priority=series.priority,
                    arrival=series.arrival_seconds + index * series.interval_seconds,
                    run=series.run_seconds,
                    node_selector=dict(series.node_selector),
                    tolerations=tolerations,
                    topology_levels=series.topology.levels() if series.topology else (),
                    one_per=series.one_per,
                    queue=series.queue,
                    namespace=series.namespace,
                    devices=dict(series.devices),
                )
            )
    queues = tuple(queue.policy() for queue in spec.queues)
    return Scenario(
        nodes=tuple(nodes),
        gangs=tuple(gangs),
        queues=queues,
        usage_half_life_seconds=spec.usage_half_life_seconds,
        node_devices=node_devices,
    )


def parse_scenario(raw: Any, source: str = "scenario") -> Scenario:
    """Validate a scenario already read from YAML; raises :class:`ScenarioError`."""
    if not isinstance(raw, Mapping):
        raise ScenarioError(
            f"{source}: expected a map with 'cluster' and 'workload', got {type(raw).__name__}"
        )
    try:
        spec = ScenarioSpec.model_validate(raw)
    except ValidationError as error:
        raise _explain(error, source) from None
    problems = _queue_problems(spec) + _device_problems(spec)
    if problems:
        lines = "\n".join(f"  {line}" for line in problems)
        raise ScenarioError(f"{source}: invalid scenario:\n{lines}")
    return _expand(spec)


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario file; raises :class:`ScenarioError`."""
    try:
        text = path.read_text()
    except OSError as error:
        raise ScenarioError(f"{path}: {error.strerror}") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        raw = yaml.load(text, Loader=loader)  # a safe loader, C or Python
    except yaml.YAMLError as error:
        raise ScenarioError(f"{path}: not valid YAML: {error}") from None
    return parse_scenario(raw, str(path))
