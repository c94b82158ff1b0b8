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
from xdsl.dialects.builtin import AnyFloat, IntegerType, f64
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


UNARY: dict[type[Operation], UnaryScalar] = {
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
