"""Converters for the ONNX operators whose value is known at import time: Constant,
ConstantOfShape (of a known shape), Range (of known bounds), EyeLike (of a static
shape) and MelWeightMatrix (of known sizes and frequencies).

The value stays a numpy array, like an initializer; it becomes a `graph.constant` only
where an op needs it as an operand. ConstantOfShape and Range have data-dependent
result shapes, so strato, which compiles static shapes, needs their inputs at import
time (torch's exporters compute them from Shape, which is static here).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from strato.dialects.tensor_types import numpy_dtype
from strato.frontends.onnx.conversion import ImportedValue, NodeContext, shape_of


def convert_constant(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Constant (value, value_float(s), value_int(s), sparse_value) -> an array."""
    if ctx.has_attr("value"):
        return [np.array(ctx.attr("value"), order="C")]
    if ctx.has_attr("value_float"):
        return [np.array(ctx.attr("value_float"), dtype=np.float32)]
    if ctx.has_attr("value_floats"):
        return [np.array(ctx.attr("value_floats"), dtype=np.float32)]
    if ctx.has_attr("value_int"):
        return [np.array(ctx.attr("value_int"), dtype=np.int64)]
    if ctx.has_attr("value_ints"):
        return [np.array(ctx.attr("value_ints"), dtype=np.int64)]
    if ctx.has_attr("sparse_value"):
        return [_densify(ctx, ctx.attr("sparse_value"))]
    if ctx.has_attr("value_string") or ctx.has_attr("value_strings"):
        raise ctx.error("string constants are not supported")
    names = ", ".join(attr.name for attr in ctx.node.attribute) or "none"
    raise ctx.error(f"unsupported form of constant (attributes: {names})")


def _densify(ctx: NodeContext, sparse: onnx.SparseTensorProto) -> np.ndarray:
    """The dense array of a sparse tensor: its values at its indices, zeros elsewhere.
    Indices are [NNZ] linear positions or [NNZ, rank] coordinates."""
    values = numpy_helper.to_array(sparse.values)
    indices = numpy_helper.to_array(sparse.indices).astype(np.int64)
    shape = tuple(int(d) for d in sparse.dims)
    dense = np.zeros(shape, dtype=values.dtype)
    if indices.ndim == 2:
        if indices.shape[1] != len(shape):
            raise ctx.error(
                f"sparse_value indices of shape {list(indices.shape)} do not fit rank {len(shape)}"
            )
        indices = np.ravel_multi_index(tuple(indices.T), shape) if indices.size else indices[:, 0]
    if indices.size and (indices.min() < 0 or indices.max() >= dense.size):
        raise ctx.error("sparse_value indices are out of range")
    dense.reshape(-1)[indices] = values.reshape(-1)
    return dense


IMPORT_TIME_INPUTS: dict[str, tuple[int, ...]] = {
    "ConstantOfShape": (0,),
    "Range": (0, 1, 2),
    "MelWeightMatrix": (0, 1, 2, 3, 4),
    "BlackmanWindow": (0,),
    "HammingWindow": (0,),
    "HannWindow": (0,),
}
"""The inputs of each operator that must be known at import time (by position)."""


def _known(ctx: NodeContext, index: int, what: str) -> np.ndarray:
    value = ctx.known(index)
    if value is None:
        raise ctx.error(
            f"{what} (input '{ctx.input_name(index)}') must be known at import time (an "
            "initializer, a Constant or computed from shapes): the result shape depends on it"
        )
    return value


