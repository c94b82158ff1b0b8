"""Converters for ONNX's quantization operators, as compositions of graph ops.

QuantizeLinear: round(x / scale) (halves to even) plus the zero point, clipped into the
integer type's range and cast to it (per tensor, per axis, or blocked along an axis);
to an 8-bit or 4-bit float, x / scale cast with ONNX's saturation.
DequantizeLinear: (x - zero point) times the scale, in f32 (f64 for int32 x, as numpy
promotes), cast to the scale's type or `output_dtype`.
DynamicQuantizeLinear: the uint8 scale and zero point from the range of x widened to
hold 0, then QuantizeLinear's arithmetic.
MatMulInteger, ConvInteger: the zero-point-shifted operands multiplied by graph.matmul /
graph.conv and cast to int32, in f32 when weights known at import time bound every
partial sum below 2**24 and in f64 otherwise (where the sums of products of 8- and
16-bit integers are exact).
QLinearMatMul, QLinearConv: that int32 accumulator times a_scale * b_scale / y_scale in
the scales' float type, plus the output zero point, rounded half to even and saturated.

Every computation follows ONNX's reference operators step by step (the types of the
intermediate values included), so strato and the reference agree bit for bit.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import helper
from xdsl.ir import SSAValue

from strato.dialects import graph
from strato.dialects.graph.quant import (
    PACK,
    folded_bias,
    pack_conv_weight,
    pack_dense_weight,
    sums_fit_int32,
)
from strato.dialects.tensor_types import element_type_of, numpy_dtype
from strato.frontends.onnx.conversion import ImportedValue, NodeContext, shape_of

_QUANTIZED_INTEGERS = (
    "int2", "uint2", "int4", "uint4", "int8", "uint8", "int16", "uint16"
)  # fmt: skip


def _integer_range(dtype: np.dtype) -> tuple[int, int] | None:
    """The range of a quantized integer type (numpy's or ml_dtypes' 2- and 4-bit
    ones), None for any other type."""
    if dtype.name not in _QUANTIZED_INTEGERS:
        return None
    info = ml_dtypes.iinfo(dtype)
    return int(info.min), int(info.max)


def _is_integer(dtype: np.dtype) -> bool:
    return dtype.kind in "iu" or _integer_range(dtype) is not None


def _dtype(value: ImportedValue) -> np.dtype:
    if isinstance(value, np.ndarray):
        return value.dtype
    return numpy_dtype(value.type.element_type)


def _ssa(ctx: NodeContext, value: ImportedValue) -> SSAValue:
    if isinstance(value, np.ndarray):
        return ctx.materialize(value)
    return value


def _cast(ctx: NodeContext, value: ImportedValue, dtype: np.dtype) -> ImportedValue:
    if _dtype(value) == dtype:
        return value
    if isinstance(value, np.ndarray):
        return value.astype(dtype)
    return ctx.emit(graph.CastOp(value, element_type_of(dtype))).results[0]


def _binary(ctx: NodeContext, op_class: type, lhs: ImportedValue, rhs: ImportedValue):
    if isinstance(lhs, np.ndarray) and isinstance(rhs, np.ndarray):
        return np.asarray(op_class.compute(lhs, rhs), dtype=lhs.dtype)
    return ctx.emit(op_class(_ssa(ctx, lhs), _ssa(ctx, rhs))).results[0]


def _reshape(ctx: NodeContext, value: ImportedValue, shape: list[int]) -> ImportedValue:
    if isinstance(value, np.ndarray):
        return value.reshape(shape)
    return ctx.emit(graph.ReshapeOp(value, shape)).results[0]


def _axis(ctx: NodeContext, rank: int) -> int:
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis < max(rank, 1):
        raise ctx.error(f"attribute axis={axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def _broadcastable(
    ctx: NodeContext, value: ImportedValue, x_shape: tuple[int, ...], what: str
) -> ImportedValue:
    """A scale or zero point as an operand that broadcasts to x: a scalar or a one-element
    tensor per tensor, a 1-D tensor along `axis`, or (with `block_size`) a tensor of x's
    rank whose entries each cover block_size elements along `axis`."""
    shape = shape_of(value)
    rank = len(x_shape)
    block_size = int(ctx.attr("block_size", 0))
    if block_size < 0:
        raise ctx.error(f"attribute block_size={block_size} must not be negative")
    if int(np.prod(shape, dtype=np.int64)) == 1 and len(shape) <= 1:
        return _reshape(ctx, value, []) if shape else value
    axis = _axis(ctx, rank)
    if not block_size:
        if len(shape) != 1 or shape[0] != x_shape[axis]:
            raise ctx.error(
                f"{what} of shape {list(shape)} is neither per tensor nor per axis "
                f"{axis} of the input's shape {list(x_shape)}"
            )
        dims = [1] * rank
        dims[axis] = shape[0]
        return _reshape(ctx, value, dims)
    expected = list(x_shape)
    expected[axis] = -(-x_shape[axis] // block_size)
    if list(shape) != expected:
        raise ctx.error(
            f"{what} of shape {list(shape)} does not block the input's shape "
            f"{list(x_shape)} by {block_size} along axis {axis} (expected {expected})"
        )
    positions = np.arange(x_shape[axis], dtype=np.int64) // block_size
    if isinstance(value, np.ndarray):
        return np.take(value, positions, axis=axis)
    return ctx.emit(graph.GatherOp(value, ctx.materialize(positions), axis)).results[0]


def _optional(ctx: NodeContext, index: int) -> ImportedValue | None:
    return ctx.value(index) if ctx.has_input(index) else None


def _saturated(
    ctx: NodeContext,
    rounded: ImportedValue,
    zero_point: ImportedValue | None,
    target: np.dtype,
) -> ImportedValue:
    """round(...) plus the zero point, clipped into `target`'s range, as `target`: added
    in f32 (f64 when the rounded value is f64), exact for every value that does not
    saturate."""
    wide = (
        np.dtype(np.float64) if _dtype(rounded) == np.float64 else np.dtype(np.float32)
    )
    value = _cast(ctx, rounded, wide)
    if zero_point is not None:
        value = _binary(ctx, graph.AddOp, value, _cast(ctx, zero_point, wide))
    low, high = _integer_range(target)
    if isinstance(value, np.ndarray):
        return np.asarray(np.clip(value, low, high)).astype(target)  # 0-d stays an array
    value = ctx.emit(graph.ClipOp(value, float(low), float(high))).results[0]
    return _cast(ctx, value, target)


def _type_attr(ctx: NodeContext, name: str) -> np.dtype | None:
    """The element type an attribute such as `output_dtype` names, None when unset."""
    value = int(ctx.attr(name, 0))
    if not value:
        return None
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(value))
    except (KeyError, ValueError, TypeError):
        raise ctx.error(
            f"attribute {name}={value} is not a tensor element type"
        ) from None


def _quantize_target(ctx: NodeContext, zero_point: ImportedValue | None) -> np.dtype:
    output_dtype = _type_attr(ctx, "output_dtype")
    if zero_point is not None:
        target = _dtype(zero_point)
        if output_dtype is not None and output_dtype != target:
            raise ctx.error(
                f"attribute output_dtype ({output_dtype}) differs from the zero point's "
                f"type {target}"
            )
        return target
    return output_dtype if output_dtype is not None else np.dtype(np.uint8)


def _axis_parameter(
    ctx: NodeContext, value: ImportedValue, x_shape: tuple[int, ...]
) -> ImportedValue | None:
    """A scale or zero point as a graph.quantize / graph.dequantize operand: rank 0 per
    tensor, 1-D along `axis`; None when it is neither (blocked), for the composition."""
    shape = shape_of(value)
    if int(np.prod(shape, dtype=np.int64)) == 1 and len(shape) <= 1:
        return _ssa(ctx, _reshape(ctx, value, []))
    rank = len(x_shape)
    axis = int(ctx.attr("axis", 1))
    if not rank or not -rank <= axis < rank:
        return None
    if len(shape) != 1 or shape[0] != x_shape[axis % rank]:
        return None
    return _ssa(ctx, value)


def _quantize_op(ctx: NodeContext) -> ImportedValue | None:
    """QuantizeLinear of a run-time f32 tensor to int8 / uint8, per tensor or per axis:
    one graph.quantize (which graph-fold-qdq can fold), else None."""
    x = ctx.value(0)
    if isinstance(x, np.ndarray) or _dtype(x) != np.float32:
        return None
    if int(ctx.attr("block_size", 0)) or _type_attr(ctx, "precision") is not None:
        return None
    if _dtype(ctx.value(1)) != np.float32:
        return None
    zero_point = _optional(ctx, 2)
    target = _quantize_target(ctx, zero_point)
    if target not in (np.int8, np.uint8):
        return None
    if zero_point is None:
        zero_point = np.zeros((), target)
    parameters = _scale_zero_axis(ctx, zero_point, shape_of(x))
    if parameters is None:
        return None
    scale, zero, axis = parameters
    op = graph.QuantizeOp(x, scale, zero, element_type_of(target), axis)
    return ctx.emit(op).results[0]


def _scale_zero_axis(ctx: NodeContext, zero_point, x_shape):
    """The scale (input 1) and `zero_point` as graph.quantize / graph.dequantize take
    them, per tensor or along the node's axis, with that axis; None when they are
    neither."""
    scale = _axis_parameter(ctx, ctx.value(1), x_shape)
    zero = _axis_parameter(ctx, zero_point, x_shape)
    if scale is None or zero is None:
        return None
    return scale, zero, int(ctx.attr("axis", 1)) % max(len(x_shape), 1)


def _dequantize_op(ctx: NodeContext) -> ImportedValue | None:
    """DequantizeLinear of int8 / uint8 (or int32 with a zero point) to f32, per tensor
    or per axis: one graph.dequantize, else None."""
    x = ctx.value(0)
    zero_point = _optional(ctx, 2)
    dtype = _dtype(x)
    if dtype not in (np.int8, np.uint8) and not (dtype == np.int32 and zero_point is not None):
        return None
    if int(ctx.attr("block_size", 0)) or _dtype(ctx.value(1)) != np.float32:
        return None
    result = _type_attr(ctx, "output_dtype")
    if result is not None and result != np.float32:
        return None
    if zero_point is None:
        zero_point = np.zeros((), dtype)
    if _dtype(zero_point) != dtype:
        return None
    parameters = _scale_zero_axis(ctx, zero_point, shape_of(x))
    if parameters is None:
        return None
    scale, zero, axis = parameters
    op = graph.DequantizeOp(_ssa(ctx, x), scale, zero, element_type_of(np.dtype(np.float32)), axis)
    return ctx.emit(op).results[0]


def convert_quantize_linear(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX QuantizeLinear (opsets 10 to 25) -> div, round, add, clip and cast."""
    direct = _quantize_op(ctx)
    if direct is not None:
        return [direct]
    x = ctx.value(0)
    x_shape = shape_of(x)
    scale = _broadcastable(ctx, ctx.value(1), x_shape, "y_scale")
    zero_point = _optional(ctx, 2)
    target = _quantize_target(ctx, zero_point)
    precision = _type_attr(ctx, "precision")
    if precision is not None:
        if precision.kind != "f":
            raise ctx.error(f"attribute precision ({precision}) is not a float type")
        wide = precision
        x, scale = _cast(ctx, x, wide), _cast(ctx, scale, wide)
    elif _dtype(scale) != _dtype(x):
        raise ctx.error(
            f"y_scale has element type {_dtype(scale)} and x {_dtype(x)}; "
            "QuantizeLinear takes one float type"
        )
    elif _dtype(x).kind in "iu":
        # int32 x and scale: the quotient is a real one (numpy's true division, as in
        # ONNX's reference), not an integer division.
        x, scale = _cast(ctx, x, np.dtype(np.float64)), _cast(ctx, scale, np.dtype(np.float64))
    quotient = _binary(ctx, graph.DivOp, x, scale)
    if _integer_range(target) is not None:
        if zero_point is not None:
            zero_point = _broadcastable(ctx, zero_point, x_shape, "y_zero_point")
        if isinstance(quotient, np.ndarray):
            rounded: ImportedValue = np.asarray(np.rint(quotient))  # 0-d stays an array
        else:
            rounded = ctx.emit(graph.RoundOp(quotient)).results[0]
        return [_saturated(ctx, rounded, zero_point, target)]
    try:
        element = element_type_of(target)
    except (KeyError, ValueError, TypeError):
        element = None
    if element is None or target.kind not in "fV" or target.itemsize != 1:
        raise ctx.error(f"quantizing to {target} is not supported")
    saturate = ctx.flag_attr("saturate", 1)
    if target.name == "float4_e2m1fn" and zero_point is not None:
        zero_point = _broadcastable(ctx, zero_point, x_shape, "y_zero_point")
        quotient = _binary(
            ctx, graph.AddOp, quotient, _cast(ctx, zero_point, _dtype(quotient))
        )
    quotient = _ssa(ctx, _cast(ctx, quotient, np.dtype(np.float32)))
    return [ctx.emit(graph.CastOp(quotient, element, saturate=saturate)).results[0]]


