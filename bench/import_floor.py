"""The libraries' import floor: what ours' start-up cannot go below (issue #28).

Ours imports third-party libraries (aiohttp, pydantic, NumPy, kubernetes_asyncio's
client, ...) before its first decision. Their imports are a cost of the chosen stack,
not of our code; this module measures them apart, in the interpreter ours runs with
(the runtime-only venv, ``bench/runtime_venv.py``), so the ``imports`` and ``built``
phases of ours' ``started`` line read against a floor:

* ``empty``: an interpreter that imports nothing (``-c pass``);
* ``libraries``: the third-party modules ours has imported once ``coscheduler.app`` and
  ``coscheduler.operator`` are (derived from ``sys.modules`` in a fresh interpreter, so
  the list follows the dependencies), imported alone, in the order ours imported them,
  with the packages an older tree of ours deferred (``coscheduler.runtime.lazy_package``)
  deferred alike;
* ``ours``: ``coscheduler.app`` and ``coscheduler.operator`` (ours and the libraries);
* ``stack``: only the project's prescribed libraries that ours imports at start
  (pydantic through pydantic-settings, structlog, prometheus-client): a floor no
  Python scheduler on this stack goes below, whatever else it chooses (NumPy, the
  HTTP client and the rest are ours' choices, in ``libraries``).

Wall and CPU seconds (the child's, from ``wait4``) of each, medians of ``runs`` fresh
interpreters, the cases interleaved. ``python -m bench.import_floor`` prints them
for this checkout. The startup suite records them per trial of ours
(``bench/workloads.py``), tabled by ``bench.startup_report``.

This file is also the child's script (run by path, ``python -P``): it imports only
the standard library at the top, so the child imports nothing the floor does not.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

Json = dict[str, Any]

#: What ours imports by its first decision: the start path and the deciding side.
OURS = "import coscheduler.app, coscheduler.operator"
OUR_PACKAGE = "coscheduler"
#: The libraries the project's stack prescribes and ours imports before deciding.
STACK = "import pydantic_settings, structlog, prometheus_client"
CASES = ("empty", "libraries", "ours", "stack")


def third_party(
    imported: Sequence[str],
    at_start: Iterable[str],
    *,
    ours: str = OUR_PACKAGE,
    stdlib: Iterable[str] = sys.stdlib_module_names,
) -> list[str]:
    """The modules of ``imported`` (in its order) that are neither ours nor the standard
    library's, nor there already when the interpreter started (``at_start``)."""
    skip = set(at_start)
    standard = set(stdlib)
    kept = []
    for name in imported:
        top = name.partition(".")[0]
        if name in skip or top == ours or top in standard or top.startswith("__"):
            continue
        kept.append(name)
    return kept


def packages(modules: Iterable[str]) -> list[str]:
    """The top-level packages of ``modules``, sorted."""
    return sorted({name.partition(".")[0] for name in modules})


# --- the child's side ---------------------------------------------------------------------


def _derive() -> None:
    """Print the plan of the floor: the packages ours defers, then the modules to import."""
    import sysconfig

    at_start = list(sys.modules)
    exec(OURS)  # a fixed statement: ours' imports

    # Not importable by name (Cython's shared modules, no spec), or the standard
    # library's though not named in stdlib_module_names (_sysconfigdata_*).
    stdlib = sysconfig.get_paths()["stdlib"]

    def apart(module: object) -> bool:
        where = getattr(module, "__file__", None) or ""
        in_stdlib = where.startswith(stdlib + os.sep) and "site-packages" not in where
        return getattr(module, "__spec__", None) is None or in_stdlib

    left_out = [name for name, module in list(sys.modules.items()) if apart(module)]
    for package, light in _deferred().items():
        print("defer", package, *(f"{name}={module}" for name, module in light.items()))
    for name in third_party(list(sys.modules), [*at_start, *left_out]):
        print("import", name)


