"""Where each group API coscheduler reads is served: names only, no models.

The table of kinds (:func:`coscheduler.runtime.handlers.kinds.kinds`) and
discovery (:mod:`coscheduler.runtime.discovery`) take their paths and
versions from here; each model module takes its API's names from here too
(so this module imports no model). The table of adapters
(:data:`coscheduler.api.adapters.table.ADAPTERS`) pairs each PodGroup API of
:data:`PODGROUPS` with the adapter that reads it, in the same order (checked
when it is imported); each adapter's module takes its ``API`` from here.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

from coscheduler.api import labels

__all__ = [
    "COMPOSITE",
    "KUEUE_WORKLOAD",
    "NATIVE",
    "NATIVE_GROUP",
    "NATIVE_VERSIONS",
    "PODGROUPS",
    "SIGS",
    "T9K",
    "T9K_SCHEDULER",
    "VOLCANO",
    "VOLCANO_SCHEDULER",
    "WORKLOAD",
    "WORKLOAD_PLURAL",
    "XK8S",
    "GroupApi",
    "choose_workload_version",
]


@dataclass(frozen=True, slots=True)
class GroupApi:
    """Where PodGroups of one shape are served."""

    group: str
    version: str
    kind: str = "PodGroup"
    plural: str = "podgroups"
    #: Whether the CRD has a ``/status`` subresource; without one (Volcano's), the
    #: status is written by a merge patch of the object itself.
    status_subresource: bool = True
    #: The ``schedulerName`` of the scheduler this API belongs to, if it has one:
    #: running under that name, we stand in for it, and write the status of its
    #: groups that have no pods yet (operators wait for it before making them).
    home_scheduler: str | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def discovery_path(self) -> str:
        """The group-version's resource list, answered only while the API is served."""
        return f"/apis/{self.group}/{self.version}"

    @property
    def collection_path(self) -> str:
        """Every object of the kind, in all namespaces."""
        return f"/apis/{self.group}/{self.version}/{self.plural}"

    def status_path(self, namespace: str, name: str) -> str:
        path = f"/apis/{self.group}/{self.version}/namespaces/{namespace}/{self.plural}/{name}"
        return f"{path}/status" if self.status_subresource else path

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}/{self.version}"


#: Ours, ``scheduling.sigs.k8s.io/v1alpha1``.
SIGS: Final = GroupApi(labels.GROUP, labels.VERSION, labels.KIND, labels.PLURAL)
#: scheduler-plugins' PodGroup (Kubeflow's and Spark's operators make these).
XK8S: Final = GroupApi("scheduling.x-k8s.io", "v1alpha1")
#: Volcano's scheduler answers to ``volcano``: run under that name, we stand in for it.
VOLCANO_SCHEDULER: Final = "volcano"
#: Volcano's CRD has no ``/status`` subresource: its status is merge-patched on the object.
VOLCANO: Final = GroupApi(
    "scheduling.volcano.sh", "v1beta1", status_subresource=False, home_scheduler=VOLCANO_SCHEDULER
)
#: T9k's scheduler answers to ``t9k-scheduler``: run under that name, we stand in for it.
T9K_SCHEDULER: Final = "t9k-scheduler"
T9K: Final = GroupApi("scheduler.tensorstack.dev", "v1beta1", home_scheduler=T9K_SCHEDULER)

#: Kubernetes' own group (its PodGroup, Workload and CompositePodGroup).
NATIVE_GROUP: Final = "scheduling.k8s.io"
#: The versions of Kubernetes' own PodGroup read, newest first: discovery takes the
#: first one served (1.37's v1beta1, 1.36's v1alpha2).
NATIVE_VERSIONS: Final = ("v1beta1", "v1alpha2")
NATIVE: Final = tuple(GroupApi(NATIVE_GROUP, version) for version in NATIVE_VERSIONS)

#: Every PodGroup API, in order of precedence (see :mod:`coscheduler.api.adapters`).
PODGROUPS: Final[tuple[GroupApi, ...]] = (SIGS, XK8S, VOLCANO, T9K, *NATIVE)

#: Kubernetes' CompositePodGroup (1.37).
COMPOSITE: Final = GroupApi(NATIVE_GROUP, "v1alpha3", "CompositePodGroup", "compositepodgroups")

#: Kubernetes' Workload, in every version (1.35's gangs; 1.36's and 1.37's name its PodGroups).
WORKLOAD_PLURAL: Final = "workloads"
#: The one version whose Workloads hold gangs read as such: Kubernetes 1.35's.
WORKLOAD: Final = GroupApi(NATIVE_GROUP, "v1alpha1", "Workload", WORKLOAD_PLURAL)


#: Kueue's Workload (v0.17's storage version): a job Kueue admitted, placed as one gang.
KUEUE_WORKLOAD: Final = GroupApi("kueue.x-k8s.io", "v1beta2", "Workload", WORKLOAD_PLURAL)


def choose_workload_version(served: Collection[str]) -> tuple[GroupApi | None, list[str]]:
    """Which version of the Workload API to read, from the versions discovery lists it in.

    Returns the API to read (None when v1alpha1 is not served) and the versions
    served that are not read, for a log line that says so.
    """
    refused = sorted(version for version in served if version != WORKLOAD.version)
    return (WORKLOAD if WORKLOAD.version in served else None), refused
