"""The scheduling brain: pure, synchronous and deterministic.

The core takes plain data (nodes, pods, groups, cluster events) and returns
decisions (bindings, or reasons why not). It never awaits, never performs I/O
and never imports asyncio, Kopf or a Kubernetes client: that keeps it testable
by unit and property tests and usable offline by ``coscheduler simulate``.
"""
