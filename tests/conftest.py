"""Unit tests get a tighter time limit than the default: here a hang is a bug."""

from __future__ import annotations

from pathlib import Path

import pytest

UNIT_TIMEOUT_SECONDS = 60
UNIT_TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Called with every collected item, e2e's too: only those under tests/ are unit tests.
    for item in items:
        if item.get_closest_marker("timeout") is None and UNIT_TESTS in item.path.parents:
            item.add_marker(pytest.mark.timeout(UNIT_TIMEOUT_SECONDS))
