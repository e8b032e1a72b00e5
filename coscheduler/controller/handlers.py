"""The Kopf side: the PodGroup watches (one per API served), the Job watch, how Kopf logs in.

Kubernetes' own Workloads (``scheduling.k8s.io``), when read, have a watch
of their own here too, feeding the same state.

Kopf watches PodGroups (list, watch, resume, relist: its watcher is robust)
and hands every event to :func:`build_registry`'s handler, which feeds the
shared :class:`~coscheduler.runtime.cluster.ClusterState`. The scheduling
loop and the status writer both read from there, so there is one watch per
PodGroup API in the process.

Only a low-level ``on.event`` handler is registered, on purpose: Kopf's
change handlers (create/update/resume) record their progress in annotations,
and its daemons and timers put a finalizer on every object. A finalizer
would block ``kubectl delete podgroup`` whenever coscheduler is not running;
nothing here needs one, since a PodGroup's deletion requires no clean-up.

Kopf runs only while this replica holds the Lease (see ``coscheduler.app``),
so it needs no peering of its own.

Jobs are watched the same way, when the process may list them: every Job
(not only annotated ones), since a pod is placed alone only once its Job is
known to ask for no gang (:mod:`coscheduler.core.owners`). The PodGroups the
annotated ones ask for are made by :mod:`coscheduler.controller.jobgroups`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import kopf

from coscheduler.api.adapters import GroupAdapter, GroupApi
from coscheduler.runtime.cluster import ClusterState
from coscheduler.runtime.kube import KubeClient

__all__ = ["build_registry", "kopf_settings"]


def kopf_settings(*, watch_timeout_seconds: int) -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    # Our own EventRecorder writes the events a person needs; Kopf's would
    # repeat its log lines as events.
    settings.posting.enabled = False
    settings.watching.server_timeout = watch_timeout_seconds
    settings.watching.client_timeout = watch_timeout_seconds + 30
    settings.watching.connect_timeout = 30
    settings.networking.request_timeout = 60
    # No change handlers: nothing is persisted, but keep Kopf's own marks out
    # of our status (whose schema would prune them anyway).
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage()
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage()
    return settings


def _podgroup_handler(
    state: ClusterState, adapter: GroupAdapter, on_podgroup_changed: Callable[[], None]
) -> Callable[..., Awaitable[None]]:
    """The handler of one API's PodGroup events: each is read through its adapter."""

    async def podgroup_event(event: kopf.RawEvent, **_: Any) -> None:
        body = event["object"]
        if event["type"] == "DELETED":
            state.remove_podgroup(body, adapter)
        else:
            state.upsert_podgroup(body, adapter)
        on_podgroup_changed()

    return podgroup_event


def _job_handler(
    state: ClusterState, on_job_changed: Callable[[], None]
) -> Callable[..., Awaitable[None]]:
    async def job_event(event: kopf.RawEvent, **_: Any) -> None:
        body = event["object"]
        if event["type"] == "DELETED":
            state.remove_job(body)
        else:
            state.upsert_job(body)
        on_job_changed()

    return job_event


def _workload_handler(
    state: ClusterState, on_changed: Callable[[], None]
) -> Callable[..., Awaitable[None]]:
    async def workload_event(event: kopf.RawEvent, **_: Any) -> None:
        body = event["object"]
        if event["type"] == "DELETED":
            state.remove_workload(body)
        else:
            state.upsert_workload(body)
        on_changed()

    return workload_event


async def _connection_info(client: KubeClient) -> kopf.ConnectionInfo:
    """Kopf logs in with the very credentials the rest of the process uses."""
    config = client.api_client.configuration
    header = await config.get_api_key_with_prefix("BearerToken")
    scheme, token = None, None
    if header:
        parts = str(header).split(" ", 1)
        scheme, token = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])
    return kopf.ConnectionInfo(
        server=str(config.host),
        ca_path=config.ssl_ca_cert,
        insecure=not config.verify_ssl,
        scheme=scheme,
        token=token,
        certificate_path=config.cert_file,
        private_key_path=config.key_file,
    )


def build_registry(
    *,
    state: ClusterState,
    client: KubeClient,
    on_podgroup_changed: Callable[[], None],
    adapters: Sequence[GroupAdapter],
    watch_jobs: bool = False,
    workloads: GroupApi | None = None,
) -> kopf.OperatorRegistry:
    """A Kopf registry: a handler per PodGroup API served (and Jobs', Workloads'), feeding state."""
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    async def login(**_: Any) -> kopf.ConnectionInfo:
        return await _connection_info(client)

    del login  # registered; the name is not used
    for adapter in adapters:
        api = adapter.api
        kopf.on.event(
            api.group, api.version, api.plural, id=f"podgroups-{api.group}", registry=registry
        )(_podgroup_handler(state, adapter, on_podgroup_changed))
    if watch_jobs:
        kopf.on.event("batch", "v1", "jobs", id="jobs", registry=registry)(
            _job_handler(state, on_podgroup_changed)
        )
    if workloads is not None:
        kopf.on.event(
            workloads.group,
            workloads.version,
            workloads.plural,
            id=f"workloads-{workloads.group}",
            registry=registry,
        )(_workload_handler(state, on_podgroup_changed))
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    return registry
