"""coscheduler: a gang scheduler for Kubernetes.

A PodGroup's members are placed all together or not at all. The package is
layered, and each layer may import only the ones below it (checked by
import-linter; ``a | b`` are siblings that do not import each other):
``cli > app | sim > controller > runtime > core > api``. See docs/design.md.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("coscheduler")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
