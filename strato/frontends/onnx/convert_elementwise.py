"""Converters for ONNX element-wise operators: Add, Mul, Relu.

Binary operators follow numpy broadcasting in ONNX (opset >= 7), as `graph.add` and
`graph.mul` do; when every input is known at import time the result is folded.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from strato.dialects import graph
from strato.frontends.onnx.conversion import ImportedValue, NodeContext, as_float32


def _binary(
    op_class: type[graph.BroadcastBinaryOp], fold: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> Callable[[NodeContext], list[ImportedValue]]:
    def convert(ctx: NodeContext) -> list[ImportedValue]:
        lhs, rhs = ctx.value(0), ctx.value(1)
        ctx.broadcast(ctx.shape(0), ctx.shape(1))
        if isinstance(lhs, np.ndarray) and isinstance(rhs, np.ndarray):
            return [as_float32(fold(lhs, rhs))]
        return [ctx.emit(op_class(ctx.operand(0), ctx.operand(1))).results[0]]

    convert.__name__ = f"convert_{op_class.name.split('.')[-1]}"
    convert.__doc__ = f"ONNX {convert.__name__[8:].capitalize()} -> {op_class.name}."
    return convert


convert_add = _binary(graph.AddOp, np.add)
convert_mul = _binary(graph.MulOp, np.multiply)


def convert_relu(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Relu -> graph.relu."""
    x = ctx.value(0)
    if isinstance(x, np.ndarray):
        return [as_float32(np.maximum(x, 0))]
    return [ctx.emit(graph.ReluOp(x)).results[0]]
