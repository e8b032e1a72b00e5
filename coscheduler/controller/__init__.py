"""Keeps each PodGroup's and Queue's status true, and makes the PodGroups of gang Jobs.

The controller alone owns PodGroup phases, counters and conditions; it derives
them from the member pods and the scheduling loop's verdict, read from the
runtime's read model (:mod:`coscheduler.runtime.readmodel`), and records
Events at each transition. It neither schedules nor watches: binding belongs
to the runtime's scheduling loop, and every watch to the runtime's one watch
engine.
"""
