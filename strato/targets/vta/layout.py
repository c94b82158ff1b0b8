"""The VTA data layouts: NCHW tensors as BATCH x BLOCK elements, OIHW weights as BLOCK x BLOCK tiles.

`NCHW{b}n{c}c` (default `NCHW1n16c`) stores an [N, C, H, W] tensor as elements of shape
[BATCH, BLOCK_IN] in (N/BATCH, C/BLOCK, H, W) order; `OIHW{o}o{i}i` (default `OIHW16o16i`)
stores [O, I, KH, KW] weights as elements [BLOCK_OUT, BLOCK_IN] in (O/BLOCK, I/BLOCK, KH, KW)
order. These are the element orders of the `inp`/`acc`/`out` and `wgt` DRAM regions.

>>> import numpy as np
>>> x = np.arange(2 * 32 * 3 * 3, dtype=np.int8).reshape(2, 32, 3, 3)
>>> elems = pack_activations(x)
>>> elems.shape
(36, 1, 16)
>>> bool((unpack_activations(elems, x.shape) == x).all())
True
"""

from __future__ import annotations

import numpy as np

from strato.targets.vta.config import DEFAULT_CONFIG, VTAConfig
from strato.targets.vta.errors import VTAError


def activation_layout(config: VTAConfig = DEFAULT_CONFIG) -> str:
    return f"NCHW{config.batch}n{config.block_in}c"


def weight_layout(config: VTAConfig = DEFAULT_CONFIG) -> str:
    return f"OIHW{config.block_out}o{config.block_in}i"


def _check_divides(shape: tuple[int, ...], axis: int, factor: int, what: str) -> None:
    if shape[axis] % factor:
        raise VTAError(f"{what} {list(shape)}: dimension {axis} ({shape[axis]}) is not a multiple of {factor}")


def activation_elements(shape: tuple[int, ...], config: VTAConfig = DEFAULT_CONFIG) -> int:
    """Elements an [N, C, H, W] tensor occupies in NCHW{BATCH}n{BLOCK}c."""
    n, c, h, w = shape
    return (n // config.batch) * (c // config.block_in) * h * w


def weight_elements(shape: tuple[int, ...], config: VTAConfig = DEFAULT_CONFIG) -> int:
    """Elements [O, I, KH, KW] weights occupy in OIHW{BLOCK}o{BLOCK}i."""
    o, i, kh, kw = shape
    return (o // config.block_out) * (i // config.block_in) * kh * kw


def _pack(x: np.ndarray, what: str, layout: str, outer: int, inner: int) -> np.ndarray:
    """[D0, D1, H, W] -> elements [D0/outer * D1/inner * H * W, outer, inner]."""
    if x.ndim != 4:
        raise VTAError(f"{what} {list(x.shape)} are not {layout}")
    _check_divides(x.shape, 0, outer, what)
    _check_divides(x.shape, 1, inner, what)
    d0, d1, h, w = x.shape
    blocked = x.reshape(d0 // outer, outer, d1 // inner, inner, h, w).transpose(0, 2, 4, 5, 1, 3)
    return np.ascontiguousarray(blocked).reshape(-1, outer, inner)


def _unpack(elems: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Elements [..., outer, inner] in blocked order -> [D0, D1, H, W]."""
    d0, d1, h, w = shape
    outer, inner = elems.shape[1:]
    blocked = elems.reshape(d0 // outer, d1 // inner, h, w, outer, inner).transpose(0, 4, 1, 5, 2, 3)
    return np.ascontiguousarray(blocked).reshape(d0, d1, h, w)


def pack_activations(x: np.ndarray, config: VTAConfig = DEFAULT_CONFIG) -> np.ndarray:
    """[N, C, H, W] -> elements [N/b * C/c * H * W, b, c]."""
    return _pack(x, "activations", "NCHW", config.batch, config.block_in)


def unpack_activations(elems: np.ndarray, shape: tuple[int, ...], config: VTAConfig = DEFAULT_CONFIG) -> np.ndarray:
    """Elements [..., b, c] in NCHW{b}n{c}c order -> [N, C, H, W]."""
    return _unpack(elems, shape)


def pack_weights(wgt: np.ndarray, config: VTAConfig = DEFAULT_CONFIG) -> np.ndarray:
    """[O, I, KH, KW] -> elements [O/o * I/i * KH * KW, o, i]."""
    return _pack(wgt, "weights", "OIHW", config.block_out, config.block_in)


def unpack_weights(elems: np.ndarray, shape: tuple[int, ...], config: VTAConfig = DEFAULT_CONFIG) -> np.ndarray:
    """Elements [..., o, i] in OIHW{o}o{i}i order -> [O, I, KH, KW]."""
    return _unpack(elems, shape)
