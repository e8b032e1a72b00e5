"""Unit tests get a tighter time limit than the default: here a hang is a bug.

The limit guards against hangs, not slowness: it grows with the examples the
chosen hypothesis profile tries (CI's tries five times the default's), so a
loaded machine running the CI profile does not cut a property test short.

Their hypothesis profile is chosen here, before any test module is imported
(tests/hypothesis_profiles.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from tests.hypothesis_profiles import profile_for, unit_timeout_seconds

UNIT_TESTS = Path(__file__).resolve().parent

settings.load_profile(profile_for(os.environ))
UNIT_TIMEOUT_SECONDS = unit_timeout_seconds(settings().max_examples)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Called with every collected item, e2e's too: only those under tests/ are unit tests.
    for item in items:
        if item.get_closest_marker("timeout") is None and UNIT_TESTS in item.path.parents:
            item.add_marker(pytest.mark.timeout(UNIT_TIMEOUT_SECONDS))
