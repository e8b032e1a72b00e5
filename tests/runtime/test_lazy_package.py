"""defer_init: a package's submodules without its __init__, the whole package when asked."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from coscheduler.runtime.lazy_package import defer_init, deferred


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    root = tmp_path / "heavy_pkg"
    (root / "models").mkdir(parents=True)
    (root / "__init__.py").write_text(
        "import heavy_pkg.models as models\nfrom heavy_pkg.api import Client\nEVERYTHING = True\n"
    )
    (root / "api.py").write_text("class Client:\n    pass\n")
    (root / "models" / "__init__.py").write_text("RAN = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "heavy_pkg"
    for name in [m for m in sys.modules if m == "heavy_pkg" or m.startswith("heavy_pkg.")]:
        del sys.modules[name]


def test_submodules_and_light_names_do_not_run_the_init(package: str) -> None:
    defer_init(package, {"Client": "api"})
    defer_init(f"{package}.models")
    from heavy_pkg import Client, api  # type: ignore[import-not-found]

    assert Client is api.Client
    assert "EVERYTHING" not in vars(sys.modules[package])
    assert "RAN" not in vars(sys.modules[f"{package}.models"])


def test_any_other_name_runs_the_init_once(package: str) -> None:
    defer_init(package, {"Client": "api"})
    import heavy_pkg

    assert package in deferred()
    assert heavy_pkg.EVERYTHING is True
    assert heavy_pkg.models.RAN is True
    assert "__getattr__" not in vars(heavy_pkg)
    assert package not in deferred()  # the bench's import floor defers only what still is


def test_deferred_names_the_light_attributes(package: str) -> None:
    defer_init(package, {"Client": "api"})
    assert deferred()[package] == {"Client": "api"}


def test_an_imported_package_is_left_alone(package: str) -> None:
    import heavy_pkg

    defer_init(package)
    assert sys.modules[package] is heavy_pkg
    assert heavy_pkg.EVERYTHING is True
