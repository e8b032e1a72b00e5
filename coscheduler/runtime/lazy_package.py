"""Import a package's submodules without running its ``__init__`` until it is needed.

Issue #28: ``kubernetes_asyncio``'s package ``__init__`` imports every generated
API and model (a fifth of coscheduler's start-up), while the transport needs
only its kubeconfig loading and ``ApiClient``. :func:`defer_init` registers the
package as an empty module that can still import its submodules; its
submodules and the names given as ``light`` are served from their own
submodule, and the first other
attribute asked of the package runs its ``__init__`` then, so any other user
in the process sees the whole package as usual.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["defer_init", "deferred"]

#: The packages registered by :func:`defer_init` whose ``__init__`` has not run yet,
#: with their ``light`` names (the bench's import floor defers them alike).
_DEFERRED: dict[str, dict[str, str]] = {}


def deferred() -> dict[str, dict[str, str]]:
    """The packages still deferred now, each with its ``light`` names."""
    return {package: dict(light) for package, light in _DEFERRED.items()}


def defer_init(package: str, light: Mapping[str, str] | None = None) -> None:
    """Register ``package`` without running its ``__init__`` (no-op once imported).

    ``light`` maps attribute names to the submodule (relative to ``package``)
    that defines them: asking the package for one imports just that submodule,
    as asking for a submodule does.
    """
    if package in sys.modules:
        return
    spec = importlib.util.find_spec(package)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not an installed package: leave the import system to say so
    loader = spec.loader
    module = importlib.util.module_from_spec(spec)
    names = dict(light or {})

    def attribute(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(f"{package}.{names[name]}"), name)
        if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}"):
            return importlib.import_module(f"{package}.{name}")  # a submodule, as imports ask
        # Anything else: the whole package, as a plain import would have made it.
        delattr(module, "__getattr__")
        _DEFERRED.pop(package, None)
        loader.exec_module(module)
        return getattr(module, name)

    setattr(module, "__getattr__", attribute)  # noqa: B010 (a module-level __getattr__, PEP 562)
    sys.modules[package] = module
    _DEFERRED[package] = names
    parent, _, child = package.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, module)