def convert_dequantize_linear(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX DequantizeLinear (opsets 10 to 25) -> cast, sub, mul and cast."""
    direct = _dequantize_op(ctx)
    if direct is not None:
        return [direct]
    x = ctx.value(0)
    x_shape = shape_of(x)
    scale = ctx.value(1)
    result = _type_attr(ctx, "output_dtype")
    if result is None:
        result = _dtype(scale)
    if result.kind not in "fV" or _integer_range(result) is not None:
        raise ctx.error(f"dequantizing to {result} is not supported (a float type is)")
    scale = _broadcastable(ctx, scale, x_shape, "x_scale")
    zero_point = _optional(ctx, 2)
    value = _cast(ctx, x, np.dtype(np.float32))
    is_integer = _is_integer(_dtype(x))
    if zero_point is not None and is_integer:
        if _dtype(zero_point) != _dtype(x):
            raise ctx.error(
                f"x_zero_point has element type {_dtype(zero_point)} and x {_dtype(x)}"
            )
        zero_point = _broadcastable(ctx, zero_point, x_shape, "x_zero_point")
        # numpy subtracts an int32 zero point from the f32 x in f64
        wide = np.dtype(np.float64 if _dtype(x).itemsize == 4 else np.float32)
        value = _binary(
            ctx, graph.SubOp, _cast(ctx, value, wide), _cast(ctx, zero_point, wide)
        )
    elif (
        zero_point is not None
        and isinstance(zero_point, np.ndarray)
        and (zero_point.astype(np.float32) != 0).any()
    ):
        raise ctx.error(f"x_zero_point of a {_dtype(x)} input must be 0")
    try:
        product = np.result_type(_dtype(value), _dtype(scale))
    except TypeError:
        product = np.dtype(np.float32)
    value = _binary(
        ctx, graph.MulOp, _cast(ctx, value, product), _cast(ctx, scale, product)
    )
    return [_cast(ctx, value, result)]


def convert_dynamic_quantize_linear(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX DynamicQuantizeLinear -> y (uint8), y_scale and y_zero_point: the range of x
    widened to hold 0 over 255 (1/255 when x is all zeros), the zero point
    clip(-min / scale, 0, 255) rounded half to even."""
    x = ctx.value(0)
    if _dtype(x) != np.float32:
        raise ctx.error(
            f"x has element type {_dtype(x)}; DynamicQuantizeLinear takes f32"
        )
    if isinstance(x, np.ndarray):
        high = np.float32(max(0.0, float(np.max(x)))) if x.size else np.float32(0)
        low = np.float32(min(0.0, float(np.min(x)))) if x.size else np.float32(0)
        scale = np.float32(1.0 if high == low else high - low) / np.float32(255)
        zero = np.rint(np.clip(np.float32(0) - low / scale, 0, 255))
        y = np.clip(np.rint(x / scale) + zero, 0, 255).astype(np.uint8)
        return [y, np.asarray(scale, np.float32), np.asarray(zero).astype(np.uint8)]
    axes = list(range(len(shape_of(x))))
    zero_f32 = ctx.materialize(np.zeros((), np.float32))
    high = ctx.emit(graph.ReduceMaxOp(x, axes, keepdims=False)).results[0]
    low = ctx.emit(graph.ReduceMinOp(x, axes, keepdims=False)).results[0]
    high = ctx.emit(graph.MaximumOp(high, zero_f32)).results[0]
    low = ctx.emit(graph.MinimumOp(low, zero_f32)).results[0]
    span = ctx.emit(graph.SubOp(high, low)).results[0]
    empty = ctx.emit(graph.EqualOp(high, low)).results[0]
    span = ctx.emit(
        graph.WhereOp(empty, ctx.materialize(np.ones((), np.float32)), span)
    ).results[0]
    scale = ctx.emit(
        graph.DivOp(span, ctx.materialize(np.asarray(255, np.float32)))
    ).results[0]
    shift = ctx.emit(graph.DivOp(low, scale)).results[0]
    initial = ctx.emit(graph.SubOp(zero_f32, shift)).results[0]
    initial = ctx.emit(graph.ClipOp(initial, 0.0, 255.0)).results[0]
    zero = ctx.emit(graph.RoundOp(initial)).results[0]
    quotient = ctx.emit(graph.DivOp(x, scale)).results[0]
    rounded = ctx.emit(graph.RoundOp(quotient)).results[0]
    y = _saturated(ctx, rounded, zero, np.dtype(np.uint8))
    return [y, scale, _cast(ctx, zero, np.dtype(np.uint8))]


# -- integer products ---------------------------------------------------------------


def _shifted(
    ctx: NodeContext,
    index: int,
    zero_index: int,
    zero_axis: int | None,
) -> ImportedValue:
    """Input `index` minus its optional zero point (input `zero_index`), in f64. A 1-D
    zero point of more than one element is per `zero_axis` (A's rows, B's columns, W's
    output channels)."""
    value = ctx.value(index)
    if _dtype(value).kind not in "iu" or _dtype(value).itemsize > 2:
        raise ctx.error(
            f"input {index} has element type {_dtype(value)}; {ctx.op_type} takes 8- or "
            "16-bit integers"
        )
    shifted = _cast(ctx, value, np.dtype(np.float64))
    if not ctx.has_input(zero_index):
        return shifted
    zero_point = ctx.value(zero_index)
    shape = shape_of(value)
    zero_shape = shape_of(zero_point)
    size = int(np.prod(zero_shape, dtype=np.int64))
    if size == 1:
        zero_point = _reshape(ctx, zero_point, [])
    elif (
        zero_axis is not None
        and len(zero_shape) == 1
        and shape
        and (zero_shape[0] == shape[zero_axis])
    ):
        dims = [1] * len(shape)
        dims[zero_axis] = size
        zero_point = _reshape(ctx, zero_point, dims)
    elif (
        zero_axis is not None
        and len(zero_shape) == len(shape)
        and all(z in (1, s) for z, s in zip(zero_shape, shape))
    ):
        pass  # already broadcasts along the axis (A's [M, 1], B's [1, N])
    else:
        raise ctx.error(
            f"zero point of shape {list(zero_shape)} does not match input {index} of "
            f"shape {list(shape)} per tensor or per {'row' if zero_axis == -2 else 'column'}"
        )
    return _binary(
        ctx, graph.SubOp, shifted, _cast(ctx, zero_point, np.dtype(np.float64))
    )


def _nested_product(
    ctx: NodeContext, op_type: str, operands: list[ImportedValue], attributes: dict
) -> ImportedValue:
    """The ONNX `op_type` node with this node's attributes over `operands`, converted as
    the importer converts that operator."""
    from strato.frontends.onnx.op_table import ONNX_CONVERTERS

    prefix = f"{ctx.node.output[0]}__{op_type.lower()}"
    names = []
    for position, operand in enumerate(operands):
        name = f"{prefix}_in{position}"
        ctx.bind(name, operand)
        names.append(name)
    node = helper.make_node(op_type, names, [f"{prefix}_out"], **attributes)
    inner = ctx.nested(node, ctx.opset())
    return ONNX_CONVERTERS[op_type](inner)[0]


_F32_INTEGERS = 2**24
"""Integers up to this magnitude are exact in f32."""


def _largest_shifted(
    ctx: NodeContext, value: ImportedValue, index: int, zero_index: int
) -> int:
    """A bound on |input `index` - its zero point| over every value the input can hold."""
    if isinstance(value, np.ndarray):
        return int(np.abs(value).max()) if value.size else 0
    info = np.iinfo(_dtype(ctx.value(index)))
    low, high = int(info.min), int(info.max)
    if not ctx.has_input(zero_index):
        return max(-low, high)
    zero_point = ctx.known(zero_index)
    if zero_point is None or not zero_point.size:
        return high - low
    return max(high - int(zero_point.min()), int(zero_point.max()) - low)


def _narrowed(
    ctx: NodeContext,
    lhs: ImportedValue,
    rhs: ImportedValue,
    lhs_bound: int,
    contraction: tuple[int, ...],
) -> tuple[ImportedValue, ImportedValue]:
    """The shifted operands in f32 when weights known at import time keep every partial
    sum of the product an integer below 2**24 (exact in f32: the largest |lhs| times the
    largest sum of |rhs| over the contracted axes), else in f64."""
    if not isinstance(rhs, np.ndarray) or not rhs.size:
        return lhs, rhs
    sums = np.abs(rhs).sum(axis=contraction)
    if lhs_bound * float(np.max(sums, initial=0.0)) >= _F32_INTEGERS:
        return lhs, rhs
    f32 = np.dtype(np.float32)
    return _cast(ctx, lhs, f32), _cast(ctx, rhs, f32)


def _integer_matmul(ctx: NodeContext, a, a_zero, b, b_zero) -> ImportedValue:
    """A - a_zero times B - b_zero, exact: in f32 when its sums stay below 2**24, else in
    f64, as a float value of integers."""
    lhs = _shifted(ctx, a, a_zero, -2)
    rhs = _shifted(ctx, b, b_zero, -1)
    if len(shape_of(lhs)) < 1 or len(shape_of(rhs)) < 1:
        raise ctx.error("operands must have rank >= 1")
    if isinstance(lhs, np.ndarray) and isinstance(rhs, np.ndarray):
        return np.matmul(lhs, rhs)
    contraction = (0,) if len(shape_of(rhs)) == 1 else (len(shape_of(rhs)) - 2,)
    bound = _largest_shifted(ctx, lhs, a, a_zero)
    lhs, rhs = _narrowed(ctx, lhs, rhs, bound, contraction)
    return _nested_product(ctx, "MatMul", [_ssa(ctx, lhs), _ssa(ctx, rhs)], {})


def _conv_attributes(ctx: NodeContext) -> dict:
    names = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
    return {name: ctx.attr(name) for name in names if ctx.has_attr(name)}


def _integer_conv(ctx: NodeContext, x, x_zero, w, w_zero) -> ImportedValue:
    lhs = _shifted(ctx, x, x_zero, None)
    rhs = _shifted(ctx, w, w_zero, 0)
    contraction = tuple(range(1, len(shape_of(rhs))))
    bound = _largest_shifted(ctx, lhs, x, x_zero)
    lhs, rhs = _narrowed(ctx, lhs, rhs, bound, contraction)
    return _nested_product(
        ctx, "Conv", [_ssa(ctx, lhs), _ssa(ctx, rhs)], _conv_attributes(ctx)
    )


def _as_int32(ctx: NodeContext, value: ImportedValue) -> ImportedValue:
    return _cast(ctx, value, np.dtype(np.int32))


# -- integer arithmetic (graph.qconv / graph.qdense) -------------------------------------
#
# When the weights are constant int8 with zero points 0 and the input's zero point is a
# constant (or, for MatMulInteger, a run-time scalar of a uint8 input), the products run
# as integer ops: uint8 input (int8 shifted by 128), the zero point folded into an int32
# bias with the weights' sums, exact int32 sums. Anything else keeps the float
# composition below.

_CHANNEL_MULTIPLE = PACK
"""Input channels of an integer convolution are padded to a multiple of this, so that
its weight can be packed (the bytes a dot-product step multiplies per output)."""


def _scalar_known(ctx: NodeContext, index: int, default: int = 0) -> int | None:
    """A constant one-element input as an int (`default` when absent), None otherwise."""
    if not ctx.has_input(index):
        return default
    value = ctx.known(index)
    if value is None or value.size != 1:
        return None
    return int(value.reshape(-1)[0])


def _zero_weights_zero_point(ctx: NodeContext, index: int) -> bool:
    if not ctx.has_input(index):
        return True
    value = ctx.known(index)
    return value is not None and not np.any(value)


def _as_uint8(ctx: NodeContext, x: SSAValue, zero: int) -> tuple[SSAValue, int]:
    """`x` as uint8 with its zero point: int8 shifted by 128 (x + 128)."""
    if _dtype(x) == np.uint8:
        return x, zero
    wide = _cast(ctx, x, np.dtype(np.int32))
    shifted = _binary(ctx, graph.AddOp, wide, np.asarray(128, np.int32))
    return _ssa(ctx, _cast(ctx, shifted, np.dtype(np.uint8))), zero + 128


def _qconv(ctx: NodeContext, bias: np.ndarray | None) -> SSAValue | None:
    """ConvInteger's / QLinearConv's product (inputs 0, 2, 3, 5 of QLinearConv or 0, 2,
    1, 3 of ConvInteger) as a graph.qconv plus the int32 `bias`, or None."""
    qlinear = ctx.op_type == "QLinearConv"
    x_index, x_zero_index, w_index, w_zero_index = (0, 2, 3, 5) if qlinear else (0, 2, 1, 3)
    x = ctx.value(x_index)
    w = ctx.known(w_index)
    if isinstance(x, np.ndarray) or _dtype(x) not in (np.int8, np.uint8):
        return None
    if w is None or w.dtype != np.int8 or w.ndim != 4 or len(shape_of(x)) != 4:
        return None
    if str(ctx.attr("auto_pad", "NOTSET")) not in ("NOTSET", "b'NOTSET'"):
        return None
    zero = _scalar_known(ctx, x_zero_index)
    if zero is None or not _zero_weights_zero_point(ctx, w_zero_index):
        return None
    groups = int(ctx.attr("group", 1))
    strides = [int(v) for v in ctx.attr("strides", [1, 1])]
    dilations = [int(v) for v in ctx.attr("dilations", [1, 1])]
    pads = [int(v) for v in ctx.attr("pads", [0, 0, 0, 0])]
    if groups < 1 or shape_of(x)[1] != w.shape[1] * groups or w.shape[0] % groups:
        return None
    if not sums_fit_int32(int(np.prod(w.shape[1:])), element_type_of(np.dtype(np.uint8)), element_type_of(w.dtype)):
        return None
    q, zero = _as_uint8(ctx, x, zero)
    folded = folded_bias(bias, w, zero)
    if folded is None:
        return None
    extra = -w.shape[1] % _CHANNEL_MULTIPLE
    if groups == 1 and extra:
        q = ctx.emit(graph.PadOp(q, [0, 0, 0, 0], [0, extra, 0, 0], value=float(zero))).results[0]
        w = np.pad(w, [(0, 0), (0, extra), (0, 0), (0, 0)])
    packed = groups == 1 and w.shape[1] % PACK == 0
    op = graph.QConvOp(
        q,
        ctx.materialize(pack_conv_weight(w) if packed else w),
        ctx.materialize(folded),
        strides=strides,
        padding=pads,
        dilations=dilations,
        groups=groups,
        pad_value=zero,
        packed=packed,
    )
    return ctx.emit(op).results[0]


def _qdense(ctx: NodeContext, a_index: int, a_zero_index: int, b_index: int, b_zero_index: int) -> SSAValue | None:
    """MatMulInteger's product A x B (constant 2-D int8 B, zero points 0) as a
    graph.qdense, A's zero point folded into a constant bias or, a run-time scalar,
    subtracted times B's column sums; None when it does not apply."""
    a = ctx.value(a_index)
    b = ctx.known(b_index)
    if isinstance(a, np.ndarray) or _dtype(a) not in (np.int8, np.uint8):
        return None
    if b is None or b.dtype != np.int8 or b.ndim != 2 or len(shape_of(a)) < 1:
        return None
    if shape_of(a)[-1] != b.shape[0] or not _zero_weights_zero_point(ctx, b_zero_index):
        return None
    if not sums_fit_int32(b.shape[0], element_type_of(np.dtype(np.uint8)), element_type_of(b.dtype)):
        return None
    weights = np.ascontiguousarray(b.T)
    zero = _scalar_known(ctx, a_zero_index)
    if zero is not None:
        q, zero = _as_uint8(ctx, a, zero)
        folded = folded_bias(None, weights, zero)
        if folded is None:
            return None
        return ctx.emit(_qdense_op(ctx, q, weights, folded)).results[0]
    dynamic = ctx.value(a_zero_index)
    if _dtype(a) != np.uint8 or _dtype(dynamic) != np.uint8 or int(np.prod(shape_of(dynamic))) != 1:
        return None
    product = ctx.emit(_qdense_op(ctx, a, weights, None)).results[0]
    sums = weights.astype(np.int64).sum(axis=1).astype(np.int32)
    zero_i32 = _cast(ctx, _reshape(ctx, dynamic, []), np.dtype(np.int32))
    correction = _binary(ctx, graph.MulOp, zero_i32, sums)
    return _ssa(ctx, _binary(ctx, graph.SubOp, product, correction))


def _qdense_op(ctx: NodeContext, x: SSAValue, weights: np.ndarray, bias: np.ndarray | None) -> graph.QDenseOp:
    """graph.qdense of `weights` [N, K], packed [K/4, N, 4] when 4 divides K."""
    packed = weights.shape[1] % PACK == 0
    constant = ctx.materialize(pack_dense_weight(weights) if packed else weights)
    bias_value = None if bias is None else ctx.materialize(bias)
    return graph.QDenseOp(x, constant, bias_value, packed=packed)


def _requantize_op(
    ctx: NodeContext, accumulator: SSAValue, scales: tuple[int, int, int], zero_index: int, axis: int
) -> SSAValue | None:
    """graph.requantize of an int32 product with constant scales (x and y per tensor,
    w per tensor or per output along `axis`), or None."""
    known = [ctx.known(index) for index in scales]
    if any(value is None or value.dtype != np.float32 for value in known):
        return None
    x_scale, w_scale, y_scale = known
    channels = shape_of(accumulator)[axis]
    if x_scale.size != 1 or y_scale.size != 1 or w_scale.size not in (1, channels):
        return None
    w_scale = np.broadcast_to(w_scale.reshape(-1), (channels,))
    multiplier = (x_scale.reshape(()) * w_scale) / y_scale.reshape(())
    target = _dtype(ctx.value(zero_index)) if ctx.has_input(zero_index) else _dtype(ctx.value(0))
    if target not in (np.int8, np.uint8):
        return None
    zero = ctx.known(zero_index) if ctx.has_input(zero_index) else np.zeros((), target)
    if zero is None or zero.size != 1:
        return None
    op = graph.RequantizeOp(
        accumulator,
        ctx.materialize(multiplier.astype(np.float32)),
        ctx.materialize(zero.reshape(()).astype(target)),
        element_type_of(target),
        axis % len(shape_of(accumulator)),
        wide=True,  # the reference's QLinearConv / QLinearMatMul compute in f64
    )
    return ctx.emit(op).results[0]


def convert_matmul_integer(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX MatMulInteger -> (A - a_zero_point) x (B - b_zero_point) as int32."""
    direct = _qdense(ctx, 0, 2, 1, 3)
    if direct is not None:
        return [direct]
    return [_as_int32(ctx, _integer_matmul(ctx, 0, 2, 1, 3))]


def convert_conv_integer(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX ConvInteger -> conv of (x - x_zero_point) and (w - w_zero_point) as int32."""
    direct = _qconv(ctx, None)
    if direct is not None:
        return [direct]
    return [_as_int32(ctx, _integer_conv(ctx, 0, 2, 1, 3))]


def _requantized(
    ctx: NodeContext,
    accumulator: ImportedValue,
    scales: tuple[ImportedValue, ImportedValue, ImportedValue],
    per_channel_axis: int | None,
    zero_point: ImportedValue | None,
    target: np.dtype,
) -> ImportedValue:
    """int32 accumulator times (a_scale * b_scale / y_scale), computed in the scales'
    type as the reference computes it, plus the zero point, rounded and saturated."""
    a_scale, b_scale, y_scale = scales
    float_type = _dtype(a_scale)
    if float_type.kind != "f":
        raise ctx.error(f"scales have element type {float_type}; expected a float type")
    shape = shape_of(accumulator)
    b_size = int(np.prod(shape_of(b_scale), dtype=np.int64))
    if b_size == 1:
        b_scale = _reshape(ctx, b_scale, [])
    elif (
        per_channel_axis is not None
        and len(shape_of(b_scale)) == 1
        and (b_size == shape[per_channel_axis])
    ):
        dims = [1] * len(shape)
        dims[per_channel_axis] = b_size
        b_scale = _reshape(ctx, b_scale, dims)
    else:
        raise ctx.error(
            f"scale of shape {list(shape_of(b_scale))} is not per tensor or per channel"
        )
    for name, scale in (("a", a_scale), ("y", y_scale)):
        if int(np.prod(shape_of(scale), dtype=np.int64)) != 1:
            raise ctx.error(
                f"{name} scale of shape {list(shape_of(scale))} must be a scalar"
            )
    a_scale, y_scale = _reshape(ctx, a_scale, []), _reshape(ctx, y_scale, [])
    b_scale = _cast(ctx, b_scale, float_type)
    y_scale = _cast(ctx, y_scale, float_type)
    multiplier = _binary(
        ctx, graph.DivOp, _binary(ctx, graph.MulOp, a_scale, b_scale), y_scale
    )
    # the reference multiplies its int32 accumulator by a float array: float64
    product_type = np.dtype(np.float64)
    value = _binary(
        ctx,
        graph.MulOp,
        _cast(ctx, accumulator, product_type),
        _cast(ctx, multiplier, product_type),
    )
    if zero_point is not None:
        if int(np.prod(shape_of(zero_point), dtype=np.int64)) != 1:
            raise ctx.error("y_zero_point must be a scalar")
        zero_point = _reshape(ctx, zero_point, [])
        value = _binary(ctx, graph.AddOp, value, _cast(ctx, zero_point, product_type))
    if isinstance(value, np.ndarray):
        rounded: ImportedValue = np.rint(value)
    else:
        rounded = ctx.emit(graph.RoundOp(value)).results[0]
    return _saturated(ctx, rounded, None, target)


def _quantized_type(ctx: NodeContext, value: ImportedValue, what: str) -> np.dtype:
    dtype = _dtype(value)
    if dtype not in (np.int8, np.uint8):
        raise ctx.error(f"{what} has element type {dtype}; expected int8 or uint8")
    return dtype


def convert_qlinear_matmul(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX QLinearMatMul -> MatMulInteger's product, requantized to y's type."""
    direct = _qdense(ctx, 0, 2, 3, 5)
    if direct is not None:
        requantized = _requantize_op(ctx, direct, (1, 4, 6), 7, -1)
        if requantized is not None:
            return [requantized]
    accumulator = _integer_matmul(ctx, 0, 2, 3, 5)
    y_zero = _optional(ctx, 7)
    target = _quantized_type(ctx, y_zero if y_zero is not None else ctx.value(0), "y")
    scales = (ctx.value(1), ctx.value(4), ctx.value(6))
    return [_requantized(ctx, accumulator, scales, -1, y_zero, target)]


def convert_qlinear_conv(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX QLinearConv -> ConvInteger's product plus the int32 bias, requantized."""
    bias = ctx.known(8) if ctx.has_input(8) else None
    if not ctx.has_input(8) or (bias is not None and bias.dtype == np.int32 and bias.ndim == 1):
        direct = _qconv(ctx, bias)
        if direct is not None:
            requantized = _requantize_op(ctx, direct, (1, 4, 6), 7, 1)
            if requantized is not None:
                return [requantized]
    accumulator = _integer_conv(ctx, 0, 2, 3, 5)
    if ctx.has_input(8):
        bias = ctx.value(8)
        if _dtype(bias) != np.int32 or len(shape_of(bias)) != 1:
            raise ctx.error("bias B must be a 1-D int32 tensor")
        dims = [1] * len(shape_of(accumulator))
        dims[1] = shape_of(bias)[0]
        bias = _reshape(ctx, _cast(ctx, bias, np.dtype(np.float64)), dims)
        accumulator = _cast(ctx, accumulator, np.dtype(np.float64))
        accumulator = _binary(ctx, graph.AddOp, accumulator, bias)
    y_zero = _optional(ctx, 7)
    target = _quantized_type(ctx, y_zero if y_zero is not None else ctx.value(0), "y")
    scales = (ctx.value(1), ctx.value(4), ctx.value(6))
    return [_requantized(ctx, accumulator, scales, 1, y_zero, target)]
