"""``coscheduler run``: the whole operator, wired together.

Start-up, in order, and why:

1. Connect to the API server and serve ``/metrics``, ``/healthz``, ``/readyz``
   at once, so probes answer while this replica waits for the Lease.
2. Campaign for the Lease (unless leader election is off). Everything below
   runs only while leading; losing the Lease ends the process, and a restart
   rebuilds all state from the API server.
3. List and watch nodes, pods, namespaces (their labels), PersistentVolumeClaims,
   PersistentVolumes, StorageClasses, CSINodes, PriorityClasses, Queues
   (when their CRD is installed) and PodDisruptionBudgets (unless preemption
   is off); ask
   discovery which PodGroup APIs are served (ours always, ``scheduling.x-k8s.io``
   when its CRD is installed) and list each once; likewise Kubernetes' own
   ``Workload`` API, in the one version this release reads (another version
   served is refused with a log line, never misread). Only
   when all are listed does the loop start, so that nothing is decided on a
   partial picture (a pod whose PodGroup was not listed yet would look
   orphaned). Bound pods count as placed, pending ones are queued: a gang
   half-bound by a previous leader is completed, never bound twice. Jobs are
   listed first of all, so that pods join their Job's gang from the first
   pod (a process that may not list Jobs says so and places their pods alone,
   as before groups by owner existed).
4. Start the scheduling loop, the status writers (PodGroups, Queues), the
   event recorder, the pod condition writer, the maker of Jobs' PodGroups,
   and Kopf with its PodGroup (and Workload) and Job watches.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import kopf
import structlog

from coscheduler.api.adapters import ADAPTERS, GroupAdapter, GroupApi, sigs
from coscheduler.api.adapters import workload as workload_api
from coscheduler.api.labels import GROUP, VERSION
from coscheduler.api.queue import PLURAL as QUEUE_PLURAL
from coscheduler.api.reasons import Reason
from coscheduler.controller.handlers import build_registry, kopf_settings
from coscheduler.controller.jobgroups import JobGroupMaker
from coscheduler.controller.queues import QueueStatusWriter
from coscheduler.controller.writer import ChangedGroups, StatusWriter
from coscheduler.core.group import GroupKey
from coscheduler.core.preemption import Mode as PreemptionMode
from coscheduler.core.preemption import PreemptionSettings
from coscheduler.core.queue import QueueSettings
from coscheduler.core.scheduler import Scheduler, SchedulerSettings
from coscheduler.runtime.binder import Binder
from coscheduler.runtime.cluster import ClusterState, InvalidObject
from coscheduler.runtime.errors import Forbidden, NotFound
from coscheduler.runtime.events import EventRecorder, ObjectRef
from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.leader import LeaderElector
from coscheduler.runtime.loop import SchedulingLoop
from coscheduler.runtime.metrics import Metrics
from coscheduler.runtime.podstatus import PodConditionWriter
from coscheduler.runtime.preemption import Preempter, group_ref
from coscheduler.runtime.serving import HealthServer
from coscheduler.runtime.settings import Settings
from coscheduler.runtime.volume_binder import VolumeBinder
from coscheduler.runtime.watch import Listed, Watch

__all__ = ["run"]

log = structlog.get_logger(__name__)

_PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
_DISRUPTION_BUDGETS = "/apis/policy/v1/poddisruptionbudgets"
QUEUES_PATH = f"/apis/{GROUP}/{VERSION}/{QUEUE_PLURAL}"
_STORAGE_CLASSES = "/apis/storage.k8s.io/v1/storageclasses"
_JOBS = "/apis/batch/v1/jobs"


@dataclasses.dataclass
class _Health:
    leading: bool = False
    synced: bool = False
    tasks: list[asyncio.Task[Any]] = dataclasses.field(default_factory=list)
    #: The task of ``run``; cancelling it shuts the whole process down cleanly.
    main: asyncio.Task[Any] | None = None

    def stop_process(self) -> None:
        if self.main is not None:
            self.main.cancel()

    def alive(self) -> bool:
        return not any(task.done() for task in self.tasks)

    def ready(self) -> bool:
        return self.synced or not self.leading


async def run(settings: Settings) -> None:
    """Run until cancelled, or until the Lease is lost (then raise)."""
    client = await KubeClient.connect(
        kubeconfig=settings.kubeconfig,
        qps=settings.client.qps,
        burst=settings.client.burst,
        timeout_seconds=settings.client.request_timeout_seconds,
        max_connections=settings.client.bind_concurrency + 16,
    )
    metrics = Metrics()
    health = _Health(main=asyncio.current_task())
    server = HealthServer(metrics, alive=health.alive, ready=health.ready)
    await server.start(settings.serving.address, settings.serving.port)
    log.info("serving", address=settings.serving.address, port=server.port)

    def on_leading(leading: bool) -> None:
        health.leading = leading
        metrics.leader.set(1 if leading else 0)

    try:
        if settings.leader_election.enabled:
            # A rate limit of its own, as kube-scheduler's leader-election client: behind
            # a burst of bindings in the shared FIFO limiter, renewals missed their
            # deadline and the leader lost the Lease (the fault soak showed it).
            elector = LeaderElector(
                client.sibling(), settings.leader_election, on_change=on_leading
            )
            await elector.run(lambda: _lead(settings, client, metrics, health))
        else:
            on_leading(True)
            await _lead(settings, client, metrics, health)
    finally:
        await server.stop()
        await client.close()


def _report_invalid(
    events: EventRecorder, pod_conditions: PodConditionWriter, obj: InvalidObject
) -> None:
    """An object that cannot be read gets a Warning event quoting what is wrong.

    A pod of ours that waits also says it on its ``PodScheduled`` condition,
    which outlives the event (events expire after an hour).
    """
    reason = Reason.FAILED_SCHEDULING if obj.kind == "Pod" else Reason.INVALID_OBJECT
    message = f"cannot be read: {obj.message}"
    events.record(_ref_of(obj), "Warning", reason, message)
    if obj.waiting:
        pod_conditions.explain(obj.uid, obj.namespace, obj.name, Reason.INVALID_OBJECT, message)


def _ref_of(obj: InvalidObject) -> ObjectRef:
    """Where an Event about an unreadable object goes (a Node's lands in ``default``)."""
    api_version = obj.api_version or "v1"
    return ObjectRef(api_version, obj.kind, obj.namespace or "default", obj.name, obj.uid)


async def _lead(settings: Settings, client: KubeClient, metrics: Metrics, health: _Health) -> None:
    scheduler = Scheduler(
        time.monotonic,
        SchedulerSettings(
            scheduler_name=settings.scheduler_name,
            strategy=settings.score_strategy,
            queue=QueueSettings(
                initial_backoff_seconds=settings.backoff.initial_seconds,
                max_backoff_seconds=settings.backoff.max_seconds,
                unschedulable_flush_seconds=settings.backoff.unschedulable_flush_seconds,
            ),
            preemption=PreemptionSettings(mode=settings.preemption),
        ),
    )
    scheduler.preemptions.wall_clock = time.time
    # Reporting has its own rate limit, so it never delays a binding, and its
    # writers stand back while bindings are in flight (the loop sets this).
    reporting = client.sibling()
    binds_idle = asyncio.Event()
    events = EventRecorder(
        reporting,
        interval_seconds=settings.event_interval_seconds,
        on_drop=metrics.events_dropped.inc,
        idle=binds_idle,
    )
    changed = ChangedGroups()

    def still_pending(uid: str) -> bool:
        return scheduler.is_waiting(uid) or state.unreadable_waiting(uid)

    pod_conditions = PodConditionWriter(reporting, still_pending=still_pending, idle=binds_idle)
    state = ClusterState(
        scheduler,
        namespaces=frozenset(settings.namespaces),
        on_group_changed=changed.mark,
        on_invalid=partial(_report_invalid, events, pod_conditions),
    )
    writer = StatusWriter(
        state=state, changed=changed, client=reporting, events=events, metrics=metrics
    )
    queue_writer = QueueStatusWriter(state=state, client=reporting, events=events, metrics=metrics)
    state.on_queue_changed = queue_writer.mark

    def group_changed(key: GroupKey) -> None:
        changed.mark(key)
        queue_writer.mark()

    state.on_group_changed = group_changed
    preempter = Preempter(
        scheduler=scheduler,
        client=client,
        reporting=reporting,
        events=events,
        metrics=metrics,
        group_ref=partial(group_ref, state),
        wake=lambda: loop.wake(),
        on_invalid=lambda kind, raw, error: _report_invalid(
            events, pod_conditions, InvalidObject.of(kind, raw, error)
        ),
    )
    loop = SchedulingLoop(
        state=state,
        binder=Binder(client, concurrency=settings.client.bind_concurrency),
        volume_binder=VolumeBinder(
            client,
            bound=scheduler.volumes.bound,
            timeout_seconds=settings.volume_bind_timeout_seconds,
        ),
        events=events,
        pod_conditions=pod_conditions,
        metrics=metrics,
        binds_idle=binds_idle,
        preempter=preempter,
    )
    namespaces = state.namespaces
    job_groups = JobGroupMaker(state=state, client=reporting, events=events)
    state.on_owner_changed = job_groups.mark
    jobs = await _list_jobs(client)
    if jobs is not None:
        state.owners_watched = True
        state.replace_jobs(jobs)

    watch_timeout = settings.client.watch_timeout_seconds
    feeds = {
        "nodes": (
            Watch(client, "/api/v1/nodes", timeout_seconds=watch_timeout),
            state.replace_nodes,
            state.upsert_node,
            state.remove_node,
        ),
        "pods": (
            Watch(client, "/api/v1/pods", timeout_seconds=watch_timeout),
            state.replace_pods,
            state.upsert_pod,
            state.remove_pod,
        ),
        "namespaces": (
            Watch(client, "/api/v1/namespaces", timeout_seconds=watch_timeout),
            state.replace_namespaces,
            state.upsert_namespace,
            state.remove_namespace,
        ),
        "persistentvolumeclaims": (
            Watch(client, "/api/v1/persistentvolumeclaims", timeout_seconds=watch_timeout),
            state.replace_claims,
            state.upsert_claim,
            state.remove_claim,
        ),
        "persistentvolumes": (
            Watch(client, "/api/v1/persistentvolumes", timeout_seconds=watch_timeout),
            state.replace_volumes,
            state.upsert_volume,
            state.remove_volume,
        ),
        "storageclasses": (
            Watch(client, _STORAGE_CLASSES, timeout_seconds=watch_timeout),
            state.replace_storage_classes,
            state.upsert_storage_class,
            state.remove_storage_class,
        ),
        "csinodes": (
            Watch(client, "/apis/storage.k8s.io/v1/csinodes", timeout_seconds=watch_timeout),
            state.replace_csinodes,
            state.upsert_csinode,
            state.remove_csinode,
        ),
        "priorityclasses": (
            Watch(client, _PRIORITY_CLASSES, timeout_seconds=watch_timeout),
            state.replace_priority_classes,
            state.set_priority_class,
            lambda o: state.set_priority_class(o, deleted=True),
        ),
    }
    if settings.preemption is not PreemptionMode.OFF:
        feeds["poddisruptionbudgets"] = (
            Watch(client, _DISRUPTION_BUDGETS, timeout_seconds=watch_timeout),
            preempter.replace_budgets,
            preempter.upsert_budget,
            preempter.remove_budget,
        )
    if await _queues_served(client):
        feeds["queues"] = (
            Watch(client, QUEUES_PATH, timeout_seconds=watch_timeout),
            state.replace_queues,
            state.upsert_queue,
            state.remove_queue,
        )
    listed = {name: asyncio.Event() for name in feeds}
    async with asyncio.TaskGroup() as tasks:
        for name, (watch, replace, upsert, remove) in feeds.items():
            health.tasks.append(
                tasks.create_task(
                    _feed(watch, replace, upsert, remove, listed[name], loop.wake),
                    name=f"watch-{name}",
                )
            )
        await asyncio.gather(*(event.wait() for event in listed.values()))
        adapters = []
        for adapter in await _served(client):
            try:
                listed_groups = await _list_podgroups(client, adapter)
            except Forbidden:
                if adapter is sigs.ADAPTER:
                    raise
                # An upgrade that kept an older ClusterRole: schedule the rest.
                log.error(
                    "PodGroup API served but not readable by this ServiceAccount: "
                    "its groups wait; apply manifests/rbac.yaml",
                    api=str(adapter.api),
                )
                continue
            state.replace_podgroups(listed_groups, adapter)
            adapters.append(adapter)
        workloads = await _workload_api(client)
        if workloads is not None:
            try:
                state.replace_workloads(await _list(client, workloads.collection_path))
            except Forbidden:
                log.error(
                    "Workload API served but not readable by this ServiceAccount: pods "
                    "naming a Workload wait; apply manifests/rbac.yaml",
                    api=str(workloads),
                )
                workloads = None
        log.info(
            "cluster listed",
            podgroup_apis=[str(adapter.api) for adapter in adapters],
            workload_api=str(workloads) if workloads else None,
            nodes=sum(1 for _ in scheduler.snapshot.nodes()),
            podgroups=len(state.podgroups),
            queued=len(scheduler.queue),
        )
        registry = build_registry(
            state=state,
            client=client,
            on_podgroup_changed=loop.wake,
            adapters=adapters,
            watch_jobs=state.owners_watched,
            workloads=workloads,
        )
        kopf_namespaces: dict[str, Any] = (
            {"namespaces": list(namespaces)} if namespaces else {"clusterwide": True}
        )
        for name, coroutine in {
            "scheduling-loop": loop.run(),
            "status-writer": writer.run(),
            "queue-status-writer": queue_writer.run(),
            "events": events.run(),
            "pod-conditions": pod_conditions.run(),
            "job-podgroups": job_groups.run(),
            "kopf": _run_kopf(
                registry=registry,
                settings=kopf_settings(watch_timeout_seconds=watch_timeout),
                namespaces=kopf_namespaces,
                on_signal=health.stop_process,
            ),
        }.items():
            health.tasks.append(tasks.create_task(coroutine, name=name))
        writer.mark_all()
        health.synced = True
        log.info("scheduling", scheduler_name=settings.scheduler_name)


async def _run_kopf(
    *,
    registry: kopf.OperatorRegistry,
    settings: kopf.OperatorSettings,
    namespaces: dict[str, Any],
    on_signal: Callable[[], None],
) -> None:
    """Kopf's operator, which also takes over SIGTERM and SIGINT.

    Kopf installs its own signal handlers (replacing the CLI's) and returns
    when it receives one: that is the process being asked to stop, so stop
    everything, releasing the Lease on the way out.
    """
    await kopf.operator(registry=registry, settings=settings, standalone=True, **namespaces)
    log.info("stopping on a signal")
    on_signal()


async def _served(client: KubeClient) -> list[GroupAdapter]:
    """Our PodGroup API, and each other one the API server serves now (asked once, at start).

    Ours is always read: without its CRD, Kopf waits for it and the log says
    how to install it. Another API is read only when discovery lists its
    PodGroups, so a cluster without it runs exactly as before.
    """
    served: list[GroupAdapter] = [sigs.ADAPTER]
    for adapter in ADAPTERS:
        if adapter is sigs.ADAPTER:
            continue
        api = adapter.api
        try:
            resources = await client.call("GET", api.discovery_path)
        except NotFound:
            log.info("PodGroup API not served; its groups are not read", api=str(api))
            continue
        if any(r.get("name") == api.plural for r in resources.get("resources") or ()):
            log.info("PodGroup API served; its groups are scheduled too", api=str(api))
            served.append(adapter)
    return served


async def _workload_api(client: KubeClient) -> GroupApi | None:
    """Kubernetes' Workload API, if discovery lists it in the version read (asked once, at start).

    Its shape changes with each release, so a version other than the one
    this release reads is refused, loudly, rather than read as if it were.
    """
    group = workload_api.GROUP
    try:
        versions = (await client.call("GET", f"/apis/{group}")).get("versions") or ()
    except NotFound:
        versions = ()
    served = []
    for entry in versions:
        version = str(entry.get("version", ""))
        try:
            resources = await client.call("GET", f"/apis/{group}/{version}")
        except NotFound:
            continue
        if any(r.get("name") == workload_api.PLURAL for r in resources.get("resources") or ()):
            served.append(version)
    api, refused = workload_api.choose_version(served)
    if api is not None:
        log.info("Workload API served; its gangs are scheduled too", api=str(api))
        if refused:
            log.info("Workload API also served in versions not read", versions=refused)
    elif refused:
        log.error(
            "Workload API served only in versions this release does not read: pods naming "
            f"a Workload wait; it reads {workload_api.API.api_version} (Kubernetes 1.35)",
            versions=refused,
        )
    else:
        log.info(
            "Workload API not served; pods' spec.workloadRef is not read",
            api=str(workload_api.API),
        )
    return api


async def _list(client: KubeClient, path: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await client.call("GET", path)).get("items") or []
    return items


async def _queues_served(client: KubeClient) -> bool:
    """Whether the Queue CRD is installed (asked once, at start).

    Without it every group uses the implicit ``default`` queue, and a group
    naming another queue waits with ``QueueNotFound``.
    """
    try:
        resources = await client.call("GET", f"/apis/{GROUP}/{VERSION}")
    except NotFound:
        resources = {}
    if any(r.get("name") == QUEUE_PLURAL for r in resources.get("resources") or ()):
        return True
    log.warning(
        "the Queue CRD is not installed: every group uses the default queue; "
        "install it with kubectl apply -f crds/queues.yaml"
    )
    return False


async def _list_jobs(client: KubeClient) -> list[dict[str, Any]] | None:
    """Every Job, or None when this ServiceAccount may not list them (an older ClusterRole)."""
    try:
        answer = await client.call("GET", _JOBS)
    except Forbidden:
        log.error(
            "Jobs not readable by this ServiceAccount: Jobs annotated "
            "scheduling.sigs.k8s.io/gang get no PodGroup and their pods are placed one by one; "
            "apply manifests/rbac.yaml"
        )
        return None
    items: list[dict[str, Any]] = answer.get("items") or []
    return items


async def _list_podgroups(client: KubeClient, adapter: GroupAdapter) -> list[dict[str, Any]]:
    try:
        answer = await client.call("GET", adapter.api.collection_path)
    except NotFound:
        log.error(
            "the PodGroup CRD is not installed: pods that name a group will wait; "
            "install it with kubectl apply -f crds/podgroups.yaml",
            api=str(adapter.api),
        )
        return []
    items: list[dict[str, Any]] = answer.get("items") or []
    return items


async def _feed(
    watch: Watch,
    replace: Callable[[list[dict[str, Any]]], object],
    upsert: Callable[[dict[str, Any]], object],
    remove: Callable[[dict[str, Any]], object],
    listed: asyncio.Event,
    wake: Callable[[], None],
) -> None:
    async for item in watch:
        if isinstance(item, Listed):
            replace(item.objects)
            listed.set()
        elif item.type == "DELETED":
            remove(item.object)
        else:
            upsert(item.object)
        wake()
