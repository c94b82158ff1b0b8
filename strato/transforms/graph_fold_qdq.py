"""graph-fold-qdq: run the QDQ groups of a quantized model as integer arithmetic.

onnxruntime's quantization tool (QDQ format) writes each quantized layer as
DequantizeLinear -> Conv / MatMul / Gemm (-> Add bias) -> QuantizeLinear. Imported,
that is graph.dequantize -> graph.conv / graph.matmul (-> graph.add) -> graph.quantize,
computed in f32. This pass rewrites each such group into

    graph.qconv / graph.qdense   (8-bit operands, exact int32 sums, int32 bias)
    graph.requantize             (int32 -> 8 bits: QLinearConv's requantization)

when the input is dequantized per tensor, the weight is a constant int8 tensor with
zero points 0 (per tensor or per output channel), the optional bias is a dequantized
constant int32 tensor with zero point 0 and scale input_scale * weight_scale (what the
tool writes), and the result is quantized per tensor and used by nothing else. The
input's zero point z is folded into the bias at compile time with the weights' sums
(sum (x - z) w = sum x w - z sum w; padding with z contributes 0), and an int8 input
is shifted by 128 to uint8 (x + 128, with z + 128): the operands a u8 x s8 dot product
instruction takes.

Between quantized tensors, max pooling, reshapes and a dequantize-quantize pair with
the same scale and zero point run on the integers themselves: quantize(f(dequantize(q)))
= f(q) for those (monotone or data movement), exactly.

Anything else is left as it is (the exact f32 composition of the ONNX operators).

Requires: functions of graph ops, before graph-fold-constants (which would fold the
weights' dequantization). Leaves illegal: nothing.

Before:

    %x = graph.dequantize %q, %s, %z axis 1 : (tensor<1x4x8x8xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x4x8x8xf32>
    %w = graph.dequantize %wq, %ws, %wz axis 0 : (tensor<8x4x3x3xi8>, tensor<8xf32>, tensor<8xi8>) -> tensor<8x4x3x3xf32>
    %y = graph.conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (...) -> tensor<1x8x8x8xf32>
    %r = graph.quantize %y, %ys, %yz axis 1 : (tensor<1x8x8x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x8x8x8xui8>

After:

    %a = graph.qconv %q, %wq, %bias strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 pad_value 3 layout "NCHW" : (...) -> tensor<1x8x8x8xi32>
    %r = graph.requantize %a, %multiplier, %yz axis 1 : (tensor<1x8x8x8xi32>, tensor<8xf32>, tensor<ui8>) -> tensor<1x8x8x8xui8>
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerType, ModuleOp, Signedness
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from strato.dialects import graph
from strato.dialects.graph.base import element_type, static_shape
from strato.dialects.graph.quant import (
    PACK,
    folded_bias,
    pack_conv_weight,
    pack_dense_weight,
)
from strato.dialects.tensor_types import array_from_dense

U8 = IntegerType(8, Signedness.UNSIGNED)
I32 = IntegerType(32)


def constant_of(value: SSAValue) -> np.ndarray | None:
    owner = value.owner
    if isinstance(owner, graph.ConstantOp):
        return array_from_dense(owner.value)
    return None


def _single_user(value: SSAValue) -> Operation | None:
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


@dataclass
class Dequantized:
    """A graph.dequantize with constant scale and zero point."""

    op: graph.DequantizeOp
    scale: np.ndarray
    zero: np.ndarray

    @property
    def per_tensor(self) -> bool:
        return self.scale.ndim == 0 and self.zero.ndim == 0


def dequantized(value: SSAValue) -> Dequantized | None:
    op = value.owner
    if not isinstance(op, graph.DequantizeOp):
        return None
    scale, zero = constant_of(op.scale), constant_of(op.zero_point)
    if scale is None or zero is None:
        return None
    return Dequantized(op, scale.astype(np.float32), zero)


def _quantizer(value: SSAValue) -> tuple[graph.QuantizeOp, np.ndarray, np.ndarray] | None:
    """The per-tensor graph.quantize that is the only user of `value`."""
    user = _single_user(value)
    if not isinstance(user, graph.QuantizeOp):
        return None
    scale, zero = constant_of(user.scale), constant_of(user.zero_point)
    if scale is None or zero is None or scale.ndim or zero.ndim:
        return None
    return user, scale.astype(np.float32), zero


def _per_channel(values: np.ndarray, channels: int) -> np.ndarray:
    return np.broadcast_to(values.reshape(-1) if values.ndim else values, (channels,))


def _as_uint8(
    rewriter: PatternRewriter, anchor: Operation, q: SSAValue, zero: int
) -> tuple[SSAValue, int]:
    """`q` as uint8 with its zero point: an int8 tensor shifted by 128."""
    if element_type(q) == U8:
        return q, zero
    shape = static_shape(q)
    wide = graph.CastOp(q, I32)
    offset = graph.ConstantOp.from_array(np.asarray(128, np.int32), I32)
    shifted = graph.AddOp(wide.result, offset.result)
    narrow = graph.CastOp(shifted.result, U8)
    rewriter.insert([wide, offset, shifted, narrow], _before(anchor))
    assert static_shape(narrow.result) == shape
    return narrow.result, zero + 128


def _before(op: Operation):
    from xdsl.rewriter import InsertPoint

    return InsertPoint.before(op)


def _constant(rewriter: PatternRewriter, anchor: Operation, array: np.ndarray, type_=None) -> SSAValue:
    op = graph.ConstantOp.from_array(array, type_)
    rewriter.insert(op, _before(anchor))
    return op.result


def _integer_bias(
    bias: SSAValue | None, x_scale: np.float32, w_scale: np.ndarray, channels: int
) -> np.ndarray | None:
    """The int32 bias of a dequantized constant bias with zero point 0 and scale
    x_scale * w_scale (zeros without a bias), else None."""
    if bias is None:
        return np.zeros(channels, np.int64)
    dq = dequantized(bias)
    if dq is None:
        return None
    values = constant_of(dq.op.input)
    if values is None or values.dtype != np.int32 or values.shape != (channels,):
        return None
    if np.any(dq.zero != 0):
        return None
    expected = (x_scale * w_scale).astype(np.float32)
    if not np.array_equal(_per_channel(dq.scale, channels), expected):
        return None
    return values.astype(np.int64)


def _requantized(
    rewriter: PatternRewriter,
    anchor: Operation,
    accumulator: SSAValue,
    multiplier: np.ndarray,
    quantize: graph.QuantizeOp,
    axis: int,
) -> None:
    """graph.requantize of `accumulator` in place of `quantize` (inserted before
    `anchor`, the quantize itself: its zero point is defined before it, not
    necessarily before the product)."""
    requantize = graph.RequantizeOp(
        accumulator,
        _constant(rewriter, anchor, multiplier.astype(np.float32)),
        quantize.zero_point,
        element_type(quantize.result),
        axis,
    )
    rewriter.insert(requantize, _before(anchor))
    requantize.result.name_hint = quantize.result.name_hint
    rewriter.replace_all_uses_with(quantize.result, requantize.result)
    rewriter.erase(quantize)


def _folded_bias(bias: np.ndarray, weights: np.ndarray, zero: int) -> np.ndarray | None:
    return folded_bias(bias, weights, zero)


def _weights(w: SSAValue, axis: int) -> tuple[np.ndarray, np.ndarray] | None:
    """A constant int8 weight with zero points 0, per tensor or along `axis`:
    (integers, scale per output)."""
    dq = dequantized(w)
    if dq is None:
        return None
    values = constant_of(dq.op.input)
    if values is None or values.dtype != np.int8 or np.any(dq.zero != 0):
        return None
    if dq.scale.ndim and dq.op.axis_value != axis:
        return None
    return values, dq.scale


CHANNEL_MULTIPLE = PACK
"""Input channels of an integer convolution are padded to a multiple of this (with
zero weights), so that its weight can be packed (`graph.qconv packed`): the bytes an
int8 dot-product step multiplies per output (`cpu.dot_i8`)."""


def _channels_padded(
    rewriter: PatternRewriter, anchor: Operation, q: SSAValue, w: np.ndarray, zero: int, groups: int
) -> tuple[SSAValue, np.ndarray]:
    """The input and weights with the input channels padded to `CHANNEL_MULTIPLE` (one
    group only): the padded channels hold the zero point, their weights are 0, so every
    sum is unchanged."""
    extra = -w.shape[1] % CHANNEL_MULTIPLE
    if groups != 1 or not extra:
        return q, w
    pad = graph.PadOp(q, [0, 0, 0, 0], [0, extra, 0, 0], value=float(zero))
    rewriter.insert(pad, _before(anchor))
    widths = [(0, 0), (0, extra), (0, 0), (0, 0)]
    return pad.result, np.pad(w, widths)


class FoldQuantizedConv(RewritePattern):
    """dequantize -> conv -> quantize -> qconv -> requantize."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, graph.ConvOp) or op.spatial_rank != 2:
            return
        x = dequantized(op.input)
        weights = _weights(op.weight, 0)
        quantizer = _quantizer(op.result)
        if x is None or not x.per_tensor or weights is None or quantizer is None:
            return
        w, w_scale = weights
        quantize, y_scale, _ = quantizer
        channels = w.shape[0]
        w_scale = _per_channel(w_scale, channels)
        bias = _integer_bias(op.bias, x.scale, w_scale, channels)
        if bias is None:
            return
        q, zero = _as_uint8(rewriter, op, x.op.input, int(x.zero))
        folded = _folded_bias(bias, w, zero)
        if folded is None:
            return
        q, w = _channels_padded(rewriter, op, q, w, zero, op.group_count)
        packed = op.group_count == 1 and w.shape[1] % PACK == 0
        conv = graph.QConvOp(
            q,
            _constant(rewriter, op, pack_conv_weight(w) if packed else w),
            _constant(rewriter, op, folded, I32),
            strides=op.stride_values,
            padding=tuple(op.padding.get_values()),
            dilations=op.dilation_values,
            groups=op.group_count,
            pad_value=zero,
            packed=packed,
        )
        rewriter.insert(conv, _before(op))
        multiplier = (x.scale * w_scale) / y_scale
        _requantized(rewriter, quantize, conv.result, multiplier, quantize, 1)


