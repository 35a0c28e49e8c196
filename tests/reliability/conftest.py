"""The reliability suite: crashes, signals, races and fuzzing. Hypothesis runs a bounded
number of examples per target in CI and many more with ``ZPI_RELIABILITY=long``."""

from __future__ import annotations

from helpers.reliability import LONG, scaled
from hypothesis import HealthCheck, settings

settings.register_profile(
    "zpi-reliability",
    max_examples=scaled(200, 10_000),
    deadline=None,
    derandomize=not LONG,  # CI runs are reproducible; the long run explores
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
settings.load_profile("zpi-reliability")
