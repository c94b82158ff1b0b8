"""Converters for ONNX reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin,
ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSumExp, ArgMax/ArgMin, TopK,
CumSum and CumProd; DFT and STFT, summed transforms along one axis.

The axes are an attribute (ReduceSum before opset 13, the others before 18) or an input
known at import time. No axes (or an empty list) means every axis, unless
`noop_with_empty_axes` is set, which makes the node the identity:

    ReduceMean(x: [2, 3, 4], axes=[-1], keepdims=1)  ->  graph.reduce_mean %x [2] keepdims
    ReduceSum(x: [2, 3])                              ->  graph.reduce_sum %x [0, 1] keepdims
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import AnyFloat, f64, i1
from xdsl.ir import SSAValue

from strato.dialects import graph
from strato.dialects.graph.base import element_type
from strato.frontends.onnx.conversion import ImportedValue, NodeContext
from strato.frontends.onnx.convert_layout import (
    axes_of,
    input_shape,
    normalize_axes,
    normalize_axis,
)

IMPORT_TIME_INPUTS: dict[str, tuple[int, ...]] = {
    "ReduceSum": (1,),
    "ReduceMean": (1,),
    "ReduceMax": (1,),
    "ReduceMin": (1,),
    "ReduceProd": (1,),
    "ReduceL1": (1,),
    "ReduceL2": (1,),
    "ReduceSumSquare": (1,),
    "ReduceLogSumExp": (1,),
    "TopK": (1,),
    "CumSum": (1,),
    "CumProd": (1,),
    "DFT": (1, 2),
    "STFT": (1, 3),
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
                return [_unreduced(ctx, op_class, x)]
            axes = list(range(len(shape)))
        axes = sorted(normalize_axes(ctx, axes, len(shape)))
        if not axes:  # a rank-0 input: reducing nothing
            return [x]
        if op_class.FLOAT_OPERANDS and not _is_float(x):
            raise ctx.error(f"{ctx.op_type} of {_dtype_name(x)} tensors is not supported")
        if isinstance(x, np.ndarray):
            with np.errstate(all="ignore"):
                reduced = op_class.reduce(x, tuple(axes))
            result = np.asarray(reduced, dtype=x.dtype)
            result = result.reshape(graph.reduced_shape(shape, axes, keepdims))
            return [result]
        return [ctx.emit(op_class(x, axes, keepdims)).results[0]]

    kind = op_class.name.split("_", 1)[1]
    convert.__name__ = f"convert_reduce_{kind}"
    convert.__doc__ = f"ONNX Reduce ({kind}) -> {op_class.name}."
    return convert


convert_reduce_sum = _reduction(graph.ReduceSumOp)
convert_reduce_mean = _reduction(graph.ReduceMeanOp)
convert_reduce_max = _reduction(graph.ReduceMaxOp)
def _unreduced(
    ctx: NodeContext, op_class: type[graph.ReductionOp], x: ImportedValue
) -> ImportedValue:
    """A reduction over no axes, as the functions that define the norms in ONNX compute
    it: the element map without the combination (|x| for L1 and L2, x * x for the sum
    of squares, x otherwise)."""
    if op_class in (graph.ReduceL1Op, graph.ReduceL2Op):
        if isinstance(x, np.ndarray):
            return np.abs(x)
        return ctx.emit(graph.AbsOp(x)).results[0]
    if op_class is graph.ReduceSumSquareOp:
        if isinstance(x, np.ndarray):
            return np.asarray(x * x, dtype=x.dtype)
        return ctx.emit(graph.MulOp(x, x)).results[0]
    return x


convert_reduce_min = _reduction(graph.ReduceMinOp)
convert_reduce_prod = _reduction(graph.ReduceProdOp)
convert_reduce_l1 = _reduction(graph.ReduceL1Op)
convert_reduce_l2 = _reduction(graph.ReduceL2Op)
convert_reduce_sum_square = _reduction(graph.ReduceSumSquareOp)
convert_reduce_log_sum_exp = _reduction(graph.ReduceLogSumExpOp)


def _is_float(x: ImportedValue) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype.kind == "f" or x.dtype.name == "bfloat16"
    return isinstance(element_type(x), AnyFloat)


def _dtype_name(x: ImportedValue) -> str:
    return str(x.dtype) if isinstance(x, np.ndarray) else str(element_type(x))


def _arg_reduction(
    op_class: type[graph.ArgReductionOp],
) -> Callable[[NodeContext], list[ImportedValue]]:
    def convert(ctx: NodeContext) -> list[ImportedValue]:
        shape = input_shape(ctx, 0)
        if not shape:
            raise ctx.error("input must have rank >= 1")
        axis = normalize_axis(ctx, int(ctx.attr("axis", 0)), len(shape))
        keepdims = ctx.flag_attr("keepdims", 1)
        last = ctx.flag_attr("select_last_index", 0)
        if shape[axis] == 0:
            raise ctx.error(f"cannot take the {ctx.op_type} of the empty axis {axis}")
        known = ctx.known(0)
        x = known if known is not None else ctx.operand(0)
        if isinstance(x, np.ndarray):
            picked = np.flip(x, axis) if last else x
            index = op_class.pick(picked, axis)
            if last:
                index = shape[axis] - 1 - index
            reduced = graph.reduced_shape(shape, [axis], keepdims)
            return [np.asarray(index, np.int64).reshape(reduced)]
        return [ctx.emit(op_class(x, axis, keepdims, last)).results[0]]

    convert.__name__ = f"convert_{op_class.name.split('.', 1)[1]}"
    convert.__doc__ = f"ONNX {op_class.name} (axis, keepdims, select_last_index)."
    return convert


convert_arg_max = _arg_reduction(graph.ArgMaxOp)
convert_arg_min = _arg_reduction(graph.ArgMinOp)


def convert_top_k(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX TopK (K an input from opset 10, an attribute before) -> graph.top_k. Results
    are always sorted, which `sorted=0` (any order) allows."""
    shape = input_shape(ctx, 0)
    if not shape:
        raise ctx.error("input must have rank >= 1")
    axis = normalize_axis(ctx, int(ctx.attr("axis", -1)), len(shape))
    if ctx.has_attr("k"):
        k = int(ctx.attr("k"))
    else:
        (k,) = _k_input(ctx)
    if not 0 <= k <= shape[axis]:
        raise ctx.error(f"K={k} is not in [0, {shape[axis]}] (the size of axis {axis})")
    largest = ctx.flag_attr("largest", 1)
    ctx.flag_attr("sorted", 1)
    known = ctx.known(0)
    if known is not None:
        return list(graph.top_k(known, axis, k, largest))
    op = ctx.emit(graph.TopKOp(ctx.operand(0), axis, k, largest))
    return list(op.results)


