"""Kopf handlers that keep each PodGroup's status true.

The controller alone owns PodGroup phases, counters and conditions; it derives
them from the member pods and records Events at each transition. It does not
schedule: binding belongs to the runtime's scheduling loop.
"""
