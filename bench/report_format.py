"""Formatting shared by the report's sections: numbers, ratios, cells, peer order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

Json = dict[str, Any]

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "RESULTS.md"
RESULTS_DIR = BENCH / "results"
PLOTS_DIR = RESULTS_DIR / "plots"
CORE_HEADING = "## Core (pure planner, no API server)"
SOAK_HEADING = "## Soak under faults"
PEER_ORDER = ["ours", "reference", "native", "default", "ceiling"]


def peer_columns(trials: list[Json]) -> list[str]:
    present = {t["peer"] for t in trials}
    return [p for p in PEER_ORDER if p in present]


def fmt_number(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def ratio_text(a: float | None, b: float | None) -> str:
    if not a or not b:
        return "-"
    return f"{a / b:.2f}x"


def cell_text(trial: Json | None, key: str, digits: int = 1) -> str:
    if trial is None:
        return "-"
    if not trial["ok"]:
        return "FAILED"
    return fmt_number(trial["figures"].get(key), digits)


def index_by(trials: list[Json], *keys: str) -> dict[tuple[Any, ...], Json]:
    return {tuple(t["params"].get(k) if k in t["params"] else t.get(k) for k in keys): t
            for t in trials}  # fmt: skip
