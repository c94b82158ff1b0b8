"""Optional test dependencies that skip the one test needing them, not a whole module.

    ort = optional_module("onnxruntime")     # at module level: imports nothing yet

    def test_matches_onnxruntime():
        session = ort.InferenceSession(...)  # skips this test if onnxruntime is missing

`pytest.importorskip` at module level skips every test of the module, including the many
that never touch the optional package; this proxy defers the import (and the skip) to
the first attribute a test reads.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class optional_module:  # noqa: N801 - used like a module
    """A module imported on first attribute access; a test reaching for it when it is not
    installed is skipped with the reason."""

    def __init__(self, name: str):
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        if self._module is None:
            try:
                self._module = importlib.import_module(self._name)
            except ImportError:
                import pytest

                pytest.skip(f"{self._name} is not installed")
        return getattr(self._module, attribute)

    @property
    def available(self) -> bool:
        """Whether the module imports (for `skipif` marks)."""
        if self._module is not None:
            return True
        try:
            self._module = importlib.import_module(self._name)
        except ImportError:
            return False
        return True

    def __repr__(self) -> str:
        return f"<optional module {self._name}>"
