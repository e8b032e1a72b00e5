"""The import floor's list of modules (bench/import_floor.py): derived, not timed."""

from __future__ import annotations

import sys
from pathlib import Path

from bench import import_floor


def test_third_party_keeps_the_libraries_in_the_order_they_were_imported() -> None:
    imported = [
        "sys", "site", "coscheduler", "coscheduler.app", "asyncio", "aiohttp",
        "aiohttp.web", "_cffi_backend", "numpy", "numpy._core", "__main__",
    ]  # fmt: skip
    kept = import_floor.third_party(
        imported, at_start=["sys", "site"], stdlib={"sys", "site", "asyncio"}
    )
    assert kept == ["aiohttp", "aiohttp.web", "_cffi_backend", "numpy", "numpy._core"]
    assert import_floor.packages(kept) == ["_cffi_backend", "aiohttp", "numpy"]


def test_third_party_leaves_out_what_the_interpreter_had_at_start() -> None:
    # A .pth hook (setuptools' _distutils_hack) is there before any import of ours.
    kept = import_floor.third_party(["_distutils_hack", "yaml"], at_start=["_distutils_hack"])
    assert kept == ["yaml"]


def test_third_party_knows_the_standard_library_by_default() -> None:
    assert import_floor.third_party(["json", "email.parser", "yaml"], at_start=[]) == ["yaml"]
    assert "json" in sys.stdlib_module_names


def test_the_plan_of_this_checkout_names_its_libraries() -> None:
    # Derived in a fresh interpreter, as the bench does in the runtime venv (no timing).
    lines = import_floor.plan(Path(sys.executable), Path(__file__).parents[1])
    assert not [line for line in lines if line.startswith("defer ")]  # this tree defers none
    modules = [line.split()[1] for line in lines if line.startswith("import ")]
    tops = import_floor.packages(modules)
    assert {"pydantic", "numpy", "structlog"} <= set(tops)
    # The credentials are kubernetes_asyncio's loaders (runtime/credentials.py).
    assert "kubernetes_asyncio" in tops
    assert "coscheduler" not in tops
    assert not [m for m in modules if m.partition(".")[0] in sys.stdlib_module_names]


def test_the_startup_report_shows_the_floor_beside_ours_phases() -> None:
    from bench import startup_report

    floor = {
        "empty": {"wall_s": 0.03, "cpu_s": 0.02},
        "libraries": {"wall_s": 0.7, "cpu_s": 0.8},
        "ours": {"wall_s": 0.9, "cpu_s": 1.0},
        "stack": {"wall_s": 0.5, "cpu_s": 0.4},
    }
    trial = {
        "workload": "startup", "ok": True, "peer": "ours",
        "params": {"nodes": 100, "gang_size": 8},
        "figures": {"first_bind_after_start_s": 1.5, "pods_per_s_from_start": 200.0,
                    "startup": {"imports": 0.6, "built": 1.1}, "import_floor": floor},
    }  # fmt: skip
    header, _, row = startup_report.table([trial]).splitlines()
    assert "the libraries' imports alone" in header
    assert "the prescribed stack alone" in header
    assert "| 0.70 (0.80 CPU) | 0.90 (1.00 CPU) | 0.50 (0.40 CPU) | 0.20 | 0.60 |" in row


def test_the_startup_report_judges_ours_against_the_goals() -> None:
    from bench import startup_report

    def trial(peer: str, first: float, rate: float, cpu: float) -> dict[str, object]:
        return {
            "workload": "startup", "ok": True, "peer": peer,
            "params": {"nodes": 1000, "gang_size": 64},
            "figures": {"first_bind_after_start_s": first, "pods_per_s_from_start": rate},
            "cost": {"cpu_s": cpu, "cpu_s_to_all_bound": cpu - 0.5},
        }  # fmt: skip

    trials = [
        trial("ours", 1.8, 300.0, 3.0),
        trial("ours", 2.0, 280.0, 3.2),
        trial("ceiling", 0.3, 350.0, 1.0),
        trial("default", 0.6, 200.0, 8.0),
    ]
    header, _, row = startup_report.goals(trials).splitlines()
    assert "pods/s / ceiling (goal >= 0.8)" in header
    assert "first Binding / default's |" in header
    # Medians: first 1.9 s (3.17x 0.6), 290 pods/s (0.83 of 350, 1.45x 200), 3.1 CPU-s
    # (3.1x 1.0), 2.6 CPU-s to the last Binding (5.2x the ceiling's 0.5).
    assert row == (
        "| 1000 | 64 | ours | 1.90 **not met** | 3.17 | 0.83 met | 1.45 met | 3.10 **not met** "
        "| 5.20 |"
    )


def test_the_goals_read_a_dash_without_their_reference_peer() -> None:
    from bench import startup_report

    only_ours = {
        "workload": "startup", "ok": True, "peer": "ours@abc",
        "params": {"nodes": 1000, "gang_size": 8},
        "figures": {"first_bind_after_start_s": 0.4, "pods_per_s_from_start": 300.0},
    }  # fmt: skip
    row = startup_report.goals([only_ours]).splitlines()[2]
    assert row == "| 1000 | 8 | ours@abc | 0.40 met | - | - | - | - | - |"
