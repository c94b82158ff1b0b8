"""Strategies of reductions: one `te.reduce` over the reduced axes (a mean adds a
compute stage dividing by the count, which fuses into the same kernel)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, IntegerType, i1, i8
from xdsl.ir import Operation, SSAValue

from strato.dialects import graph, te
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    element_type_of,
    reduction_identity,
    shape_of,
)

_KINDS: dict[type[Operation], te.ReduceKind] = {
    graph.ReduceSumOp: te.ReduceKind.SUM,
    graph.ReduceMeanOp: te.ReduceKind.SUM,
    graph.ReduceMaxOp: te.ReduceKind.MAX,
}


@strategy(graph.ReduceSumOp, graph.ReduceMeanOp, graph.ReduceMaxOp)
def reduction(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[i..] = combine over k.. of input[i.. with k.. at the reduced axes]."""
    assert isinstance(op, graph.ReductionOp)
    (x,) = inputs
    dtype = element_type_of(x)
    shape = shape_of(x)
    axes = op.axis_values
    keepdims = op.keeps_dims
    out_shape = shape_of(op.results[0])
    extents = [shape[a] for a in axes]
    stage = op.name.split(".", 1)[1]
    if 0 in extents:
        # nothing to combine: the identity of the reduction (a mean of nothing is NaN,
        # or 0 for integers)
        if isinstance(op, graph.ReduceMeanOp):
            value = float("nan") if isinstance(dtype, AnyFloat) else 0
        else:
            value = reduction_identity(_KINDS[type(op)], dtype)
        return [pb.compute(stage, out_shape, lambda s, idx: s.const(value), dtype)]

    def body(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        source: list[SSAValue] = []
        kept = iter(idx)
        reduced = iter(k)
        for d in range(len(shape)):
            if d in axes:
                source.append(next(reduced))
                if keepdims:
                    next(kept)
            else:
                source.append(next(kept))
        return s.read(x, source)

    if isinstance(dtype, IntegerType) and dtype.width.data == 1:
        return [_bool_reduction(pb, stage, _KINDS[type(op)], out_shape, extents, body)]
    result = pb.reduce(stage, _KINDS[type(op)], out_shape, extents, body, dtype)
    if isinstance(op, graph.ReduceMeanOp):
        count = 1
        for extent in extents:
            count *= extent
        total = result
        result = pb.compute(
            "mean",
            out_shape,
            lambda s, idx: s.div(s.read(total, idx), s.const(count)),
            dtype,
        )
    return [result]


def _bool_reduction(
    pb: PrimitiveBuilder,
    stage: str,
    kind: te.ReduceKind,
    shape: Sequence[int],
    extents: Sequence[int],
    body: Callable[[ScalarBuilder, list[SSAValue], list[SSAValue]], SSAValue],
) -> SSAValue:
    """A reduction of booleans, combined as 0/1 bytes: signed i1 arithmetic would read
    true as -1, so max would compute `and` instead of `or`."""

    def widened(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        return _append(s, arith.ExtUIOp(body(s, idx, k), i8))

    wide = pb.reduce(stage, kind, shape, extents, widened, i8)
    return pb.compute(
        "to_bool",
        shape,
        lambda s, idx: _append(s, arith.TruncIOp(s.read(wide, idx), i1)),
        i1,
    )


def _append(s: ScalarBuilder, op: Operation) -> SSAValue:
    s.block.add_op(op)
    return op.results[0]
