"""Strategies of element-wise operators: one compute stage each, reading its inputs at
the output index (broadcast inputs at index 0 along their size-1 dims).

Stage bodies use the type-generic `ScalarBuilder`, so integer tensors get integer
arithmetic where the operator allows them (add, sub, div, maximum, abs, clip, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.dialects import math as math_dialect
from xdsl.dialects.builtin import AnyFloat, Float16Type, IntegerType, f32, f64
from xdsl.ir import Attribute, Operation, SSAValue

from strato.dialects import graph
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    broadcast_indices,
    element_type_of,
    is_unsigned,
    shape_of,
)

UnaryScalar = Callable[[ScalarBuilder, SSAValue], SSAValue]
BinaryScalar = Callable[[ScalarBuilder, SSAValue, SSAValue], SSAValue]


def sigmoid(s: ScalarBuilder, x: SSAValue) -> SSAValue:
    """1 / (1 + exp(-x)): exp overflows to inf for very negative x, giving exactly 0."""
    one = s.const(1.0)
    return s.div(one, s.add(one, s.exp(s.neg(x))))


def gelu_erf(s: ScalarBuilder, x: SSAValue) -> SSAValue:
    """0.5 x (1 + erf(x / sqrt 2))."""
    phi = s.add(s.const(1.0), s.erf(s.mul(x, s.const(1.0 / math.sqrt(2.0)))))
    return s.mul(s.mul(s.const(0.5), x), phi)


def gelu_tanh(s: ScalarBuilder, x: SSAValue) -> SSAValue:
    """0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    cube = s.mul(s.mul(x, x), x)
    inner = s.mul(s.const(math.sqrt(2.0 / math.pi)), s.add(x, s.mul(s.const(0.044715), cube)))
    return s.mul(s.mul(s.const(0.5), x), s.add(s.const(1.0), s.tanh(inner)))


def _math(op_class: type[Operation]) -> UnaryScalar:
    """The stage body of a one-operand `math` op."""
    return lambda s, x: _emit(s, op_class(x))


def _libm(op_class: type[Operation], s: ScalarBuilder, x: SSAValue) -> SSAValue:
    """A `math` op that lowers to a libm call, which exists for f32 and f64 only: an f16
    computes in f32 and rounds once."""
    if not isinstance(x.type, Float16Type):
        return _emit(s, op_class(x))
    wide = _emit(s, op_class(_emit(s, arith.ExtFOp(x, f32))))
    return _emit(s, arith.TruncFOp(wide, x.type))


def _libm_math(op_class: type[Operation]) -> UnaryScalar:
    """The stage body of a one-operand `math` op that lowers to a libm call (`_libm`)."""
    return lambda s, x: _libm(op_class, s, x)


def softplus(s: ScalarBuilder, x: SSAValue) -> SSAValue:
    """max(x, 0) + log1p(exp(-|x|)): no overflow for large x, exact 0 + x there."""
    tail = _libm(math_dialect.Log1pOp, s, s.exp(s.neg(s.abs(x))))
    return s.add(s.max(x, s.const(0.0)), tail)


def sign(s: ScalarBuilder, x: SSAValue) -> SSAValue:
    """1 above zero, -1 below, else x itself (0, or NaN)."""
    zero = s.const(0, x.type)
    below = s.select(s.cmp("lt", x, zero), s.const(-1, x.type), x)
    return s.select(s.cmp("gt", x, zero), s.const(1, x.type), below)


def clamp_unit(s: ScalarBuilder, x: SSAValue) -> SSAValue:
    """max(0, min(1, x))."""
    return s.max(s.min(x, s.const(1.0)), s.const(0.0))


def elu(s: ScalarBuilder, x: SSAValue, alpha: float) -> SSAValue:
    """x if x > 0 else alpha * expm1(x)."""
    negative = s.mul(s.const(alpha), _libm(math_dialect.ExpM1Op, s, s.min(x, s.const(0.0))))
    return s.select(s.cmp("gt", x, s.const(0.0)), x, negative)


