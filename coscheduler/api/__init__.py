"""The user-facing contract: PodGroup models, labels and resource quantities.

Everything here is plain data and parsing: pydantic models of the PodGroup
spec and status as the CRD defines them, an adapter per PodGroup API
(``adapters/``: ours, and scheduler-plugins' ``scheduling.x-k8s.io``) into one
group model, the label keys that tie a pod to its group, and Kubernetes
quantities parsed once into exact integers (milli-cores, bytes, counts). No
I/O, no asyncio, no Kubernetes client, no decisions.
"""