def _matmul_weights(rhs: SSAValue) -> tuple[np.ndarray, np.ndarray] | None:
    """The constant int8 weight of a matmul as [N, K] with its scale per output: a
    dequantized [K, N] (per tensor or along axis 1), or the transpose of a dequantized
    [N, K] (per tensor or along axis 0)."""
    owner = rhs.owner
    if isinstance(owner, graph.TransposeOp) and tuple(owner.perm.get_values()) == (1, 0):
        return _weights(owner.input, 0)
    found = _weights(rhs, 1)
    if found is None or found[0].ndim != 2:
        return None
    return np.ascontiguousarray(found[0].T), found[1]


class FoldQuantizedMatmul(RewritePattern):
    """dequantize -> matmul (-> add dequantized bias) -> quantize -> qdense -> requantize."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, graph.MatmulOp) or len(static_shape(op.rhs)) != 2:
            return
        x = dequantized(op.lhs)
        weights = _matmul_weights(op.rhs)
        if x is None or not x.per_tensor or weights is None:
            return
        w, w_scale = weights
        channels = w.shape[0]
        w_scale = _per_channel(w_scale, channels)
        result, bias_value = op.result, None
        user = _single_user(op.result)
        if isinstance(user, graph.AddOp):
            other = user.rhs if user.lhs is op.result else user.lhs
            if static_shape(other) == (channels,):
                result, bias_value = user.result, other
        quantizer = _quantizer(result)
        if quantizer is None:
            return
        quantize, y_scale, _ = quantizer
        bias = _integer_bias(bias_value, x.scale, w_scale, channels)
        if bias is None:
            return
        q, zero = _as_uint8(rewriter, op, x.op.input, int(x.zero))
        folded = _folded_bias(bias, w, zero)
        if folded is None:
            return
        packed = w.shape[1] % PACK == 0
        dense = graph.QDenseOp(
            q,
            _constant(rewriter, op, pack_dense_weight(w) if packed else w),
            _constant(rewriter, op, folded, I32),
            packed=packed,
        )
        rewriter.insert(dense, _before(op))
        multiplier = (x.scale * w_scale) / y_scale
        rank = len(static_shape(dense.result))
        _requantized(rewriter, quantize, dense.result, multiplier, quantize, rank - 1)


class FoldIntegerPassThrough(RewritePattern):
    """quantize(f(dequantize(q))) -> f(q) for f a max pool, a reshape or nothing, when
    both use the same scale and zero point (per tensor)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, graph.QuantizeOp):
            return
        scale, zero = constant_of(op.scale), constant_of(op.zero_point)
        if scale is None or zero is None or scale.ndim or zero.ndim:
            return
        inner = op.input.owner
        middle = None
        if isinstance(inner, graph.MaxPoolOp | graph.ReshapeOp):
            middle, source = inner, inner.operands[0]
        else:
            source = op.input
        x = dequantized(source)
        if x is None or not x.per_tensor:
            return
        if element_type(x.op.input) != element_type(op.result):
            return
        if x.scale != scale.astype(np.float32) or x.zero != zero:
            return
        if middle is None:
            replacement = x.op.input
        else:
            if _single_user(middle.results[0]) is not op:
                return
            clone = type(middle).create(
                operands=[x.op.input],
                result_types=[op.result.type],
                properties=dict(middle.properties),
                attributes=dict(middle.attributes),
            )
            rewriter.insert(clone, _before(op))
            replacement = clone.results[0]
        rewriter.replace_all_uses_with(op.result, replacement)
        rewriter.erase(op)


def fold_qdq_patterns() -> list[RewritePattern]:
    return [FoldIntegerPassThrough(), FoldQuantizedConv(), FoldQuantizedMatmul()]


@dataclass(frozen=True)
class GraphFoldQdqPass(ModulePass):
    """Fold dequantize -> conv / matmul -> quantize groups into integer ops."""

    name = "graph-fold-qdq"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not any(isinstance(o, graph.QuantizeOp) for o in op.walk()):
            return
        PatternRewriteWalker(FoldIntegerPassThrough()).rewrite_module(op)
        PatternRewriteWalker(FoldQuantizedConv()).rewrite_module(op)
        PatternRewriteWalker(FoldQuantizedMatmul()).rewrite_module(op)
        DeadCodeElimination().apply(ctx, op)