def _deferred() -> dict[str, dict[str, str]]:
    """The packages ours defers and has not run yet, with their light names."""
    import importlib

    try:  # trees from before its removal (ours@REV) deferred some packages' __init__
        lazy_package: Any = importlib.import_module("coscheduler.runtime.lazy_package")
    except ImportError:
        return {}
    if hasattr(lazy_package, "deferred"):
        return dict(lazy_package.deferred())
    # A tree from before deferred() (ours@REV): its stand-ins still hold their
    # __getattr__, a closure of lazy_package's over the light names.
    found = {}
    for name, module in list(sys.modules.items()):
        hook: Any = vars(module).get("__getattr__") if hasattr(module, "__dict__") else None
        if hook is not None and getattr(hook, "__module__", None) == lazy_package.__name__:
            cells = dict(zip(hook.__code__.co_freevars, hook.__closure__ or (), strict=True))
            found[name] = dict(cells["names"].cell_contents) if "names" in cells else {}
    return found


def _floor(plan: Path) -> None:
    """Import what the plan names, as ours did: deferred packages first."""
    import importlib

    failed = []
    for line in plan.read_text().splitlines():
        verb, name, *rest = line.split()
        if verb == "defer":
            lazy_package: Any = importlib.import_module("coscheduler.runtime.lazy_package")
            lazy_package.defer_init(name, dict(item.split("=", 1) for item in rest))
        elif name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # said below: the plan must be importable
                failed.append(name)
    if failed:
        print("not importable by name:", *failed, file=sys.stderr)


# --- the parent's side --------------------------------------------------------------------


def _child(python: Path, pythonpath: Path, argv: list[str]) -> tuple[float, str, str]:
    """Run one fresh interpreter: (wall seconds, its stdout, its stderr)."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    started = time.perf_counter()
    child = subprocess.Popen(
        [str(python), "-P", *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = child.communicate()
    wall = time.perf_counter() - started
    if child.returncode != 0:
        raise RuntimeError(f"{argv}: exit {child.returncode}: {err.decode()[-2000:]}")
    return wall, out.decode(), err.decode()


def _timed(python: Path, pythonpath: Path, argv: list[str]) -> tuple[float, float]:
    """(wall, CPU seconds) of one fresh interpreter; its CPU from the reaped children's total."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, _, err = _child(python, pythonpath, argv)
    if err.strip():
        raise RuntimeError(f"{argv}: {err[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu


def plan(python: Path, pythonpath: Path) -> list[str]:
    """The floor's plan for ours at ``pythonpath`` (lines ``defer ...`` / ``import ...``)."""
    _, out, _ = _child(python, pythonpath, [__file__, "derive"])
    return out.splitlines()


def measure(python: Path, pythonpath: Path, *, runs: int = 5) -> Json:
    """Wall and CPU seconds of the cases, medians of ``runs`` (see the docstring)."""
    lines = plan(python, pythonpath)
    modules = [line.split()[1] for line in lines if line.startswith("import ")]
    with tempfile.TemporaryDirectory(prefix="import-floor-") as scratch:
        plan_file = Path(scratch) / "plan.txt"
        plan_file.write_text("\n".join(lines) + "\n")
        argv = {
            "empty": ["-c", "pass"],
            "libraries": [__file__, "floor", str(plan_file)],
            "ours": ["-c", OURS],
            "stack": ["-c", STACK],
        }
        samples: dict[str, list[tuple[float, float]]] = {case: [] for case in CASES}
        for _ in range(runs):
            for case in CASES:
                samples[case].append(_timed(python, pythonpath, argv[case]))
    figures: Json = {"runs": runs, "modules": len(modules), "packages": packages(modules)}
    for case, values in samples.items():
        figures[case] = {
            "wall_s": round(statistics.median(w for w, _ in values), 3),
            "cpu_s": round(statistics.median(c for _, c in values), 3),
        }
    return figures


def main(argv: list[str]) -> int:
    if argv[:1] == ["derive"]:
        _derive()
        return 0
    if argv[:1] == ["floor"]:
        _floor(Path(argv[1]))
        return 0
    import argparse

    from bench.runtime_venv import runtime_python

    parser = argparse.ArgumentParser(prog="python -m bench.import_floor", description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--list", action="store_true", help="print the floor's plan and stop")
    options = parser.parse_args(argv)
    python = runtime_python()
    if options.list:
        print("\n".join(plan(python, options.tree)))
        return 0
    figures = measure(python, options.tree, runs=options.runs)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{figures['modules']} modules of {', '.join(figures['packages'])}")
    for case in CASES:
        print(
            f"{case:>9}: {figures[case]['wall_s']:.3f} s wall, {figures[case]['cpu_s']:.3f} CPU-s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