def _k_input(ctx: NodeContext) -> list[int]:
    k = ctx.known(1)
    if k is None:
        raise ctx.error(
            f"K (input '{ctx.input_name(1)}') must be known at import time: the result "
            "shape depends on it"
        )
    if k.dtype.kind not in "iu" or k.size != 1:
        raise ctx.error(f"K must be one integer, got {k.dtype}{list(k.shape)}")
    return [int(k.reshape(()))]


def convert_cum_sum(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX CumSum (axis a scalar input known at import time; exclusive, reverse) ->
    graph.cumsum (folded when the input is known)."""
    return _cumulative(ctx, graph.CumSumOp)


def convert_cum_prod(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX CumProd (opset 26; as CumSum) -> graph.cumprod."""
    return _cumulative(ctx, graph.CumProdOp)


def _cumulative(ctx: NodeContext, op_class: type[graph.CumulativeOp]) -> list[ImportedValue]:
    shape = input_shape(ctx, 0)
    if not shape:
        raise ctx.error("input must have rank >= 1")
    axis_array = ctx.known(1)
    if axis_array is None:
        raise ctx.error(
            f"axis (input '{ctx.input_name(1)}') must be known at import time"
        )
    if axis_array.dtype.kind not in "iu" or axis_array.size != 1:
        raise ctx.error(f"axis must be one integer, got {axis_array.dtype}{list(axis_array.shape)}")
    axis = normalize_axis(ctx, int(axis_array.reshape(())), len(shape))
    exclusive = ctx.flag_attr("exclusive", 0)
    reverse = ctx.flag_attr("reverse", 0)
    x = ctx.value(0)
    if _is_bool(x):
        raise ctx.error(f"{ctx.op_type} of bool tensors is not supported")
    if isinstance(x, np.ndarray):
        return [graph.running(x, axis, exclusive, reverse, op_class.RUNNING)]
    return [ctx.emit(op_class(x, axis, exclusive, reverse)).results[0]]


def _is_bool(x: ImportedValue) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype == np.bool_
    return element_type(x) == i1


def convert_dft(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX DFT (forward, inverse, one-sided; opset 17 on) -> one graph.matmul of the
    signal along the axis by the import-time matrix of the transform: the real and
    imaginary parts (the last axis of X, 1 or 2 components) are concatenated, multiplied
    by the [cos, sin] blocks of exp(-+2 pi i k t / n) (1/n for the inverse, the
    Hermitian weights 1 or 2 for the one-sided inverse, which is real), and the result
    put back with the frequencies at the axis. Like a summed reduction along one axis
    (hence here), the transform length and the axis must be known at import time;
    the signal is cut or zero-padded to dft_length as numpy's fft does.

        DFT(x: [1, 10, 10, 1], axis=1) -> graph.matmul(x along axis 1: [1, 10, 10],
            [10, 20]) -> [1, 10, 10, 2]
    """
    shape = input_shape(ctx, 0)
    rank = len(shape) - 1  # the last axis holds the real and imaginary parts
    if rank < 1 or shape[-1] not in (1, 2):
        raise ctx.error(f"x of shape {list(shape)} must end in 1 (real) or 2 (complex)")
    if ctx.opset() >= 20:
        axis = _known_int_input(ctx, 2, "axis", -2) if ctx.has_input(2) else -2
    else:
        axis = int(ctx.attr("axis", 1))
    axis = normalize_axis(ctx, axis, len(shape))
    if axis == len(shape) - 1:
        raise ctx.error("axis must not be the last axis (the real and imaginary parts)")
    inverse, onesided = ctx.flag_attr("inverse"), ctx.flag_attr("onesided")
    length = shape[axis]
    default_length = 2 * (length - 1) if inverse and onesided else length
    n = default_length
    if ctx.has_input(1):
        n = _known_int_input(ctx, 1, "dft_length", default_length)
    if n < 1:
        raise ctx.error(f"dft_length {n} must be positive")
    x = ctx.operand(0)
    if not isinstance(element_type(x), AnyFloat):
        raise ctx.error("x must be a float tensor")
    return [_transformed(ctx, x, axis, n, inverse, onesided)]


def _transformed(
    ctx: NodeContext, x: SSAValue, axis: int, n: int, inverse: bool, onesided: bool
) -> SSAValue:
    """The DFT of x [.., c] (c = 1 real or 2 complex parts) along `axis` (see
    convert_dft)."""
    shape = x.type.get_shape()
    rank = len(shape) - 1
    matrix, outputs = _dft_matrix(shape[axis], n, shape[-1] == 2, inverse, onesided)
    others = [d for d in range(rank) if d != axis]
    perm = [*others, axis]
    parts = []
    for component in range(shape[-1]):
        starts = [0] * len(shape)
        starts[-1] = component
        sliced = graph.SliceOp(x, starts, [1] * len(shape), [*shape[:-1], 1])
        part = ctx.emit(sliced).results[0]
        part = ctx.emit(graph.ReshapeOp(part, shape[:-1])).results[0]
        parts.append(ctx.emit(graph.TransposeOp(part, perm)).results[0])
    signal = parts[0]
    if len(parts) == 2:
        signal = ctx.emit(graph.ConcatOp(parts, rank - 1)).results[0]
    # in f64 as numpy's fft computes it: exact zeros (an inverse of a real signal's
    # spectrum) stay below the node tests' tolerance, which f32 sums of n terms miss
    wide = ctx.emit(graph.CastOp(signal, f64)).results[0]
    transform = ctx.materialize(matrix)
    product = ctx.emit(graph.MatmulOp(wide, transform)).results[0]
    product = ctx.emit(graph.CastOp(product, element_type(x))).results[0]
    bins = matrix.shape[1] // outputs
    split = ctx.emit(
        graph.ReshapeOp(product, [*(shape[d] for d in others), outputs, bins])
    ).results[0]
    # [others.., parts, bins] -> [.. bins at the axis .., parts]
    back = [rank if d == axis else (d if d < axis else d - 1) for d in range(rank)]
    return ctx.emit(graph.TransposeOp(split, [*back, rank - 1])).results[0]


def _known_int_input(ctx: NodeContext, index: int, what: str, default: int) -> int:
    array = ctx.known(index)
    if array is None:
        raise ctx.error(
            f"{what} (input '{ctx.input_name(index)}') must be known at import time"
        )
    if array.size == 0:
        return default
    if array.size != 1 or array.dtype.kind not in "iu":
        raise ctx.error(f"{what} must be one integer, got {array.tolist()}")
    return int(array.reshape(()))


def _dft_matrix(
    length: int, n: int, complex_input: bool, inverse: bool, onesided: bool
) -> tuple[np.ndarray, int]:
    """The [parts * length, outputs * bins] matrix of the transform (float64) and its
    output parts (2, or 1 for the real one-sided inverse). Rows past what the transform
    reads (t >= n, or past n // 2 + 1 one-sided frequencies) are zero: numpy cuts the
    signal there; missing rows are numpy's zero padding."""
    read = min(length, n // 2 + 1 if inverse and onesided else n)
    t = np.arange(read)[:, None]
    if inverse and onesided:
        k = np.arange(n)[None, :]
        angle = 2 * np.pi * t * k / n
        weight = np.full((read, 1), 2.0)
        weight[0] = 1.0
        if n % 2 == 0 and read > n // 2:
            weight[n // 2] = 1.0
        real = np.zeros((length, n))
        imag = np.zeros((length, n))
        real[:read] = weight * np.cos(angle) / n
        imag[:read] = -weight * np.sin(angle) / n
        blocks = [real, imag] if complex_input else [real]
        return np.concatenate(blocks, axis=0), 1
    bins = n // 2 + 1 if onesided and not inverse else n
    angle = 2 * np.pi * t * np.arange(bins)[None, :] / n
    cos, sin = np.zeros((length, bins)), np.zeros((length, bins))
    cos[:read], sin[:read] = np.cos(angle), np.sin(angle)
    if inverse:
        # real: (xr cos - xi sin) / n, imaginary: (xr sin + xi cos) / n
        from_real = np.concatenate([cos, sin], axis=1) / n
        from_imag = np.concatenate([-sin, cos], axis=1) / n
    else:
        # real: xr cos + xi sin, imaginary: -xr sin + xi cos
        from_real = np.concatenate([cos, -sin], axis=1)
        from_imag = np.concatenate([sin, cos], axis=1)
    blocks = [from_real, from_imag] if complex_input else [from_real]
    return np.concatenate(blocks, axis=0), 2


def convert_stft(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX STFT -> the DFT (see convert_dft) of the windowed frames: frame f is the
    window's length of the signal from f * frame_step (a graph.gather of import-time
    positions along the signal axis), times the window, transformed along the frame
    (frame_length points, one-sided by default). frame_step and frame_length must be
    known at import time; the window may be a run-time value.

        STFT(signal: [1, 128, 1], frame_step=8, window: [16]) -> [1, 15, 9, 2]
    """
    shape = input_shape(ctx, 0)
    if len(shape) != 3 or shape[-1] not in (1, 2):
        raise ctx.error(f"signal of shape {list(shape)} must be [batch, length, 1 or 2]")
    step = _known_int_input(ctx, 1, "frame_step", 0)
    has_window = ctx.has_input(2)
    window_size = ctx.shape(2)[0] if has_window else None
    if ctx.has_input(3):
        frame_length = _known_int_input(ctx, 3, "frame_length", 0)
    else:
        frame_length = window_size if window_size is not None else shape[1]
    window_size = window_size if window_size is not None else frame_length
    if step < 1 or not 1 <= window_size <= shape[1] or window_size != frame_length:
        raise ctx.error(
            f"frame_step {step} must be positive and the window ({window_size}) as long as "
            f"frame_length ({frame_length}), at most the signal's {shape[1]}"
        )
    frames = 1 + (shape[1] - frame_length) // step
    positions = np.arange(frames)[:, None] * step + np.arange(frame_length)[None, :]
    x = ctx.operand(0)
    if not isinstance(element_type(x), AnyFloat):
        raise ctx.error("signal must be a float tensor")
    index = ctx.materialize(positions.astype(np.int64))
    framed = ctx.emit(graph.GatherOp(x, index, 1)).results[0]  # [B, frames, length, c]
    signal_type = element_type(x)
    if has_window:
        # windowed in f64 as the transform is: a product rounded to bfloat16 first
        # was a fifth off in the small bins
        window = ctx.operand(2)
        window = ctx.emit(graph.ReshapeOp(window, [1, 1, frame_length, 1])).results[0]
        framed, window = (
            v if element_type(v) == f64 else ctx.emit(graph.CastOp(v, f64)).results[0]
            for v in (framed, window)
        )
        framed = ctx.emit(graph.MulOp(framed, window)).results[0]
    onesided = ctx.flag_attr("onesided", 1)
    result = _transformed(ctx, framed, 2, frame_length, False, onesided)
    if element_type(result) != signal_type:
        result = ctx.emit(graph.CastOp(result, signal_type)).results[0]
    return [result]
