"""A scheduler fed by hand through its real handlers, for tests without an API server.

Tests drive the handlers as the watch would (``state.handlers.pods.upsert(raw)``);
complaints are collected instead of reported.
"""

from __future__ import annotations

from collections.abc import Callable

from coscheduler.api.adapters.base import GroupAdapter
from coscheduler.api.adapters.table import ADAPTERS
from coscheduler.api.owners import GangOwner
from coscheduler.core.group import GroupKey
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import InvalidObject
from coscheduler.runtime.handlers.registry import Handlers


class Complaints:
    """What a reporter would be told: unreadable objects, and which unreadable pods wait."""

    def __init__(self, on_invalid: Callable[[InvalidObject], None] | None = None) -> None:
        self._on_invalid = on_invalid
        self.waiting_uids: set[str] = set()

    def invalid(self, obj: InvalidObject) -> None:
        if self._on_invalid is not None:
            self._on_invalid(obj)

    def waiting(self, uid: str, waits: bool) -> None:
        if waits:
            self.waiting_uids.add(uid)
        else:
            self.waiting_uids.discard(uid)


class Fed:
    """A scheduler, its handlers (as :meth:`Handlers.build` makes them) and their complaints."""

    def __init__(
        self,
        scheduler: Scheduler,
        *,
        on_group_changed: Callable[[GroupKey], None] = lambda _key: None,
        on_invalid: Callable[[InvalidObject], None] | None = None,
        on_owner_changed: Callable[[GangOwner], None] = lambda _owner: None,
        on_queue_changed: Callable[[str], None] = lambda _name: None,
        on_namespace_changed: Callable[[str], None] = lambda _name: None,
        namespaces: frozenset[str] = frozenset(),
        adapters: tuple[GroupAdapter, ...] = ADAPTERS,
        kueue_queue: str = "",
    ) -> None:
        self.scheduler = scheduler
        self.complaints = Complaints(on_invalid)
        self.handlers = Handlers.build(
            scheduler,
            complaints=self.complaints,
            group_changed=on_group_changed,
            queue_changed=on_queue_changed,
            owner_changed=on_owner_changed,
            namespace_changed=on_namespace_changed,
            namespaces=namespaces,
            adapters=adapters,
            kueue_queue=kueue_queue,
        )
