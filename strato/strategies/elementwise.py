"""Strategies of element-wise operators: one compute stage each, reading its inputs at
the output index (broadcast inputs at index 0 along their size-1 dims)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import Operation, SSAValue

from strato.dialects import graph
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    broadcast_indices,
    element_type_of,
    shape_of,
)

UnaryScalar = Callable[[ScalarBuilder, SSAValue], SSAValue]
BinaryScalar = Callable[[ScalarBuilder, SSAValue, SSAValue], SSAValue]

UNARY: dict[type[Operation], UnaryScalar] = {
    graph.ReluOp: lambda s, x: s.max(x, s.const(0.0)),
}

BINARY: dict[type[Operation], BinaryScalar] = {
    graph.AddOp: ScalarBuilder.add,
    graph.MulOp: ScalarBuilder.mul,
}


def _stage_name(op: Operation) -> str:
    return op.name.split(".", 1)[1]


@strategy(*UNARY)
def unary_elementwise(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    (x,) = inputs
    fn = UNARY[type(op)]
    return [
        pb.compute(
            _stage_name(op),
            shape_of(x),
            lambda s, idx: fn(s, s.read(x, idx)),
            element_type_of(x),
        )
    ]


@strategy(*BINARY)
def broadcast_binary(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    lhs, rhs = inputs
    out_shape = shape_of(op.results[0])
    fn = BINARY[type(op)]

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        a = s.read(lhs, broadcast_indices(s, idx, shape_of(lhs), out_shape))
        b = s.read(rhs, broadcast_indices(s, idx, shape_of(rhs), out_shape))
        return fn(s, a, b)

    return [pb.compute(_stage_name(op), out_shape, body, element_type_of(lhs))]
