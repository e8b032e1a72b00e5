"""Unit tests get a tighter time limit than the default: here a hang is a bug.

Their hypothesis profile is chosen here, before any test module is imported
(tests/hypothesis_profiles.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from tests.hypothesis_profiles import profile_for

UNIT_TIMEOUT_SECONDS = 60
UNIT_TESTS = Path(__file__).resolve().parent

settings.load_profile(profile_for(os.environ))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Called with every collected item, e2e's too: only those under tests/ are unit tests.
    for item in items:
        if item.get_closest_marker("timeout") is None and UNIT_TESTS in item.path.parents:
            item.add_marker(pytest.mark.timeout(UNIT_TIMEOUT_SECONDS))
