"""Shared test support: hypothesis strategies and the equivalence oracle.

It needs the test extra (`pip install 'strato[test]'`); the compiler itself never imports it.
"""

try:
    import hypothesis  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "strato.testing needs hypothesis, which comes with the test extra: "
        "pip install 'strato[test]'"
    ) from err
