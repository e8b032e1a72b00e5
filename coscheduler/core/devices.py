"""Devices for a gang's claims, found in the same trial as its nodes (DRA's structured allocation).

The index keeps the cluster's ResourceSlices, DeviceClasses and ResourceClaims.
For one member on one candidate node, :meth:`DeviceIndex.fit` finds devices
for each of its claims not allocated yet, and checks the allocated ones can be
reached from the node; :meth:`DeviceIndex.assume` then counts them taken, so
the next member of the same trial sees them gone, and :meth:`DeviceIndex.forget`
gives them back when the trial is discarded. A claim shared by members is
allocated once, by the first; the others must land where its devices can be
reached (the allocation's node selector).

The rules are kube-scheduler's DynamicResources plugin's and its structured
allocator's:

- a pool's devices are used only when every slice of its newest generation
  is seen (``resourceSliceCount``);
- a device matches a request when every selector of its class and of the
  request holds (CEL, :mod:`~coscheduler.core.device_cel`); an evaluation
  error stops the claim, with the expression and the device named;
- ``ExactCount`` takes ``count`` devices, ``All`` every matching device of the
  node (none of them taken, at least one); ``firstAvailable`` takes the first
  alternative that can be satisfied;
- ``matchAttribute``: every device of the requests it names (all, when none)
  has the attribute, with one value;
- a device with a ``NoSchedule``/``NoExecute`` taint is taken only by a
  request that tolerates it;
- a device allocated to another claim, or assumed for one, is not taken again.

The search (:mod:`~coscheduler.core.device_search`) backtracks over the
requests of all the member's claims within a budget. What each alternative
of a request may take on a node is worked out once per snapshot generation
(slices and classes unchanged) and kept: selectors, taints and tolerations
are judged once per device, not once per member.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from coscheduler.api.devices import (
    DEVICE_CLASS_RESOURCE,
    AllocatedDevice,
    ClaimSpec,
    DeviceChoice,
    DeviceClassInfo,
    DeviceToleration,
    PodClaim,
    ResourceClaimInfo,
    ResourceSliceInfo,
)
from coscheduler.api.node import NodeInfo
from coscheduler.api.node_selector import NodeSelectorRequirement, NodeSelectorTerm
from coscheduler.core.device_cel import CelError, compile_selector
from coscheduler.core.device_search import (
    Candidate,
    ClaimAsk,
    DeviceKey,
    DeviceRefusalError,
    Matched,
    choose,
)
from coscheduler.core.filters import affinity

__all__ = [
    "CANNOT_ALLOCATE",
    "DEVICES",
    "ClaimAllocation",
    "ClaimWrite",
    "DeviceIndex",
    "DeviceKey",
    "DeviceRefusalError",
    "PodDevices",
]

#: The filter's name in a diagnosis (kube-scheduler's plugin).
DEVICES = "DynamicResources"
#: kube-scheduler's words.
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_ON_NODE = "resourceclaim not available on the node"
IN_USE = "resourceclaim in use"


@dataclass(frozen=True, slots=True)
class ClaimAllocation:
    """Devices found for one claim, and the nodes from which they are reached."""

    claim: str
    claim_uid: str
    results: tuple[AllocatedDevice, ...]
    #: None: reachable from every node.
    nodes: tuple[NodeSelectorTerm, ...] | None


@dataclass(frozen=True, slots=True)
class PodDevices:
    """What one member takes on its node: claims allocated now, and every claim it reserves."""

    pod_uid: str
    allocations: tuple[ClaimAllocation, ...]
    #: Keys of all the member's claims (allocated now, earlier, or in this trial).
    claims: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClaimWrite:
    """Before a gang's first Binding: a claim's allocation (when new) and the pods it serves.

    As kube-scheduler's DynamicResources plugin does at PreBind: the runtime
    writes ``status.allocation`` and adds ``reserve`` (pod name, uid) to
    ``status.reservedFor``, with the claim's resourceVersion as precondition.
    """

    claim: ResourceClaimInfo
    #: None: allocated already (a shared claim), only reserved for more pods.
    allocation: ClaimAllocation | None
    reserve: tuple[tuple[str, str], ...]
    #: A native PodGroup's claim: reserved for the group (name, uid), not its pods.
    group: tuple[str, str] | None = None


@dataclass(slots=True)
class _Pool:
    slices: dict[str, ResourceSliceInfo] = field(default_factory=dict)

    def complete(self) -> list[ResourceSliceInfo]:
        """The slices of the newest generation when all are seen, else none."""
        if not self.slices:
            return []
        newest = max(s.generation for s in self.slices.values())
        current = [s for s in self.slices.values() if s.generation == newest]
        return current if len(current) == current[0].slice_count else []


#: What a request's alternative may take is judged by these, on one node.
#: A node's name for its own devices; None for those reached through selectors.
_MatchKey = tuple[str, tuple[str, ...], tuple[DeviceToleration, ...], str | None]


def _node_name_term(node: str) -> NodeSelectorTerm:
    requirement = NodeSelectorRequirement("metadata.name", "In", (node,))
    return NodeSelectorTerm(match_fields=(requirement,))


class DeviceIndex:
    """The cluster's devices, classes and claims, and which devices are taken."""

    def __init__(self) -> None:
        self.classes: dict[str, DeviceClassInfo] = {}
        self.claims: dict[str, ResourceClaimInfo] = {}
        self.templates: dict[str, ClaimSpec] = {}
        self._slices: dict[str, ResourceSliceInfo] = {}
        self._pools: dict[tuple[str, str], _Pool] = {}
        #: Devices by the node their slice names; slices for selected or all nodes apart.
        self._by_node: dict[str, list[Candidate]] | None = None
        self._elsewhere: list[Candidate] = []
        #: Device -> claim key, from the claims' ``status.allocation``.
        self._allocated: dict[DeviceKey, str] = {}
        #: Device -> claim key, for allocations decided and not seen written yet.
        self._assumed: dict[DeviceKey, str] = {}
        self._assumed_claims: dict[str, ClaimAllocation] = {}
        #: Pod uid -> what it took, until forgotten (its claims' writes are then seen).
        self._by_pod: dict[str, PodDevices] = {}
        #: Device -> expression -> verdict, or the error's message.
        self._verdicts: dict[DeviceKey, dict[str, bool | str]] = {}
        #: (class, selectors, tolerations, node) -> what such a request may take there.
        #: Kept while slices and classes stay as they are.
        self._matching: dict[_MatchKey, Matched] = {}
        #: Node-local devices: their node; and how many are taken per node.
        self._node_of: dict[DeviceKey, str] = {}
        self._taken_on: dict[str, int] = {}
        #: Devices of claims whose every consumer a preemption trial took out (:meth:`set_gone`).
        self._freed: set[DeviceKey] = set()
        self._freed_on: dict[str, int] = {}
        #: Nodes whose room changed since :meth:`changed_rooms` was asked; None: every node.
        self._dirty: set[str] | None = None

    # -- the watched objects ------------------------------------------------

    def upsert_slice(self, slice_: ResourceSliceInfo) -> None:
        self.remove_slice(slice_.name)
        self._slices[slice_.name] = slice_
        self._pools.setdefault((slice_.driver, slice_.pool), _Pool()).slices[slice_.name] = slice_
        self._by_node = None
        self._dirty = None

    def remove_slice(self, name: str) -> None:
        old = self._slices.pop(name, None)
        if old is None:
            return
        pool = self._pools.get((old.driver, old.pool))
        if pool is not None:
            pool.slices.pop(name, None)
            if not pool.slices:
                del self._pools[(old.driver, old.pool)]
        for device in old.devices:
            self._verdicts.pop((old.driver, old.pool, device.name), None)
        self._by_node = None
        self._dirty = None

    def upsert_class(self, device_class: DeviceClassInfo) -> None:
        if self.classes.get(device_class.name) != device_class:
            self._matching.clear()
        self.classes[device_class.name] = device_class

    def remove_class(self, name: str) -> None:
        if self.classes.pop(name, None) is not None:
            self._matching.clear()

    def upsert_claim(self, claim: ResourceClaimInfo) -> None:
        self.remove_claim(claim.key)
        self.claims[claim.key] = claim
        if claim.allocation is not None:
            # Seen written: the assumption is the API's now.
            self._release(claim.key)
        for result in claim.allocation or ():
            key = result.key
            if key not in self._allocated and key not in self._assumed:
                self._count(key, 1)
            self._allocated[key] = claim.key

    def remove_claim(self, key: str) -> None:
        old = self.claims.pop(key, None)
        for result in (old.allocation or ()) if old is not None else ():
            if self._allocated.get(result.key) == key:
                del self._allocated[result.key]
                if result.key not in self._assumed:
                    self._count(result.key, -1)

    def _count(self, key: DeviceKey, change: int) -> None:
        """A device became taken (+1) or free (-1): allocated, assumed, or both, counts once."""
        node = self._node_of.get(key)
        if node is not None:
            self._taken_on[node] = self._taken_on.get(node, 0) + change
            if self._dirty is not None:
                self._dirty.add(node)

    def set_gone(self, pod_uids: set[str]) -> None:
        """Treat these bound pods as gone (a preemption trial): claims only they use are free.

        Only for a trial: a deleted pod's claim keeps its devices until
        kube-controller-manager deallocates it, since the API does not stop
        two claims from naming one device.
        """
        if self._by_node is None:
            self._index_devices()
        freed: set[DeviceKey] = set()
        if pod_uids:
            for claim in self.claims.values():
                users = set(claim.reserved_for)
                if claim.allocation is not None and users and users <= pod_uids:
                    freed.update(result.key for result in claim.allocation)
        if freed == self._freed:
            return
        self._freed = freed
        freed_on: dict[str, int] = {}
        for key in freed:
            node = self._node_of.get(key)
            if node is not None:
                freed_on[node] = freed_on.get(node, 0) + 1
        self._freed_on = freed_on
        self._dirty = None

    def changed_rooms(self) -> set[str] | None:
        """The nodes whose :meth:`room_on` changed since the last call (None: any node may have)."""
        if self._by_node is None:
            self._index_devices()
        dirty, self._dirty = self._dirty, set()
        return dirty

    # -- reading ------------------------------------------------------------

    def counted(
        self, namespace: str, claims: Sequence[PodClaim], charged: Collection[str] = ()
    ) -> dict[str, int]:
        """How many devices of each class the pod's claims ask, as queues count them.

        Claims made from a template are the pod's own (their template's spec,
        else the claim's); a claim named by ``resourceClaimName`` may be shared
        and counts only on the pod it is ``charged`` to (its keys; see
        :mod:`~coscheduler.core.device_charges`); a native PodGroup's claim is
        not counted per member. ``All`` and ``firstAvailable`` count their
        first choice (``All`` as one device).
        """
        counts: dict[str, int] = {}
        for entry in claims:
            made = None if entry.claim is None else self.claims.get(f"{namespace}/{entry.claim}")
            if made is not None and made.for_group:
                continue
            spec: ClaimSpec | None = None
            if entry.template is None:
                if made is not None and f"{namespace}/{entry.claim}" in charged:
                    spec = made.spec
            else:
                spec = self.templates.get(f"{namespace}/{entry.template}")
                if spec is None and made is not None:
                    spec = made.spec
            for request in spec.requests if spec is not None else ():
                choice = request.choices[0]
                resource = DEVICE_CLASS_RESOURCE + choice.device_class
                counts[resource] = counts.get(resource, 0) + (1 if choice.all else choice.count)
        return counts

    def room_on(self, node: str) -> int:
        """How many devices could still be taken for ``node``: a quick bound before :meth:`fit`."""
        if self._by_node is None:
            self._index_devices()
        assert self._by_node is not None
        taken = self._taken_on.get(node, 0) - self._freed_on.get(node, 0)
        local = len(self._by_node.get(node, ())) - taken
        return local + len(self._elsewhere)

    def by_class(self) -> dict[str | None, dict[str, tuple[int, int]]]:
        """Per node (None: devices reached through a node selector or from every node),
        per DeviceClass: how many of its devices there are and how many are neither
        allocated nor assumed. A device counts in each class whose selectors all hold
        for it (one whose selector fails to evaluate, in none)."""
        if self._by_node is None:
            self._index_devices()
        assert self._by_node is not None
        taken = self._allocated.keys() | self._assumed.keys()
        rooms: dict[str | None, dict[str, tuple[int, int]]] = {}
        places: list[tuple[str | None, list[Candidate]]] = [
            *self._by_node.items(),
            (None, self._elsewhere),
        ]
        for place, candidates in places:
            for device_class in self.classes.values():
                members = [
                    c
                    for c in candidates
                    if all(self._verdict(e, c) is True for e in device_class.selectors)
                ]
                if members:
                    free = sum(1 for c in members if c.key not in taken)
                    rooms.setdefault(place, {})[device_class.name] = (len(members), free)
        return rooms

    def least_need(self, claim_keys: Sequence[str]) -> int:
        """The fewest devices the claims not allocated yet can take (0 when all are)."""
        need = 0
        for key in dict.fromkeys(claim_keys):
            claim = self.claims.get(key)
            if claim is None or self.allocation_of(key) is not None:
                continue
            for request in claim.spec.requests:
                need += min(1 if choice.all else choice.count for choice in request.choices)
        return need

    def assumed_for(self, pod_uid: str) -> PodDevices | None:
        """What :meth:`assume` took for the pod, until forgotten or settled."""
        return self._by_pod.get(pod_uid)

    def taken(self) -> dict[DeviceKey, str]:
        """Every device allocated or assumed, with its claim."""
        return {**self._allocated, **self._assumed}

    def allocation_of(self, claim_key: str) -> ClaimAllocation | None:
        """The claim's allocation: written, or assumed by a decision."""
        assumed = self._assumed_claims.get(claim_key)
        if assumed is not None:
            return assumed
        claim = self.claims.get(claim_key)
        if claim is None or claim.allocation is None:
            return None
        return ClaimAllocation(claim.key, claim.uid, claim.allocation, claim.allocation_nodes)

    def claim_keys(self, namespace: str, pod_name: str, claims: Sequence[PodClaim]) -> list[str]:
        """The pod's claims as keys; :class:`DeviceRefusalError` when one is not made yet."""
        keys = []
        for entry in claims:
            if entry.claim is None:
                raise DeviceRefusalError(
                    f'pod "{namespace}/{pod_name}": ResourceClaim not created yet', anywhere=True
                )
            keys.append(f"{namespace}/{entry.claim}")
        return keys

    # -- deciding -----------------------------------------------------------

    def fit(self, pod_uid: str, claim_keys: Sequence[str], node: NodeInfo) -> PodDevices:
        """Devices for the member's claims on ``node``; :class:`DeviceRefusalError` when none fit.

        Nothing is taken: :meth:`assume` does that.
        """

        asks: list[ClaimAsk] = []
        uids: list[str] = []
        keys = tuple(dict.fromkeys(claim_keys))
        for key in keys:
            claim = self.claims.get(key)
            if claim is None:
                name = key.split("/", 1)[1]
                raise DeviceRefusalError(
                    f'resourceclaim.resource.k8s.io "{name}" not found', anywhere=True
                )
            if claim.deleting:
                raise DeviceRefusalError(f"resourceclaim {key} is being deleted", anywhere=True)
            assumed = self._assumed_claims.get(key)
            if assumed is not None or claim.allocation is not None:
                reach = claim.allocation_nodes if assumed is None else assumed.nodes
                if reach is not None and not any(
                    affinity.term_matches(term, node.labels, node.name) for term in reach
                ):
                    raise DeviceRefusalError(NOT_ON_NODE)
                continue
            matched = []
            for request in claim.spec.requests:
                matched.append(tuple([self._matched(choice, node) for choice in request.choices]))
            asks.append(ClaimAsk(key, claim.spec, tuple(matched)))
            uids.append(claim.uid)
        if not asks:
            return PodDevices(pod_uid, (), keys)
        picks = choose(asks, self._busy)
        if picks is None:
            raise DeviceRefusalError(CANNOT_ALLOCATE)
        allocations = []
        for position, (ask, uid) in enumerate(zip(asks, uids, strict=True)):
            mine = [(name, c) for at, name, c in picks if at == position]
            results = tuple([AllocatedDevice(name, *c.key) for name, c in mine])
            reach = _reach([c for _, c in mine])
            allocations.append(ClaimAllocation(ask.key, uid, results, reach))
        return PodDevices(pod_uid, tuple(allocations), keys)

    def _busy(self, key: DeviceKey) -> bool:
        if key in self._assumed:
            return True
        return key in self._allocated and key not in self._freed

    def assume(self, devices: PodDevices) -> None:
        """Count the member's new allocations as taken (until written, or forgotten)."""
        self._by_pod[devices.pod_uid] = devices
        for allocation in devices.allocations:
            self._assumed_claims[allocation.claim] = allocation
            for result in allocation.results:
                key = result.key
                if key not in self._assumed and key not in self._allocated:
                    self._count(key, 1)
                self._assumed[key] = allocation.claim

    def forget_pod(self, pod_uid: str) -> None:
        """Give back what the pod's :meth:`assume` took, unless its claims are seen written."""
        devices = self._by_pod.pop(pod_uid, None)
        if devices is not None:
            self.forget(devices)

    def settled(self, pod_uid: str) -> None:
        """The pod is bound: its record goes; its claims' allocations stay until seen written."""
        self._by_pod.pop(pod_uid, None)

    def forget(self, devices: PodDevices) -> None:
        """Give back what :meth:`assume` took (the trial was discarded, or a write failed)."""
        if self._by_pod.get(devices.pod_uid) is devices:
            del self._by_pod[devices.pod_uid]
        for allocation in devices.allocations:
            if self._assumed_claims.get(allocation.claim) is allocation:
                self._release(allocation.claim)

    def _release(self, claim_key: str) -> None:
        allocation = self._assumed_claims.pop(claim_key, None)
        if allocation is None:
            return
        for result in allocation.results:
            if self._assumed.get(result.key) == claim_key:
                del self._assumed[result.key]
                if result.key not in self._allocated:
                    self._count(result.key, -1)

    def writes_for(
        self,
        pods: Sequence[tuple[str, str]],
        group_claims: Mapping[str, tuple[str, str]] | None = None,
    ) -> tuple[ClaimWrite, ...]:
        """What to write on the claims of these placed pods (name, uid), in order.

        A claim allocated in this decision gets its allocation; every claim gets
        the pods that use it and are not in its ``reservedFor`` yet. A claim in
        ``group_claims`` (key -> PodGroup name, uid) is reserved for that group
        once instead, as kube-scheduler does with a PodGroup's claim.
        """
        reserves: dict[str, list[tuple[str, str]]] = {}
        groups: dict[str, tuple[str, str] | None] = {}
        group_claims = group_claims or {}
        for name, uid in pods:
            devices = self._by_pod.get(uid)
            if devices is None:
                continue
            for key in devices.claims:
                claim = self.claims.get(key)
                group = group_claims.get(key)
                user = uid if group is None else group[1]
                if claim is None or user in claim.reserved_for:
                    continue
                reserve = reserves.setdefault(key, [])
                groups[key] = group
                if group is None:
                    reserve.append((name, uid))
        writes = []
        for key, reserve in reserves.items():
            claim = self.claims[key]
            allocation = self._assumed_claims.get(key) if claim.allocation is None else None
            writes.append(ClaimWrite(claim, allocation, tuple(reserve), groups[key]))
        return tuple(writes)

    def stale(self, pods: Sequence[tuple[str, Sequence[str]]]) -> tuple[ResourceClaimInfo, ...]:
        """Claims to deallocate for pods that could not be placed: (uid, claim keys) each.

        As kube-scheduler's PostFilter: a claim allocated in the API (by a
        scheduler that then lost the pods' bindings, or restarted) and used by
        none but these pods ties them to its devices' nodes; if they cannot be
        placed there, its devices are given back so that they can be placed
        anywhere. A claim assumed by a decision in flight is never stale.
        """
        uids = {uid for uid, _ in pods}
        found: dict[str, ResourceClaimInfo] = {}
        for _, keys in pods:
            for key in keys:
                claim = self.claims.get(key)
                if (
                    claim is not None
                    and claim.allocation is not None
                    and key not in self._assumed_claims
                    and set(claim.reserved_for) <= uids
                ):
                    found[key] = claim
        return tuple(found.values())

    # -- the search ---------------------------------------------------------

    def _index_devices(self) -> None:
        by_node: dict[str, list[Candidate]] = {}
        elsewhere: list[Candidate] = []
        for (driver, pool), entry in sorted(self._pools.items()):
            for slice_ in sorted(entry.complete(), key=lambda s: s.name):
                if slice_.node_name is not None:
                    nodes: tuple[NodeSelectorTerm, ...] | None = (
                        _node_name_term(slice_.node_name),
                    )
                    into = by_node.setdefault(slice_.node_name, [])
                else:
                    nodes = None if slice_.all_nodes else slice_.node_selector
                    into = elsewhere
                for device in slice_.devices:
                    into.append(Candidate((driver, pool, device.name), driver, device, nodes))
        self._by_node = by_node
        self._elsewhere = elsewhere
        self._matching.clear()
        self._node_of = {c.key: node for node, found in by_node.items() for c in found}
        taken: dict[str, int] = {}
        for key in self._allocated.keys() | self._assumed.keys():
            node = self._node_of.get(key)
            if node is not None:
                taken[node] = taken.get(node, 0) + 1
        self._taken_on = taken

    def _matched(self, choice: DeviceChoice, node: NodeInfo) -> Matched:
        """What ``choice`` may take on ``node`` (taken or not), judged once per generation."""
        if self._by_node is None:
            self._index_devices()
        assert self._by_node is not None
        judged = (choice.device_class, choice.selectors, choice.tolerations)
        local = self._matching.get((*judged, node.name))
        if local is None:
            local = self._judge_all(choice, self._by_node.get(node.name, ()))
            self._matching[(*judged, node.name)] = local
        if not self._elsewhere:
            return local
        # Devices reached through a node selector: judged once, their reach asked per node
        # (node labels may change without the devices changing).
        shared = self._matching.get((*judged, None))
        if shared is None:
            shared = self._judge_all(choice, self._elsewhere)
            self._matching[(*judged, None)] = shared

        reached = [
            c
            for c in shared.devices
            if c.nodes is None
            or any(affinity.term_matches(term, node.labels, node.name) for term in c.nodes)
        ]
        errors = {c.key: shared.errors[c.key] for c in reached if c.key in shared.errors}
        return Matched((*local.devices, *reached), {**local.errors, **errors})

    def _judge_all(self, choice: DeviceChoice, candidates: Iterable[Candidate]) -> Matched:
        device_class = self.classes.get(choice.device_class)
        if device_class is None:
            request = choice.name.split("/", 1)[0]
            raise DeviceRefusalError(
                f"request {request}: device class {choice.device_class} does not exist",
                anywhere=True,
            )

        devices: list[Candidate] = []
        errors: dict[DeviceKey, tuple[str | None, str]] = {}
        for candidate in candidates:
            verdict = self._judge(device_class, choice, candidate)
            if isinstance(verdict, tuple):
                errors[candidate.key] = verdict
            elif not verdict:
                continue
            devices.append(candidate)
        return Matched(tuple(devices), errors)

    def _judge(
        self, device_class: DeviceClassInfo, choice: DeviceChoice, candidate: Candidate
    ) -> bool | tuple[str | None, str]:
        """Whether the device suits the choice, or (owner, words) of the selector that failed."""
        owners: tuple[tuple[str | None, tuple[str, ...]], ...] = (
            (f"class {device_class.name}", device_class.selectors),
            (None, choice.selectors),  # None: the claim, named when refused
        )
        for owner, selectors in owners:
            for number, expression in enumerate(selectors):
                verdict = self._verdict(expression, candidate)
                if isinstance(verdict, str):
                    device = "/".join(candidate.key)
                    return owner, (
                        f"selector #{number} on device {device}: {verdict} "
                        f"(expression: {expression})"
                    )
                if not verdict:
                    return False
        for taint in candidate.device.taints:
            if taint.effect in ("NoSchedule", "NoExecute") and not any(
                toleration.tolerates(taint) for toleration in choice.tolerations
            ):
                return False
        return True

    def _verdict(self, expression: str, candidate: Candidate) -> bool | str:
        verdicts = self._verdicts.setdefault(candidate.key, {})
        verdict = verdicts.get(expression)
        if verdict is None:
            try:
                verdict = compile_selector(expression).matches(candidate.driver, candidate.device)
            except CelError as error:
                verdict = str(error)
            verdicts[expression] = verdict
        return verdict


def _reach(candidates: Iterable[Candidate]) -> tuple[NodeSelectorTerm, ...] | None:
    """Where every one of these devices can be reached: the intersection of their reaches."""
    reach: tuple[NodeSelectorTerm, ...] | None = None
    for candidate in candidates:
        if candidate.nodes is None:
            continue
        if reach is None:
            reach = candidate.nodes
        elif reach != candidate.nodes:
            reach = tuple(
                NodeSelectorTerm(
                    a.match_expressions + b.match_expressions, a.match_fields + b.match_fields
                )
                for a in reach
                for b in candidate.nodes
            )
    return reach
