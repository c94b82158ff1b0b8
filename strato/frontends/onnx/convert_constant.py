"""Converter for the ONNX Constant operator: its value is known at import time.

The value stays a numpy array, like an initializer; it becomes a `graph.constant` only
where an op needs it as an operand.
"""

from __future__ import annotations

import numpy as np

from strato.frontends.onnx.conversion import ImportedValue, NodeContext


def convert_constant(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Constant (value, value_float, value_floats, value_int(s)) -> an array."""
    if ctx.has_attr("value"):
        return [np.ascontiguousarray(ctx.attr("value"))]
    if ctx.has_attr("value_float"):
        return [np.array(ctx.attr("value_float"), dtype=np.float32)]
    if ctx.has_attr("value_floats"):
        return [np.array(ctx.attr("value_floats"), dtype=np.float32)]
    if ctx.has_attr("value_int"):
        return [np.array(ctx.attr("value_int"), dtype=np.int64)]
    if ctx.has_attr("value_ints"):
        return [np.array(ctx.attr("value_ints"), dtype=np.int64)]
    names = ", ".join(attr.name for attr in ctx.node.attribute) or "none"
    raise ctx.error(f"unsupported form of constant (attributes: {names})")
