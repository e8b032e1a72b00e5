"""A pod's reference to a native gang: a ``Workload``'s (Kubernetes 1.35, ``spec.workloadRef``)
or a ``PodGroup``'s (1.36 and later, ``spec.schedulingGroup``).

``spec.workloadRef`` names a Workload in the pod's namespace, one of its
``podGroups`` and, optionally, a replica key: each (Workload, podGroup,
replica key) is a gang of its own. Here only the pod's side is read; the
Workload itself is read by :mod:`coscheduler.api.adapters.workload`.

Kept apart from that adapter because the pod parser needs it, and the
adapters' package imports the pod parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coscheduler.api.fields import FieldReader

__all__ = ["WorkloadRef", "read_scheduling_group", "read_workload_ref"]

_SEPARATOR = "/"  # cannot occur in any of the three: each is a DNS name or label


@dataclass(frozen=True, slots=True)
class WorkloadRef:
    """Which gang of which Workload a pod belongs to (the pod's namespace is the Workload's)."""

    workload: str
    pod_group: str
    replica_key: str = ""

    @property
    def gang_name(self) -> str:
        """The gang's name, unique in the namespace: ``workload/podGroup[/replicaKey]``."""
        parts = (self.workload, self.pod_group, self.replica_key)
        return _SEPARATOR.join(parts) if self.replica_key else _SEPARATOR.join(parts[:2])

    @classmethod
    def from_gang_name(cls, gang_name: str) -> WorkloadRef:
        """The reference :attr:`gang_name` was made from."""
        workload, _, rest = gang_name.partition(_SEPARATOR)
        pod_group, _, replica_key = rest.partition(_SEPARATOR)
        return cls(workload, pod_group, replica_key)

    def describe(self, namespace: str) -> str:
        """``Workload ns/train podGroup workers replica r1``, as messages name the gang."""
        text = f"Workload {namespace}/{self.workload} podGroup {self.pod_group}"
        return f"{text} replica {self.replica_key}" if self.replica_key else text


def read_workload_ref(reader: FieldReader, spec: Mapping[str, Any]) -> WorkloadRef | None:
    """``spec.workloadRef`` (name and podGroup required, podGroupReplicaKey optional), or None."""
    raw = spec.get("workloadRef")
    if raw is None:
        return None
    ref = reader.mapping(raw, "spec.workloadRef")
    name = reader.text(ref.get("name"), "spec.workloadRef.name")
    pod_group = reader.text(ref.get("podGroup"), "spec.workloadRef.podGroup")
    replica = reader.text(ref.get("podGroupReplicaKey"), "spec.workloadRef.podGroupReplicaKey")
    for field, value in (("name", name), ("podGroup", pod_group), ("podGroupReplicaKey", replica)):
        if _SEPARATOR in value:
            raise reader.fail(f"spec.workloadRef.{field} = {value!r} is not a DNS name")
    if not name or not pod_group:
        raise reader.fail("spec.workloadRef needs both name and podGroup")
    return WorkloadRef(name, pod_group, replica)


def read_scheduling_group(reader: FieldReader, spec: Mapping[str, Any]) -> str | None:
    """``spec.schedulingGroup.podGroupName`` (Kubernetes 1.36 and later): the native
    PodGroup, in the pod's namespace, the pod belongs to; None without one."""
    raw = spec.get("schedulingGroup")
    if raw is None:
        return None
    group = reader.mapping(raw, "spec.schedulingGroup")
    name = reader.text(group.get("podGroupName"), "spec.schedulingGroup.podGroupName")
    if not name or _SEPARATOR in name:
        raise reader.fail(
            f"spec.schedulingGroup.podGroupName = {name!r} is not the name of a PodGroup"
        )
    return name
