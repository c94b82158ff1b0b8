"""Strategies of reductions: one `te.reduce` over the reduced axes (a mean adds a
compute stage dividing by the count, which fuses into the same kernel)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import AnyFloat
from xdsl.ir import Operation, SSAValue

from strato.diagnostics import StratoError
from strato.dialects import graph, te
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    element_type_of,
    shape_of,
)

_KINDS: dict[type[Operation], te.ReduceKind] = {
    graph.ReduceSumOp: te.ReduceKind.SUM,
    graph.ReduceMeanOp: te.ReduceKind.SUM,
    graph.ReduceMaxOp: te.ReduceKind.MAX,
}

_EMPTY_VALUE: dict[type[Operation], float] = {
    graph.ReduceSumOp: 0.0,
    graph.ReduceMeanOp: float("nan"),
    graph.ReduceMaxOp: float("-inf"),
}


@strategy(graph.ReduceSumOp, graph.ReduceMeanOp, graph.ReduceMaxOp)
def reduction(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[i..] = combine over k.. of input[i.. with k.. at the reduced axes]."""
    assert isinstance(op, graph.ReductionOp)
    (x,) = inputs
    dtype = element_type_of(x)
    if not isinstance(dtype, AnyFloat):
        raise StratoError(
            f"'{op.name}' on {dtype} tensors has no tensor-expression strategy yet (float "
            "reductions only)",
            op=op,
        )
    shape = shape_of(x)
    axes = op.axis_values
    keepdims = op.keeps_dims
    out_shape = shape_of(op.results[0])
    extents = [shape[a] for a in axes]
    stage = op.name.split(".", 1)[1]
    if 0 in extents:
        # nothing to combine: the identity of the reduction (NaN for a mean)
        value = _EMPTY_VALUE[type(op)]
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
