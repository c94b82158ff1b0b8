"""onnxruntime's quantized operators of the `com.microsoft` domain, as its quantization
tool writes them in the QOperator format: QLinearAdd, QLinearMul, QLinearConcat,
QLinearGlobalAveragePool, QLinearAveragePool, QLinearSigmoid, QLinearLeakyRelu,
QLinearSoftmax and QGemm.

These have no ONNX reference; onnxruntime defines them. Each is imported as nodes of the
default domain (converted by their own converters, as a function body is) that compute
what onnxruntime's x86-64 kernels compute, bit for bit:

- QLinearAdd: with rA = A_scale / C_scale, rB = B_scale / C_scale and the fixed part
  F = C_zero - fma(rA, A_zero, rB * B_zero), C = fma(rA, A, fma(rB, B, F)), rounded
  half to even and saturated (A and B unshifted, in float32; onnxruntime's vector loop
  fuses the multiply-adds).
- QLinearMul: C = (A - A_zero) * (B - B_zero) * (A_scale * B_scale / C_scale) + C_zero
  in float32, each step rounded, then rounded half to even and saturated.
- QLinearGlobalAveragePool: round((sum(X) - X_zero * n) * (x_scale / (y_scale * n)))
  + y_zero over the n spatial values, saturated.
- QLinearAveragePool: each window summed in float32 in row-major order, divided by its
  count, quantized (see `convert_qlinear_average_pool`).
- QLinearSigmoid, QLinearLeakyRelu, and an input of QLinearConcat whose scale or zero
  point is not the output's: a table of the 256 values, each dequantized, mapped and
  quantized in float32 (sigmoid computed in float64 and rounded), looked up with Gather.
- QLinearSoftmax: onnxruntime's table of exponentials, summed in float32 in order
  (see `convert_qlinear_softmax`).
- QGemm: MatMulInteger's int32 product plus C, times alpha * a_scale * b_scale (/
  y_scale and plus y_zero, rounded half to even and saturated, when y is quantized).

Float32 steps are computed in float64 and cast back after each one: the products of
these 8-bit and 16-bit integers with a float32 scale are exact in float64, so each cast
rounds once, as float32 arithmetic (or a fused multiply-add) does, and no later fusion
of the compiled code can change it. The scales and zero points must be known at import
time (the quantization tool writes them as initializers).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

from strato.dialects.tensor_types import numpy_dtype
from strato.frontends.onnx.conversion import ImportedValue, NodeContext
from strato.frontends.onnx.expansion import Expansion

CONTRIB_DOMAIN = "com.microsoft"

_F32, _F64 = np.float32, np.float64


def _fma32(a, b, c) -> np.ndarray:
    """float32 fma(a, b, c): one rounding of the exact a * b + c."""
    return (np.asarray(a, _F64) * np.asarray(b, _F64) + np.asarray(c, _F64)).astype(_F32)


class _Body(Expansion):
    """An expansion with the float32 and 8-bit steps these operators share."""

    def float32_affine(self, x: str, scale, offset) -> str:
        """float32(x * scale + offset), x exact in float64, the float32 `scale` and
        `offset` broadcast against it: one rounding, a fused multiply-add's."""
        wide = self.node("Mul", [x, self.constant(np.asarray(scale, _F64))])
        return self.cast(self.node("Add", [wide, self.constant(np.asarray(offset, _F64))]), _F32)

    def saturated(self, x: str, dtype: np.dtype, offset=None) -> str:
        """float32 x rounded half to even, plus the integer `offset` (a zero point),
        saturated into `dtype` and cast to it."""
        info = np.iinfo(dtype)
        rounded = self.node("Round", [x])
        if offset is not None:
            rounded = self.node("Add", [rounded, self.constant(np.asarray(offset, _F32))])
        low, high = self.constant(_F32(info.min)), self.constant(_F32(info.max))
        return self.cast(self.node("Clip", [rounded, low, high]), dtype)

    def lookup(self, x: str, table: np.ndarray) -> str:
        """table[x - min] for each 8-bit x (the table of all 256 values of x's type)."""
        index = self.cast(x, np.int32)
        low = int(np.iinfo(self.dtype_of(x)).min)
        if low:
            index = self.node("Sub", [index, self.constant(np.int32(low))])
        return self.node("Gather", [self.constant(table), index], axis=0)


