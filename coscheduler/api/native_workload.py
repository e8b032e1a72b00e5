"""What coscheduler reads of Kubernetes' own ``Workload`` (``scheduling.k8s.io``, 1.36 and later).

From 1.36 the gang is a PodGroup (:mod:`coscheduler.api.native_podgroup`) and
its Workload only says where the PodGroup came from. Two things of it matter:

- its ``scheduling.sigs.k8s.io/queue`` label: the queue of a PodGroup that
  names the Workload (``spec.workloadRef.workloadName``) and has no such
  label of its own (the PodGroup's wins);
- ``spec.controllerRef``: the controller that creates the pods (a Job), so
  that a gang larger than the controller can run at once is told so.

Both v1beta1 (1.37) and v1alpha2 (1.36) spell these the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from coscheduler.api.adapters import apis
from coscheduler.api.native_podgroup import queue_label

__all__ = ["PLURAL", "ControllerRef", "NativeWorkload", "read_native_workload"]

PLURAL: Final = apis.WORKLOAD_PLURAL


@dataclass(frozen=True, slots=True)
class ControllerRef:
    """``spec.controllerRef``: the object, in the Workload's namespace, that manages it."""

    api_group: str
    kind: str
    name: str

    @property
    def is_job(self) -> bool:
        return self.api_group == "batch" and self.kind == "Job"


@dataclass(frozen=True, slots=True)
class NativeWorkload:
    namespace: str
    name: str
    #: Its ``scheduling.sigs.k8s.io/queue`` label, if it has one.
    queue: str | None = None
    controller: ControllerRef | None = None


def read_native_workload(raw: Mapping[str, Any]) -> NativeWorkload:
    """The parts read; raises ``ValueError`` naming the field that cannot be read."""
    metadata = raw.get("metadata")
    if not isinstance(metadata, Mapping):
        raise ValueError("metadata is not an object")
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not isinstance(namespace, str) or not isinstance(name, str) or not name:
        raise ValueError("metadata.namespace and metadata.name must be strings")
    spec = raw.get("spec")
    ref = spec.get("controllerRef") if isinstance(spec, Mapping) else None
    controller = None
    if ref is not None:
        if not isinstance(ref, Mapping):
            raise ValueError("spec.controllerRef is not an object")
        api_group, kind, ref_name = ref.get("apiGroup", ""), ref.get("kind"), ref.get("name")
        if not isinstance(api_group, str) or not isinstance(kind, str) or not kind:
            raise ValueError("spec.controllerRef.apiGroup and .kind must be strings")
        if not isinstance(ref_name, str) or not ref_name:
            raise ValueError("spec.controllerRef.name must be a non-empty string")
        controller = ControllerRef(api_group, kind, ref_name)
    return NativeWorkload(namespace, name, queue_label(metadata), controller)
