"""Random input arrays for programs: ordinary values, and edge values mixed in.

Needs only numpy (the equivalence checker uses it on a plain install; the program
generators beside it need hypothesis).
"""

from __future__ import annotations

import numpy as np


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-8, 9, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def edge_array(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, nonfinite: bool = True
) -> np.ndarray:
    """A random array with about half its elements replaced by edge values."""
    dtype = np.dtype(dtype)
    array = random_array(rng, shape, dtype)
    if dtype == np.bool_:
        return array
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        candidates = [0, -1, 1, int(info.min), int(info.max), int(info.min) + 1, int(info.max) - 1]
        # an unsigned type has no -1
        edges = np.array([v for v in candidates if info.min <= v <= info.max], dtype)
    else:
        values = [0.0, -0.0, -1.0, 1.0, 0.5, -2.5, 1e4, -1e4, 1e-30]
        if nonfinite:
            values += [np.nan, np.inf, -np.inf]
        edges = np.array(values, dtype)
    mask = rng.random(shape) < 0.5
    picks = edges[rng.integers(0, len(edges), shape)]
    return np.where(mask, picks, array).astype(dtype)


__all__ = ["edge_array", "random_array"]
