"""What a pod asks of a scheduler that coscheduler does not honour yet.

kube-scheduler honours every one of these fields; a pod placed as if they were
absent could land where it must not (two "one per node" workers on one node,
a pod on a node its local volume cannot reach). The rule: a *requirement* we
do not implement keeps the pod from being placed, and its ``PodScheduled``
condition and event name the field; a *preference* we do not score yet is
placed without it, and the ``Scheduled`` event names what was not weighed.
Nothing is ignored in silence.

A field leaves these lists when the core learns to honour it. The README's
"Pod fields" table lists them for users.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["NO_ASKS", "Asks", "read_asks"]

#: Inline (in-tree) disks whose placement kube-scheduler's volume plugins
#: judge (attach limits, one writer per disk, zones). Claims (persistentVolumeClaim,
#: ephemeral) are honoured through their PersistentVolume (core.volumes).
_PLACED_VOLUME_SOURCES: Final = (
    "awsElasticBlockStore",
    "gcePersistentDisk",
    "azureDisk",
    "cinder",
    "iscsi",
    "rbd",
)
_REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class Asks:
    """The unhonoured fields of one pod, each as a path a user can find in the pod."""

    #: Requirements: while any is present, the pod is not placed.
    unsupported: tuple[str, ...] = ()
    #: Preferences placed without being weighed.
    unscored: tuple[str, ...] = ()


#: A pod that asks for nothing we do not honour.
NO_ASKS: Final = Asks()


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(value: object) -> Sequence[Any]:
    return value if isinstance(value, list) else ()


def read_asks(spec: Mapping[str, Any]) -> Asks:
    """The unhonoured requirements and preferences of a pod's ``spec``."""
    unsupported: list[str] = []
    unscored: list[str] = []
    affinity = _mapping(spec.get("affinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = _mapping(affinity.get(kind))
        if _items(terms.get(_PREFERRED)):
            unscored.append(f"spec.affinity.{kind}.{_PREFERRED}")
    if _items(_mapping(affinity.get("nodeAffinity")).get(_PREFERRED)):
        unscored.append(f"spec.affinity.nodeAffinity.{_PREFERRED}")
    for index, item in enumerate(_items(spec.get("topologySpreadConstraints"))):
        if _mapping(item).get("whenUnsatisfiable") == "ScheduleAnyway":
            unscored.append(f"spec.topologySpreadConstraints[{index}]")
    for index, item in enumerate(_items(spec.get("volumes"))):
        volume = _mapping(item)
        for source in _PLACED_VOLUME_SOURCES:
            if source in volume:
                unsupported.append(f"spec.volumes[{index}].{source}")
    if _items(spec.get("resourceClaims")):
        unsupported.append("spec.resourceClaims")
    return Asks(tuple(unsupported), tuple(unscored))
