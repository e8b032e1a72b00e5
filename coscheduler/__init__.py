"""coscheduler: a gang scheduler for Kubernetes.

A PodGroup's members are placed all together or not at all. The package is
layered, and each layer may import only the ones below it (checked by
import-linter): ``cli > controller > runtime > core > api``.
"""

__version__ = "0.1.0"