def _dtype(ctx: NodeContext, index: int) -> np.dtype:
    value = ctx.value(index)
    return value.dtype if isinstance(value, np.ndarray) else numpy_dtype(value.type)


def _quantized(ctx: NodeContext, index: int, what: str) -> np.dtype:
    dtype = _dtype(ctx, index)
    if dtype not in (np.dtype(np.uint8), np.dtype(np.int8)):
        raise ctx.error(f"{what} must be uint8 or int8, got {dtype}")
    return dtype


def _known(ctx: NodeContext, index: int, what: str, dtype, *, default=None) -> np.ndarray:
    """Input `index` (a scale or a zero point) as a known array of `dtype`; `default`
    when the optional input is absent."""
    if not ctx.has_input(index):
        if default is None:
            raise ctx.error(f"input {what} is required")
        return np.asarray(default, dtype)
    value = ctx.value(index)
    if not isinstance(value, np.ndarray):
        raise ctx.error(
            f"{what} must be known at import time (an initializer or a constant): strato "
            "folds the scales and zero points into the computation"
        )
    return value.astype(dtype)


def _scalar(ctx: NodeContext, index: int, what: str, dtype, *, default=None) -> np.generic:
    value = _known(ctx, index, what, dtype, default=default)
    if value.size != 1:
        raise ctx.error(f"{what} must be a scalar (per-tensor), got shape {list(value.shape)}")
    return value.reshape(())[()]


def _zero_point(ctx: NodeContext, index: int, what: str, dtype: np.dtype) -> int:
    if ctx.has_input(index) and _dtype(ctx, index) != dtype:
        raise ctx.error(f"{what} has type {_dtype(ctx, index)}, not {dtype}")
    return int(_scalar(ctx, index, what, dtype, default=0))


def _binary_operands(ctx: NodeContext) -> tuple[np.dtype, tuple, tuple[int, int, int]]:
    """The type, the scales (A, B, C) and the zero points (A, B, C) of QLinearAdd's and
    QLinearMul's inputs A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale,
    C_zero_point."""
    dtype = _quantized(ctx, 0, "A")
    if _dtype(ctx, 3) != dtype:
        raise ctx.error(f"B has type {_dtype(ctx, 3)}, not A's {dtype}")
    scales = tuple(
        _F32(_scalar(ctx, i, what, _F32)) for i, what in ((1, "A_scale"), (4, "B_scale"), (6, "C_scale"))
    )
    zeros = tuple(
        _zero_point(ctx, i, what, dtype) for i, what in ((2, "A_zero_point"), (5, "B_zero_point"), (7, "C_zero_point"))
    )
    return dtype, scales, zeros


def convert_qlinear_add(ctx: NodeContext) -> list[ImportedValue]:
    dtype, (a_scale, b_scale, c_scale), (a_zero, b_zero, c_zero) = _binary_operands(ctx)
    ratio_a, ratio_b = _F32(a_scale / c_scale), _F32(b_scale / c_scale)
    fixed = _F32(_F32(c_zero) - _fma32(ratio_a, a_zero, _F32(ratio_b * _F32(b_zero))))
    body = _Body(ctx)
    inner = body.float32_affine(body.cast(ctx.node.input[3], _F64), ratio_b, fixed)
    # fma(rA, A, inner): the exact sum in float64, rounded once
    scaled = body.node("Mul", [body.cast(ctx.node.input[0], _F64), body.constant(_F64(ratio_a))])
    total = body.cast(body.node("Add", [scaled, body.cast(inner, _F64)]), _F32)
    return [body.result(body.saturated(total, dtype))]


def convert_qlinear_mul(ctx: NodeContext) -> list[ImportedValue]:
    dtype, (a_scale, b_scale, c_scale), (a_zero, b_zero, c_zero) = _binary_operands(ctx)
    ratio = _F32(_F32(a_scale * b_scale) / c_scale)
    body = _Body(ctx)

    def shifted(index: int, zero: int) -> str:
        wide = body.cast(ctx.node.input[index], _F64)
        return body.node("Sub", [wide, body.constant(_F64(zero))]) if zero else wide

    # (A - A_zero) * (B - B_zero) is exact (at most 2**16), then two float32 roundings
    product = body.node("Mul", [shifted(0, a_zero), shifted(3, b_zero)])
    scaled = body.cast(body.node("Mul", [product, body.constant(_F64(ratio))]), _F32)
    total = body.float32_affine(body.cast(scaled, _F64), 1.0, _F32(c_zero))
    return [body.result(body.saturated(total, dtype))]


