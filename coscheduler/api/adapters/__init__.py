"""The PodGroup APIs coscheduler reads, each behind an adapter to the one group model.

:data:`~coscheduler.api.adapters.table.ADAPTERS` holds them; each adapter
implements :class:`~coscheduler.api.adapters.base.GroupAdapter`.

``ADAPTERS`` is in order of precedence: when a namespace holds a PodGroup of
the same name in two APIs, the first one's is the group (ours, so that a
group a person wrote for coscheduler is never overridden by one an operator
generated), and the other is left alone, its status unwritten.

Kubernetes' own PodGroup (``native``, one adapter per version, newest first;
discovery reads only the newest served) comes last: its groups are keyed
apart (a pod names one by ``spec.schedulingGroup``, never by label), so its
names never meet ours, scheduler-plugins', Volcano's (``volcano``) or T9k's
(``t9k``), which come before it in that order.

A new one: its ``API`` in :mod:`~coscheduler.api.adapters.apis` (in
:data:`~coscheduler.api.adapters.apis.PODGROUPS`, which the table of kinds
reads), its module exporting ``ADAPTER``, and its row in
:mod:`~coscheduler.api.adapters.table`, at the same place.

Kubernetes' 1.35 ``Workload`` (``workload``) is not among them: it is not a
PodGroup, its gangs are keyed apart (a pod names one with ``spec.workloadRef``),
so its names never meet a PodGroup's.
"""
