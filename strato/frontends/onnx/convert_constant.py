"""Converter for the ONNX Constant operator: its value is known at import time.

The value stays a numpy array, like an initializer; it becomes a `graph.constant` only
where an op needs it as an operand.
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
