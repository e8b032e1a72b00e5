"""Which optional APIs the API server serves, asked once at start (API discovery).

Each answer is the collection path to read, or None: a kind not served is
not read, and the process runs as it would without it, saying so in one log
line. Asked concurrently (see :mod:`coscheduler.runtime.ingest`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog

from coscheduler.api.adapters import apis
from coscheduler.api.adapters.apis import GroupApi
from coscheduler.api.adapters.base import GroupAdapter
from coscheduler.api.adapters.table import ADAPTERS
from coscheduler.api.labels import GROUP, QUEUE_PLURAL, VERSION
from coscheduler.runtime.errors import NotFound
from coscheduler.runtime.kube import KubeClient

__all__ = [
    "kueue_workloads",
    "native_workloads",
    "podgroups",
    "queues",
    "served_podgroup_apis",
    "volcano_queues",
    "workload_api_served",
    "workloads",
]

log = structlog.get_logger(__name__)

#: A discovery question: the collection path to read, or None when not served.
Served = Callable[[KubeClient], Awaitable[str | None]]

QUEUES_PATH = f"/apis/{GROUP}/{VERSION}/{QUEUE_PLURAL}"


async def _lists(client: KubeClient, group_version_path: str, plural: str) -> bool:
    try:
        resources = await client.call("GET", group_version_path)
    except NotFound:
        return False
    return any(r.get("name") == plural for r in resources.get("resources") or ())


def podgroups(api: GroupApi) -> Served:
    """Whether to read one PodGroup API: ours always, another when discovery lists it.

    Ours is always read: without its CRD, its watch retries and the log says
    how to install it. Another API is read only when discovery lists its
    PodGroups, so a cluster without it runs exactly as before.
    """

    async def served(client: KubeClient) -> str | None:
        if api == apis.SIGS:
            return api.collection_path
        if api in apis.NATIVE:
            return await _native_podgroups(client, api)
        if await _lists(client, api.discovery_path, api.plural):
            log.info("PodGroup API served; its groups are scheduled too", api=str(api))
            return api.collection_path
        log.info("PodGroup API not served; its groups are not read", api=str(api))
        return None

    return served


async def _native_podgroups(client: KubeClient, read: GroupApi) -> str | None:
    """Kubernetes' own PodGroups are read in one version: the newest served.

    Its shape changes between versions (1.36's v1alpha2, 1.37's v1beta1), so
    the newest this release reads is taken and the others are left alone.
    """
    for api in apis.NATIVE:
        if await _lists(client, api.discovery_path, api.plural):
            if api == read:
                log.info(
                    "Kubernetes' PodGroup API served; its groups are scheduled too", api=str(api)
                )
                return api.collection_path
            return None  # a newer version is read
    if read == apis.NATIVE[-1]:
        log.info(
            "Kubernetes' PodGroup API not served; pods' spec.schedulingGroup names a group "
            "that waits",
            versions=[api.api_version for api in apis.NATIVE],
        )
    return None


async def native_workloads(client: KubeClient) -> str | None:
    """Kubernetes' own Workloads in the version its PodGroups are read in (1.36 and later):
    a native PodGroup takes its queue and its controller from the Workload it names."""
    for api in apis.NATIVE:
        if await _lists(client, api.discovery_path, api.plural):
            if await _lists(client, api.discovery_path, apis.WORKLOAD_PLURAL):
                return f"/apis/{api.group}/{api.version}/{apis.WORKLOAD_PLURAL}"
            return None
    return None


async def served_podgroup_apis(client: KubeClient) -> list[GroupAdapter]:
    """The PodGroup APIs read, in order of precedence."""
    return [adapter for adapter in ADAPTERS if await podgroups(adapter.api)(client) is not None]


async def workload_api_served(client: KubeClient) -> GroupApi | None:
    """Kubernetes' Workload API, if discovery lists it in the version read.

    Its shape changes with each release, so a version other than the one
    this release reads is refused, loudly, rather than read as if it were.
    """
    group = apis.WORKLOAD.group
    try:
        versions = (await client.call("GET", f"/apis/{group}")).get("versions") or ()
    except NotFound:
        versions = ()
    served = []
    for entry in versions:
        version = str(entry.get("version", ""))
        if await _lists(client, f"/apis/{group}/{version}", apis.WORKLOAD.plural):
            served.append(version)
    api, refused = apis.choose_workload_version(served)
    if api is not None:
        log.info("Workload API served; its gangs are scheduled too", api=str(api))
        if refused:
            log.info("Workload API also served in versions not read", versions=refused)
    elif refused and any(version in refused for version in native_versions()):
        log.info(
            "Workload API served in a later version: its gangs are PodGroups, read as such; "
            "1.35's spec.workloadRef is not read",
            versions=refused,
        )
    elif refused:
        log.error(
            "Workload API served only in versions this release does not read: pods naming "
            f"a Workload wait; it reads {apis.WORKLOAD.api_version} (Kubernetes 1.35)",
            versions=refused,
        )
    else:
        log.info(
            "Workload API not served; pods' spec.workloadRef is not read",
            api=str(apis.WORKLOAD),
        )
    return api


def native_versions() -> tuple[str, ...]:
    """The versions of Kubernetes' own PodGroup this release reads."""
    return apis.NATIVE_VERSIONS


async def workloads(client: KubeClient) -> str | None:
    api = await workload_api_served(client)
    return None if api is None else api.collection_path


async def composites(client: KubeClient) -> str | None:
    """Kubernetes' CompositePodGroup (1.37, ``v1alpha3``), when discovery lists it.

    Without it a PodGroup naming a parent composite waits for it
    (``GroupNotFound``, the message naming the composite).
    """
    api = apis.COMPOSITE
    if await _lists(client, api.discovery_path, api.plural):
        log.info("CompositePodGroup API served; its gangs are scheduled too", api=str(api))
        return api.collection_path
    log.info("CompositePodGroup API not served", api=str(api))
    return None


async def kueue_workloads(client: KubeClient) -> str | None:
    """Kueue's Workloads (``kueue.x-k8s.io/v1beta2``, Kueue v0.17), when discovery lists them:
    the jobs Kueue admits are placed as gangs."""
    api = apis.KUEUE_WORKLOAD
    if await _lists(client, api.discovery_path, api.plural):
        log.info("Kueue's Workload API served; the jobs it admits are placed whole", api=str(api))
        return api.collection_path
    return None


async def queues(client: KubeClient) -> str | None:
    """Whether the Queue CRD is installed.

    Without it every group uses the implicit ``default`` queue, and a group
    naming another queue waits with ``QueueNotFound``.
    """
    if await _lists(client, f"/apis/{GROUP}/{VERSION}", QUEUE_PLURAL):
        return QUEUES_PATH
    log.warning(
        "the Queue CRD is not installed: every group uses the default queue; "
        "install it with kubectl apply -f crds/queues.yaml"
    )
    return None


async def volcano_queues(client: KubeClient) -> str | None:
    """Volcano's Queue (``scheduling.volcano.sh/v1beta1``), when discovery lists it: read
    as ours (:mod:`coscheduler.api.adapters.volcano_queue`)."""
    api = apis.VOLCANO
    if await _lists(client, api.discovery_path, "queues"):
        log.info("Volcano's Queue API served; its queues are read as ours", api=str(api))
        return f"{api.discovery_path}/queues"
    return None
