"""tests/hypothesis_profiles.py: CI derandomized with more examples; the variable still wins."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from tests.hypothesis_profiles import profile_for, unit_timeout_seconds


@pytest.mark.parametrize(
    ("environ", "profile"),
    [
        ({}, "default"),
        ({"CI": "true"}, "ci"),
        ({"CI": "1"}, "ci"),
        ({"CI": "false"}, "default"),
        ({"HYPOTHESIS_PROFILE": "explore"}, "explore"),
        ({"CI": "true", "HYPOTHESIS_PROFILE": "explore"}, "explore"),
        ({"CI": "true", "HYPOTHESIS_PROFILE": "default"}, "default"),
    ],
)
def test_the_variable_names_the_profile_else_ci_in_ci(
    environ: dict[str, str], profile: str
) -> None:
    assert profile_for(environ) == profile


def test_ci_tries_more_examples_and_the_same_ones_every_run() -> None:
    default, ci = settings.get_profile("default"), settings.get_profile("ci")
    assert ci.max_examples > default.max_examples
    assert (ci.derandomize, default.derandomize) == (True, True)
    assert (ci.database, default.database) == (None, None)
    assert not settings.get_profile("explore").derandomize


def test_this_run_took_the_profile_its_environment_names() -> None:
    assert settings.default == settings.get_profile(profile_for(os.environ))


def test_the_unit_time_limit_grows_with_the_examples_a_profile_tries() -> None:
    default, ci = settings.get_profile("default"), settings.get_profile("ci")
    assert unit_timeout_seconds(default.max_examples) == 60
    assert unit_timeout_seconds(ci.max_examples) == 300
    assert unit_timeout_seconds(1) == 60