UNARY: dict[type[Operation], UnaryScalar] = {
    graph.FloorOp: _math(math_dialect.FloorOp),
    graph.CeilOp: _math(math_dialect.CeilOp),
    graph.RoundOp: _math(math_dialect.RoundEvenOp),
    graph.SignOp: sign,
    graph.SinOp: _math(math_dialect.SinOp),
    graph.CosOp: _math(math_dialect.CosOp),
    graph.TanOp: _math(math_dialect.TanOp),
    graph.AsinOp: _libm_math(math_dialect.AsinOp),
    graph.AcosOp: _libm_math(math_dialect.AcosOp),
    graph.AtanOp: _libm_math(math_dialect.AtanOp),
    graph.SinhOp: _libm_math(math_dialect.SinhOp),
    graph.CoshOp: _libm_math(math_dialect.CoshOp),
    graph.AsinhOp: _libm_math(math_dialect.AsinhOp),
    graph.AcoshOp: _libm_math(math_dialect.AcoshOp),
    graph.AtanhOp: _libm_math(math_dialect.AtanhOp),
    graph.ReciprocalOp: lambda s, x: s.div(s.const(1.0), x),
    graph.SoftplusOp: softplus,
    graph.SoftsignOp: lambda s, x: s.div(x, s.add(s.const(1.0), s.abs(x))),
    graph.MishOp: lambda s, x: s.mul(x, s.tanh(softplus(s, x))),
    graph.HardSwishOp: lambda s, x: s.mul(
        x, clamp_unit(s, s.add(s.mul(x, s.const(1.0 / 6.0)), s.const(0.5)))
    ),
    graph.ReluOp: lambda s, x: s.max(x, s.const(0)),
    graph.SigmoidOp: sigmoid,
    graph.TanhOp: ScalarBuilder.tanh,
    graph.ErfOp: ScalarBuilder.erf,
    graph.SqrtOp: ScalarBuilder.sqrt,
    graph.ExpOp: ScalarBuilder.exp,
    graph.LogOp: ScalarBuilder.log,
    graph.NegOp: ScalarBuilder.neg,
    graph.AbsOp: ScalarBuilder.abs,
}

BINARY: dict[type[Operation], BinaryScalar] = {
    graph.AddOp: ScalarBuilder.add,
    graph.SubOp: ScalarBuilder.sub,
    graph.MulOp: ScalarBuilder.mul,
    graph.DivOp: ScalarBuilder.div,
    graph.MaximumOp: ScalarBuilder.max,
    graph.MinimumOp: ScalarBuilder.min,
}


def _stage_name(op: Operation) -> str:
    return op.name.split(".", 1)[1]


def _map(pb: PrimitiveBuilder, op: Operation, x: SSAValue, fn: UnaryScalar) -> SSAValue:
    """One stage applying `fn` to every element of `x`."""
    return pb.compute(
        _stage_name(op), shape_of(x), lambda s, idx: fn(s, s.read(x, idx)), element_type_of(x)
    )


