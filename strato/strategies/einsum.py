"""Strategy of graph.einsum: one stage, a sum over the contracted letters of the product
of every operand read at its letters.

    "bhqd,bhkd->bhqk"  ->  te.reduce "matmul" sum (%b, %h, %q, %k) over (%d : D)
                              q[b, h, q, d] * k[b, h, k, d]
    "ii->i"            ->  te.compute "einsum" (%i)  m[i, i]

A two-operand equation with one contracted letter and no repeated letter in a term is a
(batched, possibly transposed) matrix product: its stage is named `matmul`, so the GEMM
schedule template (`schedule/templates/dense.py`) takes it, finding the operand read
along the last output letter and the contracted one by its strides, as it does for
graph.matmul and graph.dense. Every other equation is an `einsum` stage, scheduled as
any reduction (or as an injective stage when nothing is contracted).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from strato.dialects import graph, te
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    element_type_of,
    shape_of,
)


def is_matrix_product(terms: Sequence[str], output: str) -> bool:
    """Whether the equation is a batched matrix product: two operands, one letter
    contracted, no letter repeated within a term."""
    if len(terms) != 2 or any(len(set(term)) != len(term) for term in terms):
        return False
    contracted = {letter for term in terms for letter in term} - set(output)
    return len(contracted) == 1


@strategy(graph.EinsumOp)
def einsum(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[output letters] = sum over contracted letters of prod_n x_n[term_n]."""
    assert isinstance(op, graph.EinsumOp)
    terms, output = op.terms
    sizes = op.letter_sizes
    contracted = [letter for letter in dict.fromkeys("".join(terms)) if letter not in output]
    out_shape = shape_of(op.results[0])
    dtype = element_type_of(op.results[0])

    def product(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        at = dict(zip(output, idx)) | dict(zip(contracted, k))
        value: SSAValue | None = None
        for x, term in zip(inputs, terms):
            # a size-1 dimension broadcasts: read at 0
            indices = [
                at[letter] if size == sizes[letter] else s.index(0)
                for letter, size in zip(term, shape_of(x))
            ]
            read = s.read(x, indices)
            value = read if value is None else s.mul(value, read)
        assert value is not None
        return value

    if not contracted:
        return [pb.compute("einsum", out_shape, lambda s, idx: product(s, idx, []), dtype)]
    stage = "matmul" if is_matrix_product(terms, output) else "einsum"
    extents = [sizes[letter] for letter in contracted]
    return [pb.reduce(stage, te.ReduceKind.SUM, out_shape, extents, product, dtype)]
