"""Strategies of linear-algebra operators: a sum reduction over the contracted axis,
then element-wise stages (bias) that read it, so later fusion finds the reduction as
the group's anchor."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from strato.dialects import graph, te
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    broadcast_indices,
    element_type_of,
    shape_of,
)


@strategy(graph.DenseOp)
def dense(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[.., n] = sum_k x[.., k] * w[n, k]  (+ bias[n])."""
    assert isinstance(op, graph.DenseOp)
    x, w = inputs[0], inputs[1]
    out_shape = shape_of(op.results[0])
    features = shape_of(x)[-1]
    dtype = element_type_of(x)

    def product(s, idx, k):
        a = s.read(x, [*idx[:-1], k[0]])
        b = s.read(w, [idx[-1], k[0]])
        return s.mul(a, b)

    result = pb.reduce("dense", te.ReduceKind.SUM, out_shape, [features], product, dtype)
    if len(inputs) > 2:
        bias, acc = inputs[2], result
        result = pb.compute(
            "bias_add",
            out_shape,
            lambda s, idx: s.add(s.read(acc, idx), s.read(bias, [idx[-1]])),
            dtype,
        )
    return [result]


@strategy(graph.MatmulOp)
def matmul(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[b.., m, n] = sum_k lhs[b'.., m, k] * rhs[b''.., k, n], batch dims broadcast."""
    lhs, rhs = inputs
    out_shape = shape_of(op.results[0])
    lhs_shape, rhs_shape = shape_of(lhs), shape_of(rhs)
    batch = out_shape[:-2]

    def product(s, idx, k):
        lhs_batch = broadcast_indices(s, idx[:-2], lhs_shape[:-2], batch)
        rhs_batch = broadcast_indices(s, idx[:-2], rhs_shape[:-2], batch)
        a = s.read(lhs, [*lhs_batch, idx[-2], k[0]])
        b = s.read(rhs, [*rhs_batch, k[0], idx[-1]])
        return s.mul(a, b)

    return [
        pb.reduce(
            "matmul",
            te.ReduceKind.SUM,
            out_shape,
            [lhs_shape[-1]],
            product,
            element_type_of(lhs),
        )
    ]
