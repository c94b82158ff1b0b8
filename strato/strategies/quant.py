"""Strategies of the quantized operators (strato.dialects.graph.quant).

    graph.quantize     ->  quantize   (x / scale, round half to even, + zero point,
                                       clamp, convert: one element-wise stage, in f32)
    graph.dequantize   ->  dequantize ((q - zero point) * scale, f32; f64 for int32 q)
    graph.requantize   ->  requantize (f64(acc) * multiplier + zero point, round, clamp)
    graph.qconv        ->  [qconv_pad] -> qconv (int32 sum of zero/sign-extended
                                       products) -> [qconv_bias]
    graph.qdense       ->  qdense -> [qdense_bias]

The integer products read each 8-bit operand, extend it to i32 (zero-extension for
uint8, sign-extension for int8) and multiply: the sums are exact in int32, which is what
a target's int8 dot-product instruction computes (`cpu.dot_i8` on x86).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects import math as math_dialect
from xdsl.dialects.builtin import IntegerType, f32, f64, i32
from xdsl.ir import Operation, SSAValue

from strato.dialects import graph, te
from strato.dialects.graph.quant import integer_range
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    element_type_of,
    is_unsigned,
    shape_of,
)
from strato.strategies.nn import (
    ReductionAxes,
    _window_position,
    conv_window_reads,
    pad_stage,
)

I32 = IntegerType(32)


def _append(s: ScalarBuilder, op: Operation) -> SSAValue:
    s.block.add_op(op)
    return op.results[0]


def widen(s: ScalarBuilder, value: SSAValue, tensor_type, to=i32) -> SSAValue:
    """An integer read from a tensor of `tensor_type` as `to`: zero-extended when the
    tensor is unsigned, sign-extended otherwise."""
    if value.type == to:
        return value
    if is_unsigned(tensor_type):
        return _append(s, arith.ExtUIOp(value, to))
    return _append(s, arith.ExtSIOp(value, to))


def to_float(s: ScalarBuilder, value: SSAValue, tensor_type, to) -> SSAValue:
    if is_unsigned(tensor_type):
        return _append(s, arith.UIToFPOp(value, to))
    return _append(s, arith.SIToFPOp(value, to))


def _per_axis(s: ScalarBuilder, value: SSAValue, idx: Sequence[SSAValue], axis: int) -> SSAValue:
    """A scalar parameter, or the one of index idx[axis]."""
    return s.read(value, [] if not shape_of(value) else [idx[axis]])


def _saturate(s: ScalarBuilder, value: SSAValue, target) -> SSAValue:
    """A float holding an integer, clamped into `target`'s range and converted to it."""
    low, high = integer_range(target)
    value = s.max(value, s.const(float(low), value.type))
    value = s.min(value, s.const(float(high), value.type))
    # An integer in range after the clamp, converted exactly by adding 1.5 * 2**(p-1)
    # (p the mantissa's bits; no rounding: its unit in the last place is 1) and taking
    # the low bits of the sum: vector code, where LLVM expands a saturating
    # float-to-integer conversion lane by lane.
    bits = IntegerType(64 if value.type == f64 else 32)
    magic = 6755399441055744.0 if value.type == f64 else 12582912.0
    shifted = s.add(value, s.const(magic, value.type))
    pattern = _append(s, arith.BitcastOp(shifted, bits))
    return _append(s, arith.TruncIOp(pattern, IntegerType(target.width.data)))


