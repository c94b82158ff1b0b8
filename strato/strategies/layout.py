"""Strategies of operators that move data without arithmetic (transpose, ...)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from strato.dialects import graph
from strato.strategies import strategy
from strato.strategies.builder import PrimitiveBuilder, element_type_of, shape_of


@strategy(graph.TransposeOp)
def transpose(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    assert isinstance(op, graph.TransposeOp)
    (x,) = inputs
    perm = op.permutation

    def body(s, idx):
        # result[i_0..i_n] = input[j] with j[perm[d]] = i_d
        source = [idx[0]] * len(perm)
        for d, p in enumerate(perm):
            source[p] = idx[d]
        return s.read(x, source)

    return [pb.compute("transpose", shape_of(op.results[0]), body, element_type_of(x))]
