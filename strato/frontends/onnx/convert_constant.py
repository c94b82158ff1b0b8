"""Converters for the ONNX operators whose value is known at import time: Constant,
ConstantOfShape (of a known shape) and Range (of known bounds).

The value stays a numpy array, like an initializer; it becomes a `graph.constant` only
where an op needs it as an operand. ConstantOfShape and Range have data-dependent
result shapes, so strato, which compiles static shapes, needs their inputs at import
time (torch's exporters compute them from Shape, which is static here).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from strato.frontends.onnx.conversion import ImportedValue, NodeContext


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