@strategy(*UNARY)
def unary_elementwise(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    (x,) = inputs
    return [_map(pb, op, x, UNARY[type(op)])]


@strategy(graph.LeakyReluOp)
def leaky_relu(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """x if x >= 0 else alpha * x (NaN stays NaN)."""
    assert isinstance(op, graph.LeakyReluOp)
    alpha = op.alpha.value.data

    def body(s: ScalarBuilder, x: SSAValue) -> SSAValue:
        return s.select(s.cmp("ge", x, s.const(0.0)), x, s.mul(s.const(alpha), x))

    return [_map(pb, op, inputs[0], body)]


@strategy(graph.ClipOp)
def clip(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """min(max(x, low), high), each bound only when set."""
    assert isinstance(op, graph.ClipOp)
    low, high = op.bounds

    def body(s: ScalarBuilder, x: SSAValue) -> SSAValue:
        if low is not None:
            x = s.max(x, s.const(low))
        if high is not None:
            x = s.min(x, s.const(high))
        return x

    return [_map(pb, op, inputs[0], body)]


@strategy(graph.EluOp, graph.SeluOp, graph.CeluOp, graph.HardSigmoidOp, graph.ThresholdedReluOp)
def float_params_unary(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """The activations with float parameters (alpha, beta, gamma)."""
    assert isinstance(op, graph.FloatParamsUnaryOp)
    alpha = op.param("alpha")

    def body(s: ScalarBuilder, x: SSAValue) -> SSAValue:
        if isinstance(op, graph.EluOp):
            return elu(s, x, alpha)
        if isinstance(op, graph.SeluOp):
            return s.mul(s.const(op.param("gamma")), elu(s, x, alpha))
        if isinstance(op, graph.CeluOp):
            scaled = elu(s, s.mul(x, s.const(1.0 / alpha)), 1.0)
            return s.add(s.max(x, s.const(0.0)), s.min(s.mul(s.const(alpha), scaled), s.const(0.0)))
        if isinstance(op, graph.HardSigmoidOp):
            return clamp_unit(s, s.add(s.mul(s.const(alpha), x), s.const(op.param("beta"))))
        assert isinstance(op, graph.ThresholdedReluOp)
        return s.select(s.cmp("gt", x, s.const(alpha)), x, s.const(0.0))

    return [_map(pb, op, inputs[0], body)]


@strategy(graph.GeluOp)
def gelu(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    assert isinstance(op, graph.GeluOp)
    body = gelu_tanh if op.approximation == "tanh" else gelu_erf
    return [_map(pb, op, inputs[0], body)]


def _broadcast_binary(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue], fn: BinaryScalar
) -> SSAValue:
    lhs, rhs = inputs
    out_shape = shape_of(op.results[0])

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        a = s.read(lhs, broadcast_indices(s, idx, shape_of(lhs), out_shape))
        b = s.read(rhs, broadcast_indices(s, idx, shape_of(rhs), out_shape))
        return fn(s, a, b)

    return pb.compute(_stage_name(op), out_shape, body, element_type_of(op.results[0]))


@strategy(*BINARY)
def broadcast_binary(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    return [_broadcast_binary(pb, op, inputs, BINARY[type(op)])]


@strategy(graph.PReluOp)
def prelu(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """x if x >= 0 else slope * x (NaN stays NaN)."""

    def body(s: ScalarBuilder, x: SSAValue, slope: SSAValue) -> SSAValue:
        return s.select(s.cmp("lt", x, s.const(0, x.type)), s.mul(slope, x), x)

    return [_broadcast_binary(pb, op, inputs, body)]


@strategy(graph.ModOp)
def mod(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """The remainder, truncated (C's fmod), then moved into the divisor's sign unless
    `fmod`. Floats: x - trunc(x / y) * y with one rounding (an fma; xDSL's arith has no
    remf), x itself for an infinite y; f16 and f32 in f64 with the quotient corrected,
    exact while |x / y| < 2**53 (`_truncated_remainder_in_f64`). Integers: `remsi`/`remui`, and 0 for a zero
    divisor (where arith's remainder is undefined)."""
    assert isinstance(op, graph.ModOp)
    floored = not op.truncated

    def body(s: ScalarBuilder, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        zero = s.const(0, lhs.type)
        if isinstance(lhs.type, AnyFloat):
            if isinstance(lhs.type, Float16Type) or lhs.type == f32:
                remainder = _truncated_remainder_in_f64(s, lhs, rhs)
            else:
                quotient = _emit(s, math_dialect.TruncOp(s.div(lhs, rhs)))
                remainder = _emit(s, math_dialect.FmaOp(s.neg(quotient), rhs, lhs))
            infinity = s.const(float("inf"), lhs.type)
            keep = _emit(
                s,
                arith.AndIOp(s.cmp("eq", s.abs(rhs), infinity), s.cmp("lt", s.abs(lhs), infinity)),
            )
            remainder = s.select(keep, lhs, remainder)
            divisor = rhs
        else:
            is_zero = s.cmp("eq", rhs, zero)
            # a zero divisor is replaced by 1 so that the remainder is defined
            divisor = s.select(is_zero, s.const(1, lhs.type), rhs)
            remainder = s.rem(lhs, divisor)
        if floored and not s.unsigned:
            signs_differ = s.cmp("ne", s.cmp("lt", remainder, zero), s.cmp("lt", divisor, zero))
            nonzero = s.cmp("ne", remainder, zero)
            fix = _emit(s, arith.AndIOp(signs_differ, nonzero))
            remainder = s.select(fix, s.add(remainder, divisor), remainder)
        if isinstance(lhs.type, AnyFloat):
            return remainder
        return s.select(is_zero, zero, remainder)

    return [_broadcast_binary(pb, op, inputs, body)]


def _truncated_remainder_in_f64(s: ScalarBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    """fmod(x, y) of f16/f32 operands, computed in f64 and rounded back (exactly).

    q = trunc(x / y) from the rounded f64 quotient is the true truncated quotient or one
    off; r = x - q * y is then exact in one fma (x and y have 24-bit significands) and
    one step fixes an off-by-one q: r opposite to x's sign gets |y| added back towards
    x's sign, r with |r| >= |y| gets it taken away."""
    wide_x = _emit(s, arith.ExtFOp(x, f64))
    wide_y = _emit(s, arith.ExtFOp(y, f64))
    quotient = _emit(s, math_dialect.TruncOp(s.div(wide_x, wide_y)))
    r = _emit(s, math_dialect.FmaOp(s.neg(quotient), wide_y, wide_x))
    zero = s.const(0.0, f64)
    step = s.abs(wide_y)
    x_negative = s.cmp("lt", wide_x, zero)
    toward_x = s.select(x_negative, s.neg(step), step)
    crossed = _emit(
        s, arith.AndIOp(s.cmp("ne", r, zero), s.cmp("ne", s.cmp("lt", r, zero), x_negative))
    )
    r = s.select(crossed, s.add(r, toward_x), r)
    r = s.select(s.cmp("ge", s.abs(r), step), s.sub(r, toward_x), r)
    # r is exact in x's type, so rounding it through f32 changes nothing; and a direct
    # f64 -> f16 truncation is a call of libgcc's __truncdfhf2 even on F16C machines,
    # which the JIT resolves only where the process has loaded a libgcc_s that
    # exports it (an unresolved call jumps to 0: the f16 Mod crash)
    narrow = _emit(s, arith.TruncFOp(r, f32))
    if x.type == f32:
        return narrow
    return _emit(s, arith.TruncFOp(narrow, x.type))


@strategy(graph.PowOp)
def power(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """base ** exponent in the base's element type: powf on float bases (an integer
    exponent converted to the base's type); on integer bases ipowi with an integer
    exponent, or powf in f64 truncated back with a float exponent (numpy's result, cast)."""
    base_unsigned = is_unsigned(element_type_of(inputs[0]))
    exponent_unsigned = is_unsigned(element_type_of(inputs[1]))

    def body(s: ScalarBuilder, base: SSAValue, exponent: SSAValue) -> SSAValue:
        if isinstance(base.type, AnyFloat):
            return s.pow(base, _convert(s, exponent, base.type, exponent_unsigned))
        assert isinstance(base.type, IntegerType)
        if isinstance(exponent.type, IntegerType):
            exponent = _convert(s, exponent, base.type, exponent_unsigned)
            return _emit(s, math_dialect.IPowIOp(base, exponent))
        wide = _convert(s, base, f64, base_unsigned)
        result = s.pow(wide, _convert(s, exponent, f64, exponent_unsigned))
        to_int = arith.FPToUIOp if base_unsigned else arith.FPToSIOp
        return _emit(s, to_int(result, base.type))

    return [_broadcast_binary(pb, op, inputs, body)]


def _convert(s: ScalarBuilder, value: SSAValue, to: Attribute, unsigned: bool) -> SSAValue:
    """`value` as a scalar of type `to` (float or signless integer); `unsigned` says how
    to read an integer `value`."""
    source = value.type
    if source == to:
        return value
    if isinstance(to, AnyFloat):
        if isinstance(source, AnyFloat):
            resize = arith.ExtFOp if source.bitwidth < to.bitwidth else arith.TruncFOp
            return _emit(s, resize(value, to))
        return _emit(s, (arith.UIToFPOp if unsigned else arith.SIToFPOp)(value, to))
    assert isinstance(source, IntegerType) and isinstance(to, IntegerType)
    if source.width.data > to.width.data:
        return _emit(s, arith.TruncIOp(value, to))
    return _emit(s, (arith.ExtUIOp if unsigned else arith.ExtSIOp)(value, to))


def _emit(s: ScalarBuilder, op: Operation) -> SSAValue:
    s.block.add_op(op)
    return op.results[0]
