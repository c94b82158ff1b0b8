"""Test-wide settings: hypothesis profiles.

`dev` (the default) explores more; `ci` is small, bounded and derandomized so a CI run
is fast and repeatable. `.ci/run` selects `ci` with `--hypothesis-profile=ci`.
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("dev")
