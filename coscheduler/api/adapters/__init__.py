"""The PodGroup APIs coscheduler reads, each behind an adapter to the one group model.

``ADAPTERS`` is in order of precedence: when a namespace holds a PodGroup of
the same name in two APIs, the first one's is the group (ours, so that a
group a person wrote for coscheduler is never overridden by one an operator
generated), and the other is left alone, its status unwritten.

Kubernetes' own PodGroup (``native``, one adapter per version, newest first;
discovery reads only the newest served) comes last: its groups are keyed
apart (a pod names one by ``spec.schedulingGroup``, never by label), so its
names never meet ours, scheduler-plugins', Volcano's (``volcano``) or T9k's
(``t9k``), which come before it in that order.

The other projects' adapters (``xk8s``, ``volcano``, ``t9k``) are named by
their module and imported when their first object is read
(:class:`~coscheduler.api.adapters.deferred.DeferredAdapter`): a cluster that
does not serve their APIs, or holds none of their objects, never imports their
models (issue #28). A new one: its ``API`` in :mod:`~coscheduler.api.adapters.apis`
(in :data:`~coscheduler.api.adapters.apis.PODGROUPS`, which the table of kinds
reads), its module exporting ``ADAPTER``, and its row in
:mod:`~coscheduler.api.adapters.table`, at the same place.

Importing this package imports none of the models: the start reads only
:mod:`~coscheduler.api.adapters.apis`, and the names below that need the models
are imported when first asked for (PEP 562), by the deciding side (issue #28).

Kubernetes' 1.35 ``Workload`` (``workload``) is not among them: it is not a
PodGroup, its gangs are keyed apart (a pod names one with ``spec.workloadRef``),
so its names never meet a PodGroup's.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from coscheduler.api.adapters.apis import GroupApi

if TYPE_CHECKING:
    from coscheduler.api.adapters.base import GroupAdapter, GroupObject, StatusAdapter
    from coscheduler.api.adapters.table import ADAPTERS

__all__ = ["ADAPTERS", "GroupAdapter", "GroupApi", "GroupObject", "StatusAdapter"]

#: Where the names that need the models are defined: imported on first use.
_HOME = {
    "ADAPTERS": "coscheduler.api.adapters.table",
    "GroupAdapter": "coscheduler.api.adapters.base",
    "GroupObject": "coscheduler.api.adapters.base",
    "StatusAdapter": "coscheduler.api.adapters.base",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:  # a submodule, not imported yet: the import system imports it then
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
