"""Converters for ONNX reductions: ReduceSum, ReduceMean, ReduceMax.

The axes are an attribute (ReduceSum before opset 13, the others before 18) or an input
known at import time. No axes (or an empty list) means every axis, unless
`noop_with_empty_axes` is set, which makes the node the identity:

    ReduceMean(x: [2, 3, 4], axes=[-1], keepdims=1)  ->  graph.reduce_mean %x [2] keepdims
    ReduceSum(x: [2, 3])                              ->  graph.reduce_sum %x [0, 1] keepdims
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from strato.dialects import graph
from strato.frontends.onnx.conversion import ImportedValue, NodeContext
from strato.frontends.onnx.convert_layout import axes_of, input_shape, normalize_axes

IMPORT_TIME_INPUTS: dict[str, tuple[int, ...]] = {
    "ReduceSum": (1,),
    "ReduceMean": (1,),
    "ReduceMax": (1,),
}
"""The inputs of each operator that must be known at import time (by position)."""


def _reduction(
    op_class: type[graph.ReductionOp],
) -> Callable[[NodeContext], list[ImportedValue]]:
    def convert(ctx: NodeContext) -> list[ImportedValue]:
        shape = input_shape(ctx, 0)
        keepdims = ctx.flag_attr("keepdims", 1)
        axes = axes_of(ctx, 1)
        known = ctx.known(0)
        x = known if known is not None else ctx.operand(0)
        if not axes:
            if ctx.flag_attr("noop_with_empty_axes"):
                return [x]
            axes = list(range(len(shape)))
        axes = sorted(normalize_axes(ctx, axes, len(shape)))
        if not axes:  # a rank-0 input: reducing nothing
            return [x]
        if isinstance(x, np.ndarray):
            reduced = op_class.reduce(x, tuple(axes))
            result = np.asarray(reduced, dtype=x.dtype)
            result = result.reshape(graph.reduced_shape(shape, axes, keepdims))
            return [result]
        return [ctx.emit(op_class(x, axes, keepdims)).results[0]]

    kind = op_class.name.split("_", 1)[1].capitalize()
    convert.__name__ = f"convert_reduce_{kind.lower()}"
    convert.__doc__ = f"ONNX Reduce{kind} -> {op_class.name}."
    return convert


convert_reduce_sum = _reduction(graph.ReduceSumOp)
convert_reduce_mean = _reduction(graph.ReduceMeanOp)
convert_reduce_max = _reduction(graph.ReduceMaxOp)
