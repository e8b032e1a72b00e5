"""A virtualenv with coscheduler's runtime dependencies only, as the image installs them.

The bench's own venv also holds the ``test`` and ``bench`` extras, and some of
them change what ours imports at start: structlog's console module imports
``rich`` when it is installed (5-8 % of the imports, issue #28), which the
image never has. Ours runs with this venv's interpreter instead, its code from
the checkout (or a revision's tree) on ``PYTHONPATH``.

Made once per set of versions and kept in the cache: the runtime dependencies
of ``pyproject.toml``, pinned to the versions this venv has, so the libraries
measured are the same ones the tests run with.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

__all__ = ["runtime_python"]

REPO = Path(__file__).resolve().parents[1]
CACHE = Path.home() / ".cache" / "coscheduler" / "runtime-venv"


def _pins() -> list[str]:
    """The runtime requirements and theirs, each pinned to the version installed here."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    todo = [Requirement(line) for line in project["dependencies"]]
    pins: dict[str, str] = {}
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in pins or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        pins[name] = metadata.version(name)
        todo += [Requirement(line) for line in metadata.requires(name) or ()]
    return sorted(f"{name}=={version}" for name, version in pins.items())


def runtime_python() -> Path:
    """The interpreter of the runtime-only venv, made first if needed (takes a minute)."""
    pins = _pins()
    key = hashlib.sha256("\n".join([sys.version, *pins]).encode()).hexdigest()[:16]
    venv = CACHE / key
    python = venv / "bin" / "python"
    if python.is_file():
        return python
    CACHE.mkdir(parents=True, exist_ok=True)
    # Two runs may start at once (CI beside a bench run): one builds, the other waits for it.
    with (CACHE / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if python.is_file():
            return python
        building = CACHE / f"{key}.building"
        shutil.rmtree(building, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(building)], check=True)
        subprocess.run(
            [str(building / "bin" / "python"), "-m", "pip", "install", "--quiet", *pins],
            check=True,
        )
        # Moved whole once complete, so a half-made one is never used (only its interpreter
        # is run, which finds its venv wherever it is; its scripts would name the old path).
        building.rename(venv)
    return python
