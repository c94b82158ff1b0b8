"""Test-wide settings: hypothesis profiles, and no compile cache.

`dev` (the default) explores more; `ci` is small, bounded and derandomized so a CI run
is fast and repeatable. `.ci/run` selects `ci` with `--hypothesis-profile=ci`.
"""

import pytest
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


@pytest.fixture(autouse=True)
def _no_compile_cache(monkeypatch, tmp_path_factory):
    """Tests compile from scratch (a test that patches strato must never get a model
    cached before the patch), and nothing is written under the home directory; tests of
    the cache turn it on with `STRATO_CACHE=1` in their own temporary directory."""
    monkeypatch.setenv("STRATO_CACHE", "0")
    monkeypatch.setenv("STRATO_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "strato-cache"))
