"""Nodes as the scheduler sees them: slim, typed, immutable, parsed once.

Like :mod:`coscheduler.api.pod`, and with the same field reader, this keeps
only what node fit reads (name, labels, allocatable, taints,
``spec.unschedulable``), with quantities turned
into integers once. Allocatable falls back to capacity when a node reports no
allocatable (some fake and very old kubelets do), as the scheduler would
otherwise see a node with room for nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from coscheduler.api.fields import FieldReader, ObjectParseError

__all__ = ["TAINT_EFFECTS", "NodeInfo", "NodeParseError", "Taint"]

#: The effects a taint may have.
TAINT_EFFECTS: Final = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})


class NodeParseError(ObjectParseError):
    """A node object the scheduler cannot read."""

    kind = "node"


@dataclass(frozen=True, slots=True)
class Taint:
    """One ``spec.taints`` entry."""

    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """The fields of a node that node fit reads, already converted.

    ``allocatable`` is in the scheduler's integers (millicores, bytes,
    counts). ``signature`` is a hashable key of what filters other than
    free capacity read: nodes with equal signatures suit exactly the same pods.
    """

    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]
    taints: tuple[Taint, ...]
    unschedulable: bool
    signature: tuple[object, ...]
    #: ``status.declaredFeatures``: what its kubelet supports (NodeDeclaredFeatures).
    declared_features: frozenset[str] = frozenset()

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> NodeInfo:
        """Parse a raw node (``orjson.loads`` of the API's JSON)."""
        return _parse_node(raw)

    @classmethod
    def build(
        cls,
        name: str,
        *,
        allocatable: Mapping[str, int],
        labels: Mapping[str, str] | None = None,
        taints: tuple[Taint, ...] = (),
        unschedulable: bool = False,
        declared_features: frozenset[str] = frozenset(),
    ) -> NodeInfo:
        """A node from already converted values (tests, simulations, benchmarks)."""
        labels = dict(labels or {})
        return cls(
            name=name,
            labels=labels,
            allocatable=dict(allocatable),
            taints=taints,
            unschedulable=unschedulable,
            signature=(tuple(sorted(labels.items())), taints, unschedulable, declared_features),
            declared_features=declared_features,
        )


def _parse_node(raw: Mapping[str, Any]) -> NodeInfo:
    if not isinstance(raw, Mapping):
        raise NodeParseError("<unknown>", f"expected an object, got {type(raw).__name__}")
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise NodeParseError("<unknown>", f"metadata.name is missing in {meta!r}")
    name: str = meta["name"]

    reader = FieldReader(partial(NodeParseError, name))
    labels = reader.strings(meta.get("labels"), "metadata.labels")
    spec = reader.mapping(raw.get("spec"), "spec")
    status = reader.mapping(raw.get("status"), "status")
    where = "status.allocatable"
    if status.get("allocatable") is None:
        where = "status.capacity"
    allocatable = reader.resources(status.get(where.split(".")[1]), where)

    taints = []
    for index, item in enumerate(reader.items(spec.get("taints"), "spec.taints")):
        entry = reader.mapping(item, f"spec.taints[{index}]")
        key = reader.text(entry.get("key"), f"spec.taints[{index}].key")
        if not key:
            raise reader.fail(f"spec.taints[{index}] needs a key, got {entry!r}")
        effect = entry.get("effect")
        if effect not in TAINT_EFFECTS:
            raise reader.fail(
                f"spec.taints[{index}].effect = {effect!r} is not one of "
                "NoSchedule, PreferNoSchedule, NoExecute"
            )
        value = reader.text(entry.get("value"), f"spec.taints[{index}].value")
        taints.append(Taint(key=key, value=value, effect=effect))

    unschedulable = spec.get("unschedulable") or False
    if not isinstance(unschedulable, bool):
        raise reader.fail(f"spec.unschedulable must be a boolean, got {unschedulable!r}")
    features = reader.items(status.get("declaredFeatures"), "status.declaredFeatures")
    return NodeInfo.build(
        name,
        allocatable=allocatable,
        labels=dict(labels),
        taints=tuple(taints),
        unschedulable=unschedulable,
        declared_features=frozenset(
            reader.text(feature, f"status.declaredFeatures[{index}]")
            for index, feature in enumerate(features)
        ),
    )