@strategy(graph.QuantizeOp)
def quantize(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    assert isinstance(op, graph.QuantizeOp)
    x, scale, zero = inputs
    target = element_type_of(op.result)
    axis = op.axis_value

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        quotient = s.div(s.read(x, idx), _per_axis(s, scale, idx, axis))
        rounded = _append(s, math_dialect.RoundEvenOp(quotient))
        offset = to_float(s, _per_axis(s, zero, idx, axis), target, f32)
        return _saturate(s, s.add(rounded, offset), target)

    return [pb.compute("quantize", shape_of(x), body, target)]


@strategy(graph.DequantizeOp)
def dequantize(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    assert isinstance(op, graph.DequantizeOp)
    x, scale, zero = inputs
    source = element_type_of(x)
    axis = op.axis_value
    wide = f64 if source.width.data == 32 else f32

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        value = to_float(s, s.read(x, idx), source, f32)
        point = to_float(s, _per_axis(s, zero, idx, axis), source, wide)
        factor = _per_axis(s, scale, idx, axis)
        if wide == f64:
            value = _append(s, arith.ExtFOp(value, f64))
            factor = _append(s, arith.ExtFOp(factor, f64))
        product = s.mul(s.sub(value, point), factor)
        if wide == f64:
            product = _append(s, arith.TruncFOp(product, f32))
        return product

    return [pb.compute("dequantize", shape_of(x), body, f32)]


@strategy(graph.RequantizeOp)
def requantize(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    assert isinstance(op, graph.RequantizeOp)
    acc, multiplier, zero = inputs
    target = element_type_of(op.result)
    axis = op.axis_value

    wide = op.wide

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        float_type = f64 if wide else f32
        value = _append(s, arith.SIToFPOp(s.read(acc, idx), float_type))
        factor = _per_axis(s, multiplier, idx, axis)
        if wide:
            factor = _append(s, arith.ExtFOp(factor, f64))
        offset = to_float(s, _per_axis(s, zero, idx, axis), target, float_type)
        if wide:
            scaled = s.add(s.mul(value, factor), offset)
            return _saturate(s, _append(s, math_dialect.RoundEvenOp(scaled)), target)
        rounded = _append(s, math_dialect.RoundEvenOp(s.mul(value, factor)))
        return _saturate(s, s.add(rounded, offset), target)

    return [pb.compute("requantize", shape_of(acc), body, target)]


def _bias(pb: PrimitiveBuilder, stage: str, acc: SSAValue, bias: SSAValue, axis: int) -> SSAValue:
    return pb.compute(
        stage,
        shape_of(acc),
        lambda s, idx: s.add(s.read(acc, idx), s.read(bias, [idx[axis]])),
        I32,
    )


@strategy(graph.QConvOp)
def qconv(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[n, m, h, w] = sum_{c, kh, kw} i32(x'[n, g*Cg + c, h*s + kh*d, w*s + kw*d])
    * i32(w[m, c, kh, kw]) (+ bias[m]), x' the input padded with `pad_value`."""
    assert isinstance(op, graph.QConvOp)
    x, w = inputs[0], inputs[1]
    x_type, w_type = element_type_of(x), element_type_of(w)
    out_shape = shape_of(op.result)
    x_shape, w_shape = shape_of(x), op.weight_shape
    groups = op.group_count
    per_group_in = w_shape[1]
    strides, dilations = op.stride_values, op.dilation_values
    padded_sizes = [
        size + begin + end for size, begin, end in zip(x_shape[2:], op.pads_begin, op.pads_end)
    ]
    xp = pad_stage(pb, x, op.pads_begin, padded_sizes, op.pad_integer)
    if op.is_packed:
        return [_packed_qconv(pb, op, inputs, xp)]
    axes = ReductionAxes([per_group_in, *w_shape[2:]])

    def product(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        a, b = conv_window_reads(s, idx, axes.axes(k), xp, w, groups, strides, dilations)
        return s.mul(widen(s, a, x_type), widen(s, b, w_type))

    result = pb.reduce("qconv", te.ReduceKind.SUM, out_shape, axes.stage_extents, product, I32)
    if len(inputs) > 2:
        result = _bias(pb, "qconv_bias", result, inputs[2], 1)
    return [result]


def _packed_qconv(pb: PrimitiveBuilder, op: graph.QConvOp, inputs: Sequence[SSAValue], xp: SSAValue) -> SSAValue:
    """The convolution over a packed weight [KH, KW, C/4, M, 4]: the reduction runs over
    (c / 4, c % 4, kh, kw), every axis kept (a tensorized schedule finds them all)."""
    w = inputs[1]
    x_type, w_type = element_type_of(inputs[0]), element_type_of(w)
    kh, kw, groups4, _, pack = shape_of(w)
    strides, dilations = op.stride_values, op.dilation_values

    def product(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        n, m, oh, ow = idx
        cg, q, th, tw = k
        channel = s.index_add(s.index_mul(cg, s.index(pack)), q)
        h = _window_position(s, oh, th, strides[0], dilations[0])
        col = _window_position(s, ow, tw, strides[1], dilations[1])
        a = widen(s, s.read(xp, [n, channel, h, col]), x_type)
        b = widen(s, s.read(w, [th, tw, cg, m, q]), w_type)
        return s.mul(a, b)

    extents = [groups4, pack, kh, kw]
    result = pb.reduce("qconv", te.ReduceKind.SUM, shape_of(op.result), extents, product, I32)
    if len(inputs) > 2:
        result = _bias(pb, "qconv_bias", result, inputs[2], 1)
    return result


@strategy(graph.QDenseOp)
def qdense(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[.., n] = sum_k i32(x[.., k]) * i32(w[n, k]) (+ bias[n])."""
    assert isinstance(op, graph.QDenseOp)
    x, w = inputs[0], inputs[1]
    x_type, w_type = element_type_of(x), element_type_of(w)
    out_shape = shape_of(op.result)
    if op.is_packed:
        groups4, _, pack = shape_of(w)

        def packed_product(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
            depth = s.index_add(s.index_mul(k[0], s.index(pack)), k[1])
            a = widen(s, s.read(x, [*idx[:-1], depth]), x_type)
            b = widen(s, s.read(w, [k[0], idx[-1], k[1]]), w_type)
            return s.mul(a, b)

        extents, body = [groups4, pack], packed_product
    else:

        def product(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
            a = widen(s, s.read(x, [*idx[:-1], k[0]]), x_type)
            b = widen(s, s.read(w, [idx[-1], k[0]]), w_type)
            return s.mul(a, b)

        extents, body = [shape_of(w)[1]], product

    result = pb.reduce("qdense", te.ReduceKind.SUM, out_shape, extents, body, I32)
    if len(inputs) > 2:
        result = _bias(pb, "qdense_bias", result, inputs[2], len(out_shape) - 1)
    return [result]