def convert_qlinear_global_average_pool(ctx: NodeContext) -> list[ImportedValue]:
    dtype = _quantized(ctx, 0, "X")
    shape = ctx.shape(0)
    if len(shape) < 3:
        raise ctx.error(f"X must have rank >= 3, got shape {list(shape)}")
    x_scale, y_scale = (_F32(_scalar(ctx, i, w, _F32)) for i, w in ((1, "x_scale"), (3, "y_scale")))
    x_zero, y_zero = (_zero_point(ctx, i, w, dtype) for i, w in ((2, "x_zero_point"), (4, "y_zero_point")))
    channels_last = ctx.attr("channels_last", 0)
    axes = list(range(1, len(shape) - 1)) if channels_last else list(range(2, len(shape)))
    count = int(np.prod([shape[a] for a in axes]))
    if count * 255 >= 2**31:
        raise ctx.error(f"{count} values a channel: their int32 sum could overflow")
    body = _Body(ctx)
    wide = body.cast(ctx.node.input[0], np.int32)
    total = body.node("ReduceSum", [wide, body.constant(np.asarray(axes, np.int64))], keepdims=1)
    if x_zero:
        total = body.node("Sub", [total, body.constant(np.int32(x_zero * count))])
    scale = _F32(x_scale / _F32(y_scale * _F32(count)))
    # float(sum) * scale, one float32 rounding, then the zero point after rounding
    scaled = body.float32_affine(body.cast(body.cast(total, _F32), _F64), scale, 0.0)
    return [body.result(body.saturated(scaled, dtype, y_zero))]


