"""Hypothesis profiles: ``default`` for a quick local run, ``ci`` for more examples.

Select with ``HYPOTHESIS_PROFILE=ci``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Derandomized and without a stored database: every run, here or in CI, tries
# the same examples. `HYPOTHESIS_PROFILE=explore` searches at random instead.
settings.register_profile(
    "default",
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "explore", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
