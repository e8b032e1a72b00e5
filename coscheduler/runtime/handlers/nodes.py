"""Nodes (``/api/v1/nodes``): the snapshot's nodes, their allocatable, labels and taints."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from coscheduler.api.node import NodeInfo, NodeParseError
from coscheduler.api.quantity import QuantityError
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import Complaints, InvalidObject, KeyedHandler, name_of

__all__ = ["NodeHandler"]

log = structlog.get_logger(__name__)


class NodeHandler(KeyedHandler[str]):
    """Each node read into a :class:`NodeInfo`; an unreadable one is taken out."""

    def __init__(self, scheduler: Scheduler, complaints: Complaints) -> None:
        self._scheduler = scheduler
        self._complaints = complaints
        self._names: set[str] = set()

    def upsert(self, raw: Mapping[str, Any]) -> str | None:
        try:
            node = NodeInfo.from_object(raw)
        except (NodeParseError, QuantityError) as error:
            invalid = InvalidObject.of("Node", raw, error)
            log.warning("node skipped", node=invalid.name, error=invalid.message)
            self._complaints.invalid(invalid)
            if invalid.name:
                self.forget(invalid.name)
            return None
        self._names.add(node.name)
        self._scheduler.upsert_node(node)
        return node.name

    def known(self) -> Iterable[str]:
        return self._names

    def forget(self, key: str) -> None:
        self._names.discard(key)
        self._scheduler.remove_node(key)

    def key_of(self, raw: Mapping[str, Any]) -> str | None:
        return name_of(raw)
