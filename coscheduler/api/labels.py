"""Label keys that tie a pod to its PodGroup and to a role within it.

A pod joins the group named by its ``scheduling.sigs.k8s.io/pod-group`` label,
in its own namespace. Users migrating from the scheduler-plugins coscheduler
(either of its generations) keep their labels: the aliases are read too, the
canonical key first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

#: The API group of PodGroup; also the prefix of our labels.
GROUP: Final = "scheduling.sigs.k8s.io"
VERSION: Final = "v1alpha1"
KIND: Final = "PodGroup"
PLURAL: Final = "podgroups"

#: The canonical label naming a pod's PodGroup.
POD_GROUP_LABEL: Final = f"{GROUP}/pod-group"
#: Older spellings still read, in this order after the canonical one.
POD_GROUP_LABEL_ALIASES: Final = (
    "pod-group.scheduling.sigs.k8s.io",
    "scheduling.x-k8s.io/pod-group",
)
#: Every key read for the group name, canonical first.
POD_GROUP_LABELS: Final = (POD_GROUP_LABEL, *POD_GROUP_LABEL_ALIASES)

#: The label naming a pod's role within its group (see ``spec.roles``).
ROLE_LABEL: Final = f"{GROUP}/role"

#: PodGroup annotation: seconds the group must have run (whole) before it may
#: be preempted. An annotation, not a spec field, so that every PodGroup API
#: (and the scheduler-plugins CRD, which has no such field) can carry it.
MIN_RUN_SECONDS_ANNOTATION: Final = f"{GROUP}/min-run-seconds"

#: The default ``spec.schedulerName`` we schedule for.
DEFAULT_SCHEDULER_NAME: Final = "coscheduler"


def pod_group_name(labels: Mapping[str, str] | None) -> str | None:
    """The name of the pod's PodGroup, or None for a pod that is a gang of one."""
    if not labels:
        return None
    for key in POD_GROUP_LABELS:
        name = labels.get(key)
        if name:
            return name
    return None


def pod_role(labels: Mapping[str, str] | None) -> str | None:
    """The pod's role within its group, or None when it has none."""
    if not labels:
        return None
    return labels.get(ROLE_LABEL) or None
