"""Hypothesis profiles for the fuzz tests: `ci` (the default, quick) and `long` (a real fuzzing run).

    HYPOTHESIS_PROFILE=long python -m pytest tests/fuzz     # 20,000 examples a test

Every test here states one property: whatever the input, the code under test returns a result or raises
the project's own error (HostError, SnapshotError, YamlError, loader Problems, RequireSyntaxError), never
any other exception.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile("ci", max_examples=40, deadline=None, suppress_health_check=_QUIET)
settings.register_profile(
    "long", max_examples=20_000, deadline=None, suppress_health_check=_QUIET, print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
