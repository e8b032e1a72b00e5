"""Hypothesis profiles for every property test under tests/, and which one a run takes.

``default`` and ``ci`` are derandomized and keep no example database: every run,
here or in CI, tries the same examples (``ci`` tries more of them). ``explore``
searches at random. ``HYPOTHESIS_PROFILE`` names the profile; without it a run
takes ``ci`` where ``CI=true`` (as CI runs ``.ci/run``), else ``default``.
tests/conftest.py loads it before any test module is imported.
"""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import HealthCheck, settings

DEFAULT_EXAMPLES = 200
"""The default profile's examples per property test, which the unit time limit is sized for."""
BASE_UNIT_TIMEOUT_SECONDS = 60


def unit_timeout_seconds(max_examples: int) -> int:
    """A unit test's time limit when property tests try ``max_examples`` examples each."""
    return BASE_UNIT_TIMEOUT_SECONDS * max(1, -(-max_examples // DEFAULT_EXAMPLES))


settings.register_profile(
    "default",
    max_examples=DEFAULT_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("ci", parent=settings.get_profile("default"), max_examples=1000)
# Hypothesis registers "default" in place, so a profile that names no parent takes
# the fields it leaves unset from it anyway: explore says derandomize=False itself.
settings.register_profile(
    "explore", parent=settings.get_profile("default"), max_examples=1000, derandomize=False
)


def profile_for(environ: Mapping[str, str]) -> str:
    """The profile named by ``HYPOTHESIS_PROFILE``; else ``ci`` in CI, else ``default``."""
    named = environ.get("HYPOTHESIS_PROFILE")
    if named:
        return named
    return "ci" if environ.get("CI", "").strip().lower() in ("true", "1") else "default"