def _pool_geometry(ctx: NodeContext, spatial: list[int]) -> tuple[list[int], list[int], list[int], list[int]]:
    """QLinearAveragePool's kernel, strides, begin pads and output sizes over the spatial
    sizes `spatial` (explicit pads or auto_pad, floor or ceil_mode)."""
    rank = len(spatial)
    kernel = list(ctx.attr("kernel_shape", []))
    if len(kernel) != rank:
        raise ctx.error(f"kernel_shape {kernel} does not have one size per spatial axis ({rank})")
    strides = list(ctx.attr("strides", [1] * rank))
    if any(d != 1 for d in ctx.attr("dilations", [1] * rank)):
        raise ctx.error("dilations other than 1 are not supported")
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    ceil_mode = ctx.attr("ceil_mode", 0)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        totals = [max((-(-n // st) - 1) * st + k - n, 0) for n, k, st in zip(spatial, kernel, strides)]
        begin = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in totals]
        end = [t - b for t, b in zip(totals, begin)]
        sizes = [-(-n // st) for n, st in zip(spatial, strides)]
        return kernel, strides, begin, sizes
    if auto_pad == "VALID":
        begin, end = [0] * rank, [0] * rank
    elif auto_pad == "NOTSET":
        pads = list(ctx.attr("pads", [0] * 2 * rank))
        begin, end = pads[:rank], pads[rank:]
    else:
        raise ctx.error(f"auto_pad={auto_pad} is not supported")
    sizes = []
    for n, k, st, b, e in zip(spatial, kernel, strides, begin, end):
        span = n + b + e - k
        size = (-(-span // st) if ceil_mode else span // st) + 1
        if ceil_mode and (size - 1) * st >= n + b:
            size -= 1  # the last window starts inside the input or its begin pad
        sizes.append(size)
    return kernel, strides, begin, sizes


def convert_qlinear_average_pool(ctx: NodeContext) -> list[ImportedValue]:
    """com.microsoft QLinearAveragePool as onnxruntime computes it: X dequantized in
    float32, each window's values summed in float32 in row-major order (positions in the
    padding skipped), divided by the window's count (its size with count_include_pad,
    else the positions inside X), then round(y / y_scale + y_zero_point), saturated."""
    dtype = _quantized(ctx, 0, "X")
    shape = list(ctx.shape(0))
    if len(shape) < 3:
        raise ctx.error(f"X must have rank >= 3, got shape {shape}")
    channels_last = ctx.attr("channels_last", 0)
    axes = list(range(1, len(shape) - 1)) if channels_last else list(range(2, len(shape)))
    spatial = [shape[a] for a in axes]
    kernel, strides, begin, sizes = _pool_geometry(ctx, spatial)
    if any(n <= 0 for n in sizes):
        raise ctx.error(f"the pooled sizes {sizes} are not positive")
    x_scale, y_scale = (_F32(_scalar(ctx, i, w, _F32)) for i, w in ((1, "x_scale"), (3, "y_scale")))
    x_zero, y_zero = (_zero_point(ctx, i, w, dtype) for i, w in ((2, "x_zero_point"), (4, "y_zero_point")))
    body = _Body(ctx)
    shifted = body.cast(body.node("Sub", [body.cast(ctx.node.input[0], np.int32), body.constant(np.int32(x_zero))]), _F32)
    dequantized = body.node("Mul", [shifted, body.constant(x_scale)])
    # zeros around X: a window's positions in the padding add +0.0, which leaves a float
    # sum as it is
    after = [max((size - 1) * st + k - n - b, 0) for size, st, k, n, b in zip(sizes, strides, kernel, spatial, begin)]
    pads = [0] * (2 * len(shape))
    for axis, b, a in zip(axes, begin, after):
        pads[axis], pads[len(shape) + axis] = b, a
    padded = body.node("Pad", [dequantized, body.constant(np.asarray(pads, np.int64))]) if any(pads) else dequantized
    total = None
    for offsets in itertools.product(*(range(k) for k in kernel)):
        starts = list(offsets)
        ends = [o + (size - 1) * st + 1 for o, size, st in zip(offsets, sizes, strides)]
        term = body.node(
            "Slice",
            [padded, *(body.constant(np.asarray(v, np.int64)) for v in (starts, ends, axes, strides))],
        )
        total = term if total is None else body.node("Add", [total, term])
    counts = np.ones([1] * len(shape), _F32)
    for axis, size, st, k, b, n in zip(axes, sizes, strides, kernel, begin, spatial):
        first = np.arange(size) * st - b
        inside = np.minimum(first + k, n) - np.maximum(first, 0)
        along = np.full(size, k) if ctx.attr("count_include_pad", 0) else inside
        view = [1] * len(shape)
        view[axis] = size
        counts = counts * along.reshape(view).astype(_F32)
    mean = body.node("Div", [total, body.constant(counts)])
    quotient = body.node("Div", [mean, body.constant(y_scale)])
    shifted_out = body.node("Add", [quotient, body.constant(_F32(y_zero))])
    return [body.result(body.saturated(shifted_out, dtype))]


def _table(dtype: np.dtype, scale: np.float32, zero: int, function) -> np.ndarray:
    """The float32 value of each of `dtype`'s 256 values dequantized (x - zero) * scale,
    mapped by `function` (float32 -> float32), ordered from the type's minimum."""
    info = np.iinfo(dtype)
    values = np.arange(info.min, info.max + 1, dtype=np.int32)
    dequantized = (values - zero).astype(_F32) * _F32(scale)
    return function(dequantized).astype(_F32)


def _quantize_table(values: np.ndarray, scale: np.float32, zero: int, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    quantized = np.rint((values / _F32(scale)).astype(_F32)) + zero
    return np.clip(quantized, info.min, info.max).astype(dtype)


def _unary_by_table(function: Callable[[NodeContext], Callable]) -> Callable:
    """The converter of an elementwise quantized operator X, x_scale, x_zero_point,
    y_scale, y_zero_point -> Y: a 256-entry table of Y looked up with Gather."""

    def convert(ctx: NodeContext) -> list[ImportedValue]:
        dtype = _quantized(ctx, 0, "X")
        x_scale, y_scale = (_F32(_scalar(ctx, i, w, _F32)) for i, w in ((1, "X_scale"), (3, "Y_scale")))
        x_zero, y_zero = (_zero_point(ctx, i, w, dtype) for i, w in ((2, "X_zero_point"), (4, "Y_zero_point")))
        mapped = _table(dtype, x_scale, x_zero, function(ctx))
        body = _Body(ctx)
        return [body.result(body.lookup(ctx.node.input[0], _quantize_table(mapped, y_scale, y_zero, dtype)))]

    convert.__doc__ = function.__doc__
    return convert


def _sigmoid(ctx: NodeContext) -> Callable:
    """com.microsoft QLinearSigmoid: 1 / (1 + exp(-x)), in float64, rounded to float32."""
    with np.errstate(over="ignore"):
        return lambda x: (1.0 / (1.0 + np.exp(-x.astype(_F64)))).astype(_F32)


def _leaky_relu(ctx: NodeContext) -> Callable:
    """com.microsoft QLinearLeakyRelu: x for x >= 0, alpha * x below, in float32."""
    alpha = _F32(ctx.float_attr("alpha", 0.01))
    return lambda x: np.where(x < 0, x * alpha, x)


def convert_qlinear_concat(ctx: NodeContext) -> list[ImportedValue]:
    """com.microsoft QLinearConcat(Y_scale, Y_zero_point, X1, X1_scale, X1_zero_point,
    ...): each input whose scale and zero point are not Y's requantized by a table, then
    Concat."""
    count = len(ctx.node.input) - 2
    if count < 1 or count % 3:
        raise ctx.error(f"takes Y_scale, Y_zero_point and triples (X, scale, zero point), got {count + 2} inputs")
    dtype = _dtype(ctx, 1)
    if dtype not in (np.dtype(np.uint8), np.dtype(np.int8)):
        raise ctx.error(f"Y_zero_point must be uint8 or int8, got {dtype}")
    y_scale = _F32(_scalar(ctx, 0, "Y_scale", _F32))
    y_zero = _zero_point(ctx, 1, "Y_zero_point", dtype)
    body = _Body(ctx)
    parts = []
    for first in range(2, len(ctx.node.input), 3):
        if _dtype(ctx, first) != dtype:
            raise ctx.error(f"input {first} has type {_dtype(ctx, first)}, not Y's {dtype}")
        scale = _F32(_scalar(ctx, first + 1, f"input {first + 1} (a scale)", _F32))
        zero = _zero_point(ctx, first + 2, f"input {first + 2} (a zero point)", dtype)
        name = ctx.node.input[first]
        if scale != y_scale or zero != y_zero:
            dequantized = _table(dtype, scale, zero, lambda x: x)
            name = body.lookup(name, _quantize_table(dequantized, y_scale, y_zero, dtype))
        parts.append(name)
    axis = ctx.attr("axis", 0)
    return [body.result(body.node("Concat", parts, axis=axis))]


def _softmax_table(x_scale: np.float32, length: int) -> np.ndarray:
    """onnxruntime's table of exp((i - 255 + shift) * x_scale) for i in 0..255, in float64
    rounded to float32: `shift` puts the row maximum (i = 255) as high as a sum of
    `length` such values may go in float32, keeping 5 bits (e**5) of headroom."""
    largest = float(np.finfo(_F32).max)
    shift = max(0.0, math.log(largest / length) - 5.0) / float(x_scale)
    steps = np.arange(256, dtype=_F64) - 255.0 + shift
    with np.errstate(over="ignore"):
        return np.exp(steps * float(x_scale)).astype(_F32)


def convert_qlinear_softmax(ctx: NodeContext) -> list[ImportedValue]:
    """com.microsoft QLinearSoftmax as onnxruntime computes it: each value's exp from a
    table indexed by its distance to the row's maximum (the zero point of X cancels),
    summed in float32 in the row's order, then round(e * floor(1 / y_scale) / sum) +
    y_zero_point, saturated. The row is the axis (`opset` 13 on) or the dimensions from
    the axis on (opset 12 and before, coerced to 2-D)."""
    dtype = _quantized(ctx, 0, "X")
    shape = ctx.shape(0)
    rank = len(shape)
    opset = ctx.attr("opset", 13)
    axis = ctx.attr("axis", -1 if opset >= 13 else 1)
    if not -rank <= axis < rank:
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    x_scale = _F32(_scalar(ctx, 1, "X_scale", _F32))
    y_scale = _F32(_scalar(ctx, 3, "y_scale", _F32))
    y_zero = _zero_point(ctx, 4, "y_zero_point", dtype)
    body = _Body(ctx)
    x = body.cast(ctx.node.input[0], np.int32)
    if opset < 13:
        rows = (int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis:], dtype=np.int64)))
        x = body.node("Reshape", [x, body.constant(np.asarray(rows, np.int64))])
        last, undo = 1, None
    elif axis != rank - 1:
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        x = body.node("Transpose", [x], perm=perm)
        last, undo = rank - 1, perm
    else:
        last, undo = rank - 1, None
    length = int(shape[axis]) if opset >= 13 else rows[1]
    if length == 0:
        return [ctx.value(0)]
    top = body.node("ReduceMax", [x, body.constant(np.asarray([last], np.int64))], keepdims=1)
    index = body.node("Add", [body.node("Sub", [x, top]), body.constant(np.int32(255))])
    exps = body.node("Gather", [body.constant(_softmax_table(x_scale, length)), index], axis=0)
    total = None
    for position in range(length):  # in the row's order, each sum rounded to float32
        term = body.node("Gather", [exps, body.constant(np.asarray([position], np.int64))], axis=last)
        total = term if total is None else body.node("Add", [total, term])
    factor = _F32(math.floor(_F32(1.0) / y_scale))
    scaled = body.node("Mul", [exps, body.constant(factor)])
    result = body.saturated(body.node("Div", [scaled, total]), dtype, y_zero)
    if opset < 13:
        result = body.node("Reshape", [result, body.constant(np.asarray(shape, np.int64))])
    elif undo is not None:
        result = body.node("Transpose", [result], perm=undo)
    return [body.result(result)]


def convert_qgemm(ctx: NodeContext) -> list[ImportedValue]:
    """com.microsoft QGemm(A, a_scale, a_zero_point, B, b_scale, b_zero_point, C?,
    y_scale?, y_zero_point?): MatMulInteger's product (B's scale and zero point per
    tensor or per output column) plus the int32 C, in float32 times alpha * a_scale *
    b_scale, or quantized to y's type with y_scale and y_zero_point."""
    a_type = _quantized(ctx, 0, "A")
    _quantized(ctx, 3, "B")
    alpha = _F32(ctx.float_attr("alpha", 1.0))
    a_scale = _F32(_scalar(ctx, 1, "a_scale", _F32))
    b_scale = _known(ctx, 4, "b_scale", _F32)
    if b_scale.ndim > 1:
        raise ctx.error(f"b_scale must be a scalar or a vector, got shape {list(b_scale.shape)}")
    body = _Body(ctx)
    a, b = ctx.node.input[0], ctx.node.input[3]
    if ctx.attr("transA", 0):
        a = body.node("Transpose", [a], perm=[1, 0])
    if ctx.attr("transB", 0):
        b = body.node("Transpose", [b], perm=[1, 0])
    product = body.node("MatMulInteger", [a, b, ctx.node.input[2], ctx.node.input[5]])
    if ctx.has_input(6):
        if _dtype(ctx, 6) != np.int32:
            raise ctx.error(f"C must be int32, got {_dtype(ctx, 6)}")
        product = body.node("Add", [product, ctx.node.input[6]])
    accumulator = body.cast(body.cast(product, _F32), _F64)  # float(acc), as onnxruntime
    scale = _F32(alpha * a_scale) * b_scale  # float32 products, in this order
    if not ctx.has_input(7):
        return [body.result(body.float32_affine(accumulator, scale, 0.0))]
    y_scale = _F32(_scalar(ctx, 7, "y_scale", _F32))
    target = _quantized(ctx, 8, "y_zero_point") if ctx.has_input(8) else a_type
    y_zero = _zero_point(ctx, 8, "y_zero_point", target)
    requantize = (scale / y_scale).astype(_F32)
    scaled = body.float32_affine(accumulator, requantize, 0.0)
    return [body.result(body.saturated(scaled, target, y_zero))]


CONTRIB_CONVERTERS: dict[str, Callable[[NodeContext], list[ImportedValue]]] = {
    "QGemm": convert_qgemm,
    "QLinearAdd": convert_qlinear_add,
    "QLinearAveragePool": convert_qlinear_average_pool,
    "QLinearConcat": convert_qlinear_concat,
    "QLinearGlobalAveragePool": convert_qlinear_global_average_pool,
    "QLinearLeakyRelu": _unary_by_table(_leaky_relu),
    "QLinearMul": convert_qlinear_mul,
    "QLinearSigmoid": _unary_by_table(_sigmoid),
    "QLinearSoftmax": convert_qlinear_softmax,
}
"""The `com.microsoft` operators strato imports, by op type."""


__all__ = ["CONTRIB_CONVERTERS", "CONTRIB_DOMAIN"]
