"""What a pod asks of a scheduler that coscheduler does not honour yet.

kube-scheduler honours every one of these fields; a pod placed as if they were
absent could land where it must not (a pod on a node its disk cannot be
attached to). The rule: a requirement we do not implement keeps the pod from
being placed, and its ``PodScheduled`` condition and event name the field.
Nothing is ignored in silence. (Every preference a pod can state is weighed.)

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
#: ephemeral) are honoured through their PersistentVolume (core.volumes), and
#: ``spec.resourceClaims`` (DRA) through the device allocator (core.devices).
_PLACED_VOLUME_SOURCES: Final = (
    "awsElasticBlockStore",
    "gcePersistentDisk",
    "azureDisk",
    "cinder",
    "iscsi",
    "rbd",
)


@dataclass(frozen=True, slots=True)
class Asks:
    """The unhonoured fields of one pod, each as a path a user can find in the pod."""

    #: Requirements: while any is present, the pod is not placed.
    unsupported: tuple[str, ...] = ()


#: A pod that asks for nothing we do not honour.
NO_ASKS: Final = Asks()


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(value: object) -> Sequence[Any]:
    return value if isinstance(value, list) else ()


def read_asks(spec: Mapping[str, Any]) -> Asks:
    """The unhonoured requirements of a pod's ``spec``."""
    unsupported: list[str] = []
    for index, item in enumerate(_items(spec.get("volumes"))):
        volume = _mapping(item)
        for source in _PLACED_VOLUME_SOURCES:
            if source in volume:
                unsupported.append(f"spec.volumes[{index}].{source}")
    return Asks(tuple(unsupported))
