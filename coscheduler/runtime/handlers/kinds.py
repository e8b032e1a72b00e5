"""Every kind coscheduler reads, in one table.

:func:`kinds` says, per kind: where it is read (a fixed collection path, or
API discovery at start: :mod:`coscheduler.runtime.discovery`), whether the
settings want it, its stage (a stage is applied whole before the next one),
what to do when the process may not read it or the API is not there yet,
and which handler of
:class:`~coscheduler.runtime.handlers.registry.Handlers` it feeds.
:mod:`coscheduler.runtime.ingest` runs the table. Adding a kind is one row
here and one small handler module (docs/design.md, "How to add a kind").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from coscheduler.api.adapters import apis
from coscheduler.api.adapters.apis import GroupApi
from coscheduler.core.preemption.mode import Mode as PreemptionMode
from coscheduler.runtime import discovery
from coscheduler.runtime.handlers.base import Handler
from coscheduler.runtime.handlers.registry import Handlers
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.settings import Settings

__all__ = ["Kind", "kinds"]


def _always(_: Settings) -> bool:
    return True


def _preempting(settings: Settings) -> bool:
    return settings.preemption is not PreemptionMode.OFF


@dataclass(frozen=True, slots=True)
class Kind:
    """One row of the table."""

    #: Names the watch task and the log lines.
    name: str
    #: The handler this kind feeds.
    handler: Handler
    #: Its collection path, when always served; else ``served`` asks discovery.
    path: str | None = None
    served: Callable[[KubeClient], Awaitable[str | None]] | None = None
    #: Whether these settings read it at all.
    wanted: Callable[[Settings], bool] = _always
    #: Stages are listed in order, each whole before the next starts.
    stage: int = 1
    #: The process may not list it (an older ClusterRole): run without it, logging this.
    if_forbidden: str | None = None
    #: The list answers 404 (a CRD not installed yet): none of it, logging this; tried again.
    if_missing: str | None = None

    async def where(self, client: KubeClient, settings: Settings) -> str | None:
        """The path to read with these settings, or None."""
        if not self.wanted(settings):
            return None
        return self.path if self.served is None else await self.served(client)


_RBAC = "apply manifests/rbac.yaml"


def _podgroups(api: GroupApi, handlers: Handlers) -> Kind:
    # Ours must be readable; an upgrade that kept an older ClusterRole may miss another.
    forbidden = "PodGroup API served but not readable by this ServiceAccount: its groups wait"
    native = api in apis.NATIVE
    if native:
        missing = "Kubernetes' PodGroup API is no longer served: pods naming one wait"
    else:
        missing = (
            "the PodGroup CRD is not installed: pods that name a group will wait; "
            "install it with kubectl apply -f crds/podgroups.yaml"
        )
    return Kind(
        f"podgroups.{api.group}/{api.version}" if native else f"podgroups.{api.group}",
        handlers.podgroups[api],
        served=discovery.podgroups(api),
        if_forbidden=None if api == apis.PODGROUPS[0] else f"{forbidden}; {_RBAC}",
        if_missing=missing,
    )


def _as_volcano(settings: Settings) -> bool:
    return settings.scheduler_name == apis.VOLCANO_SCHEDULER


def kinds(handlers: Handlers) -> tuple[Kind, ...]:
    """Every kind read, the one table (see the module docstring), feeding ``handlers``."""
    # The DRA kinds (``resource.k8s.io/v1``, served by default since Kubernetes 1.34).
    devices: tuple[tuple[str, Handler], ...] = (
        ("resourceslices", handlers.devices.slices),
        ("deviceclasses", handlers.devices.classes),
        ("resourceclaims", handlers.devices.claims),
        ("resourceclaimtemplates", handlers.devices.templates),
    )
    volumes: tuple[tuple[str, Handler, str], ...] = (
        ("persistentvolumeclaims", handlers.volumes.claims, "/api/v1"),
        ("persistentvolumes", handlers.volumes.volumes, "/api/v1"),
        ("storageclasses", handlers.volumes.storage_classes, "/apis/storage.k8s.io/v1"),
        ("csinodes", handlers.volumes.csinodes, "/apis/storage.k8s.io/v1"),
    )
    # The owners of plain pods Volcano's controller groups (``api/adapters/volcano_owners.py``).
    volcano_owners: tuple[tuple[str, Handler], ...] = (
        ("replicasets", handlers.replica_sets),
        ("statefulsets", handlers.stateful_sets),
    )
    return (
        # Jobs first of all: pods join their Job's gang from the first pod.
        Kind(
            "jobs",
            handlers.jobs,
            path="/apis/batch/v1/jobs",
            stage=0,
            if_forbidden="Jobs not readable by this ServiceAccount: Jobs annotated "
            "scheduling.sigs.k8s.io/gang get no PodGroup and their pods are placed one by one; "
            + _RBAC,
        ),
        # Under Volcano's name, a plain pod's ReplicaSet or StatefulSet may ask for a gang.
        *(
            Kind(
                plural,
                handler,
                path=f"/apis/apps/v1/{plural}",
                wanted=_as_volcano,
                stage=0,
                if_forbidden=f"{plural} not readable by this ServiceAccount: their pods are "
                "placed one by one, whatever scheduling.volcano.sh/group-min-member asks; " + _RBAC,
            )
            for plural, handler in volcano_owners
        ),
        Kind("nodes", handlers.nodes, path="/api/v1/nodes"),
        Kind("pods", handlers.pods, path="/api/v1/pods"),
        Kind("namespaces", handlers.namespaces, path="/api/v1/namespaces"),
        *(Kind(name, handler, path=f"{api}/{name}") for name, handler, api in volumes),
        *(
            Kind(
                name,
                handler,
                path=f"/apis/resource.k8s.io/v1/{name}",
                if_forbidden=f"{name} not readable by this ServiceAccount: pods with "
                f"resourceClaims wait; {_RBAC}",
                if_missing=f"resource.k8s.io/v1 {name} not served: pods with resourceClaims wait",
            )
            for name, handler in devices
        ),
        Kind(
            "priorityclasses",
            handlers.priority_classes,
            path="/apis/scheduling.k8s.io/v1/priorityclasses",
        ),
        Kind(
            "poddisruptionbudgets",
            handlers.budgets,
            path="/apis/policy/v1/poddisruptionbudgets",
            wanted=_preempting,
        ),
        Kind("queues", handlers.queues, served=discovery.queues),
        Kind(
            "queues.scheduling.volcano.sh",
            handlers.volcano_queues,
            served=discovery.volcano_queues,
            if_forbidden="Volcano's Queue API served but not readable by this ServiceAccount: "
            f"groups naming a Volcano queue wait with QueueNotFound; {_RBAC}",
            if_missing="Volcano's Queue API is no longer served: groups naming one of its "
            "queues wait",
        ),
        *(_podgroups(api, handlers) for api in apis.PODGROUPS),
        Kind(
            "workloads",
            handlers.workloads,
            served=discovery.workloads,
            if_forbidden="Workload API served but not readable by this ServiceAccount: pods "
            f"naming a Workload wait; {_RBAC}",
        ),
        Kind(
            "compositepodgroups",
            handlers.composites,
            served=discovery.composites,
            if_forbidden="CompositePodGroup API served but not readable by this ServiceAccount: "
            f"pods of PodGroups naming one wait; {_RBAC}",
            if_missing="the CompositePodGroup API is no longer served: pods of PodGroups naming "
            "one wait",
        ),
        Kind(
            "workloads.scheduling.k8s.io/native",
            handlers.native_workloads,
            served=discovery.native_workloads,
            if_forbidden="Workload API served but not readable by this ServiceAccount: a native "
            f"PodGroup does not take its Workload's queue label; {_RBAC}",
        ),
        Kind(
            "workloads.kueue.x-k8s.io",
            handlers.kueue_workloads,
            served=discovery.kueue_workloads,
            if_forbidden="Kueue's Workloads not readable by this ServiceAccount: the pods of jobs "
            f"Kueue admits wait; {_RBAC}",
            if_missing="Kueue's Workload CRD is no longer served: the pods of jobs Kueue admits "
            "wait",
        ),
    )
