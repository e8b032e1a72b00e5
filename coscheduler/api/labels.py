"""Label keys that tie a pod to its PodGroup and to a role within it.

A pod joins the group named by its ``scheduling.sigs.k8s.io/pod-group`` label,
in its own namespace. Users migrating from the scheduler-plugins coscheduler
(either of its generations) keep their labels: the aliases are read too, the
canonical key first. So do users of Volcano and T9k: Volcano's group
annotations and task, T9k's group and role labels are read after ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

#: The API group of PodGroup; also the prefix of our labels.
GROUP: Final = "scheduling.sigs.k8s.io"
VERSION: Final = "v1alpha1"
KIND: Final = "PodGroup"
PLURAL: Final = "podgroups"
#: Our Queue, in the same group and version.
QUEUE_KIND: Final = "Queue"
QUEUE_PLURAL: Final = "queues"

#: The canonical label naming a pod's PodGroup.
POD_GROUP_LABEL: Final = f"{GROUP}/pod-group"
#: Older spellings still read, in this order after the canonical one.
POD_GROUP_LABEL_ALIASES: Final = (
    "pod-group.scheduling.sigs.k8s.io",
    "scheduling.x-k8s.io/pod-group",
)
#: T9k's label naming a pod's group (``scheduler.tensorstack.dev``).
T9K_GROUP_LABEL: Final = "scheduler.tensorstack.dev/group-name"
#: Every key read for the group name, canonical first.
POD_GROUP_LABELS: Final = (POD_GROUP_LABEL, *POD_GROUP_LABEL_ALIASES, T9K_GROUP_LABEL)
#: Volcano names a pod's group in an annotation, not a label; read after the labels.
POD_GROUP_ANNOTATIONS: Final = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")

#: The label naming a pod's role within its group (see ``spec.roles``).
ROLE_LABEL: Final = f"{GROUP}/role"
#: T9k's role label; Volcano's task (an annotation, or a label), read in this order after ours.
T9K_ROLE_LABEL: Final = "scheduler.tensorstack.dev/role"
VOLCANO_TASK_KEY: Final = "volcano.sh/task-spec"
#: Volcano's annotation naming a pod's queue: the queue of a pod that is a gang of one
#: (a group's is its ``spec.queue``), and of the group made for a plain pod's owner.
VOLCANO_QUEUE_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"

#: PodGroup annotation: seconds the group must have run (whole) before it may
#: be preempted. An annotation, not a spec field, so that every PodGroup API
#: (and the scheduler-plugins CRD, which has no such field) can carry it.
MIN_RUN_SECONDS_ANNOTATION: Final = f"{GROUP}/min-run-seconds"

#: The default ``spec.schedulerName`` we schedule for.
DEFAULT_SCHEDULER_NAME: Final = "coscheduler"

#: The annotation a scheduler sets on a claim to ask the provisioner for a disk near a node.
SELECTED_NODE_ANNOTATION: Final = "volume.kubernetes.io/selected-node"


def _first(values: Mapping[str, str] | None, keys: tuple[str, ...]) -> str | None:
    # A plain loop: this runs several times per pod read.
    if values:
        for key in keys:
            value = values.get(key)
            if value:
                return value
    return None


def pod_group_name(
    labels: Mapping[str, str] | None, annotations: Mapping[str, str] | None = None
) -> str | None:
    """The name of the pod's PodGroup, or None for a pod that is a gang of one."""
    return _first(labels, POD_GROUP_LABELS) or _first(annotations, POD_GROUP_ANNOTATIONS)


def pod_role(
    labels: Mapping[str, str] | None, annotations: Mapping[str, str] | None = None
) -> str | None:
    """The pod's role within its group, or None when it has none."""
    return (
        _first(labels, (ROLE_LABEL, T9K_ROLE_LABEL))
        or _first(annotations, (VOLCANO_TASK_KEY,))
        or _first(labels, (VOLCANO_TASK_KEY,))
    )
