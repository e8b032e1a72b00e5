"""coscheduler: a gang scheduler for Kubernetes.

A PodGroup's members are placed all together or not at all. The package is
layered, and each layer may import only the ones below it (checked by
import-linter; ``a | b`` are siblings that do not import each other):
``cli > app | sim > controller > runtime > core > api``. See docs/design.md.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    # ``__version__`` is read from the installed metadata when asked, not at import:
    # importlib.metadata and its scan of the distributions cost start-up (issue #28).
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("coscheduler")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"
