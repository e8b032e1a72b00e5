"""Where the other projects' PodGroup APIs are served: names only, no models.

Read by the table of adapters (:data:`coscheduler.api.adapters.ADAPTERS`) and
the table of kinds at start, before any object of these APIs is seen; each
adapter's module (``xk8s``, ``volcano``, ``t9k``) takes its ``API`` from here
and is imported only when its first object is read (issue #28).
"""

from __future__ import annotations

from typing import Final

from coscheduler.api.adapters.base import GroupApi

__all__ = ["T9K", "T9K_SCHEDULER", "VOLCANO", "VOLCANO_SCHEDULER", "XK8S"]

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