def convert_constant_of_shape(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX ConstantOfShape: a tensor of the given shape filled with `value` (a
    one-element tensor, float32 0 by default)."""
    shape = _known(ctx, 0, "the shape")
    if shape.dtype.kind not in "iu" or shape.ndim != 1:
        raise ctx.error(
            f"the shape must be a 1-D integer tensor, got {shape.dtype}{list(shape.shape)}"
        )
    if np.any(shape < 0):
        raise ctx.error(f"the shape {shape.tolist()} has a negative dimension")
    value = ctx.attr("value")
    if value is None:
        value = np.zeros(1, dtype=np.float32)
    value = np.asarray(value)
    if value.size != 1:
        raise ctx.error(f"value must hold one element, got shape {list(value.shape)}")
    return [np.full([int(d) for d in shape], value.reshape(()), dtype=value.dtype)]


def convert_range(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Range(start, limit, delta): start, start + delta, ... up to (excluding)
    limit, with max(ceil((limit - start) / delta), 0) elements."""
    names = ("start", "limit", "delta")
    start, limit, delta = (_known(ctx, n, what) for n, what in enumerate(names))
    for what, value in (("start", start), ("limit", limit), ("delta", delta)):
        if value.size != 1:
            raise ctx.error(f"{what} must be a scalar, got shape {list(value.shape)}")
    dtype = start.dtype
    start, limit, delta = (v.reshape(()) for v in (start, limit, delta))
    if delta == 0:
        raise ctx.error("delta must not be 0")
    if dtype.kind in "iu":
        count = max(-(-(int(limit) - int(start)) // int(delta)), 0)
        return [(int(start) + int(delta) * np.arange(count, dtype=np.int64)).astype(dtype)]
    # start + n * delta, computed in float64 and rounded once (ONNX's reference)
    return [np.arange(float(start), float(limit), float(delta)).astype(dtype)]


def convert_mel_weight_matrix(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX MelWeightMatrix: the [dft_length / 2 + 1, num_mel_bins] matrix of triangular
    filters of peak 1, from scalars known at import time (`mel_weight_matrix`)."""
    names = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
    values = [_known(ctx, n, what) for n, what in enumerate(names)]
    for what, value in zip(names, values):
        if value.size != 1:
            raise ctx.error(f"{what} must be a scalar, got shape {list(value.shape)}")
    bins, dft_length, sample_rate, lower, upper = (v.reshape(()) for v in values)
    if bins.dtype.kind not in "iu" or dft_length.dtype.kind not in "iu":
        raise ctx.error("num_mel_bins and dft_length must be integers")
    if int(bins) < 1 or int(dft_length) < 1 or sample_rate <= 0:
        raise ctx.error("num_mel_bins, dft_length and sample_rate must be positive")
    try:
        dtype = helper.tensor_dtype_to_np_dtype(int(ctx.attr("output_datatype", 1)))
    except (KeyError, ValueError, TypeError):
        raise ctx.error(f"output_datatype={ctx.attr('output_datatype')} is not a tensor type") from None
    weights = mel_weight_matrix(int(bins), int(dft_length), sample_rate, lower, upper)
    if weights is None:
        raise ctx.error("the mel filters reach past the spectrum (upper_edge_hertz too high)")
    return [weights.astype(dtype)]


def convert_window(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX HannWindow, HammingWindow and BlackmanWindow: the window of the size known
    at import time, computed in float64 as ONNX's reference does and then converted to
    `output_datatype` (truncated for an integer type). ONNX's function bodies compute
    them from float32 coefficients, whose sum at the peak of a Blackman window falls
    just short of 1: an integer window would lose its peak."""
    size = _known(ctx, 0, "size")
    if size.size != 1 or size.dtype.kind not in "iu":
        raise ctx.error(f"size must be an integer scalar, got {size.dtype} of shape {list(size.shape)}")
    size = int(size.reshape(()))
    if size < 0:
        raise ctx.error(f"size {size} is negative")
    try:
        dtype = helper.tensor_dtype_to_np_dtype(int(ctx.attr("output_datatype", 1)))
    except (KeyError, ValueError, TypeError):
        raise ctx.error(f"output_datatype={ctx.attr('output_datatype')} is not a tensor type") from None
    from strato.runtime.shape_ops import window_values

    periodic = int(ctx.attr("periodic", 1)) == 1
    return [window_values(ctx.op_type, size, periodic).astype(dtype)]


def mel_weight_matrix(
    num_mel_bins: int,
    dft_length: int,
    sample_rate: np.ndarray,
    lower_edge_hertz: np.ndarray,
    upper_edge_hertz: np.ndarray,
) -> np.ndarray | None:
    """Mel filters as ONNX's reference builds them, in float64 (None when a filter
    reaches past the spectrum).

    num_mel_bins + 2 points equally spaced on the mel scale (mel(f) = 2595 log10(1 +
    f / 700)) between the two edges, the step being the range over num_mel_bins + 2,
    each taken back to hertz and to a spectrum bin floor((dft_length + 1) f /
    sample_rate). Filter i rises linearly from 0 at point i to 1 at point i + 1 and
    falls to 0 at point i + 2; a filter whose first two points share a bin is 1 there.
    The arithmetic runs in the element types of the frequencies given, as the
    reference's does, so that the bins land where its bins land."""
    spectrum_bins = dft_length // 2 + 1
    points = np.arange(num_mel_bins + 2)
    low_mel = 2595 * np.log1p(lower_edge_hertz / 700) / np.log(10)
    high_mel = 2595 * np.log1p(upper_edge_hertz / 700) / np.log(10)
    step = (high_mel - low_mel) / points.shape[0]
    hertz = 700 * np.expm1((points * step + low_mel) / 2595 * np.log(10))
    edges = (((dft_length + 1) * hertz) // sample_rate).astype(np.int64)
    if edges.min() < 0 or edges.max() >= spectrum_bins:
        return None
    left, center, right = edges[:-2], edges[1:-1], edges[2:]
    j = np.arange(spectrum_bins)[:, None]
    rising = np.where(center > left, (j - left) / np.maximum(center - left, 1), 1.0)
    falling = (right - j) / np.maximum(right - center, 1)
    on_rise = (j >= left) & (j <= center)
    on_fall = (j >= center) & (j < right)
    return np.where(on_fall, falling, np.where(on_rise, rising, 0.0))


def convert_eye_like(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX EyeLike: ones on diagonal k of a matrix shaped like the (2-D) input, zeros
    elsewhere, of element type `dtype` (the input's by default); it depends on the
    input's shape only, so it is a constant."""
    shape = shape_of(ctx.value(0))
    if len(shape) != 2:
        raise ctx.error(f"input must be 2-D, got shape {list(shape)}")
    value = ctx.value(0)
    dtype = value.dtype if isinstance(value, np.ndarray) else numpy_dtype(value.type)
    if ctx.has_attr("dtype"):
        try:
            dtype = helper.tensor_dtype_to_np_dtype(int(ctx.attr("dtype")))
        except (KeyError, ValueError, TypeError):
            raise ctx.error(f"dtype={ctx.attr('dtype')} is not a tensor type") from None
    return [np.eye(*shape, k=int(ctx.attr("k", 0)), dtype=dtype)]
