"""PodDisruptionBudgets (``policy/v1``), as preemption reads them.

A budget protects the pods its selector picks in its namespace: at most
``status.disruptionsAllowed`` of them may be evicted now. The Eviction API
enforces it pod by pod; a gang scheduler must judge a victim group as a
whole *before* its first eviction, or it would stop halfway and leave a
broken gang.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from coscheduler.api.fields import FieldReader, ObjectParseError
from coscheduler.api.pod_topology import LabelSelector, read_label_selector

__all__ = ["DisruptionBudget", "DisruptionBudgetParseError"]


class DisruptionBudgetParseError(ObjectParseError):
    """A PodDisruptionBudget that cannot be read."""

    kind = "PodDisruptionBudget"


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """How many of the pods it selects may be evicted now.

    ``selector`` None (the API's null selector) selects no pod; an empty one,
    every pod of the namespace.
    """

    namespace: str
    name: str
    selector: LabelSelector | None
    allowed: int

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def covers(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return (
            self.selector is not None
            and namespace == self.namespace
            and self.selector.matches(labels)
        )

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> DisruptionBudget:
        meta = raw.get("metadata") if isinstance(raw, Mapping) else None
        meta = meta if isinstance(meta, Mapping) else {}
        namespace = str(meta.get("namespace") or "default")
        name = str(meta.get("name") or "<unnamed>")
        reader = FieldReader(partial(DisruptionBudgetParseError, f"{namespace}/{name}"))
        spec = reader.mapping(raw.get("spec"), "spec")
        status = reader.mapping(raw.get("status"), "status")
        return cls(
            namespace=namespace,
            name=name,
            selector=read_label_selector(reader, spec.get("selector"), "spec.selector"),
            allowed=reader.integer(status.get("disruptionsAllowed"), "status.disruptionsAllowed"),
        )
