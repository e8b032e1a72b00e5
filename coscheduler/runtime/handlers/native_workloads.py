"""Kubernetes' own Workloads of 1.36 and later (``scheduling.k8s.io`` v1beta1 / v1alpha2).

Their gangs are PodGroups (read by the PodGroup handler); of a Workload only
its queue label and its controller are read (:mod:`coscheduler.api.native_workload`)
and kept in :class:`~coscheduler.runtime.groups.Groups`, which gives them to
the native PodGroups that name the Workload.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from coscheduler.api.native_workload import read_native_workload
from coscheduler.runtime.groups import Groups
from coscheduler.runtime.handlers.base import Complaints, InvalidObject, KeyedHandler, meta

__all__ = ["NativeWorkloadHandler"]

log = structlog.get_logger(__name__)

WorkloadName = tuple[str, str]


class NativeWorkloadHandler(KeyedHandler[WorkloadName]):
    def __init__(
        self, groups: Groups, complaints: Complaints, *, namespaces: frozenset[str] = frozenset()
    ) -> None:
        self._groups = groups
        self._complaints = complaints
        self._namespaces = namespaces
        self._known: set[WorkloadName] = set()

    def upsert(self, raw: Mapping[str, Any]) -> WorkloadName | None:
        where = self.key_of(raw)
        if self._namespaces and where[0] not in self._namespaces:
            return None
        try:
            workload = read_native_workload(raw)
        except ValueError as error:
            log.warning("Workload skipped", workload="/".join(where), error=str(error))
            self._complaints.invalid(InvalidObject.of("Workload", raw, error))
            self.forget(where)
            return None
        self._known.add(where)
        self._groups.set_workload(*where, workload)
        return where

    def known(self) -> Iterable[WorkloadName]:
        return list(self._known)

    def forget(self, key: WorkloadName) -> None:
        self._known.discard(key)
        self._groups.set_workload(*key, None)

    def key_of(self, raw: Mapping[str, Any]) -> WorkloadName:
        fields = meta(raw)
        return (str(fields.get("namespace", "")), str(fields.get("name", "")))
