"""Converters for ONNX linear algebra: MatMul, Gemm and Det.

A product whose right-hand side is a constant matrix becomes `graph.dense`, whose weight
is [N, K] (one row per output unit): the constant is transposed at import time, and
Gemm's alpha and beta are folded into the weight and the bias when those are constants.
Products of two computed tensors become `graph.matmul`.

    Gemm(x, W, b, transB=1, alpha=2)  ->  graph.dense %x, (2 * W), b
    MatMul(x, W)                      ->  graph.dense %x, W^T
    MatMul(x, y)                      ->  graph.matmul %x, %y
"""

from __future__ import annotations

import itertools

import numpy as np

from xdsl.dialects.builtin import AnyFloat
from xdsl.ir import SSAValue

from strato.dialects import graph
from strato.dialects.graph import matmul_shape
from strato.frontends.onnx.conversion import ImportedValue, NodeContext, as_float32


def convert_matmul(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX MatMul (numpy matmul semantics) -> graph.dense or graph.matmul."""
    a, b = ctx.value(0), ctx.value(1)
    a_shape, b_shape = ctx.shape(0), ctx.shape(1)
    if len(b_shape) < 1 or len(a_shape) < 1:
        raise ctx.error("MatMul operands must have rank >= 1")
    if a_shape[-1] != b_shape[0 if len(b_shape) == 1 else -2]:
        raise ctx.error(
            f"contraction dimensions differ: {list(a_shape)} x {list(b_shape)}"
        )
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return [as_float32(np.matmul(a, b))]
    if isinstance(b, np.ndarray) and b.ndim == 2:
        weight = ctx.materialize(b.T, ctx.input_name(1))
        return [ctx.emit(graph.DenseOp(ctx.operand(0), weight)).results[0]]
    # numpy promotes a rank-1 operand to a matrix (a row on the left, a column on the
    # right) and drops that dimension from the result
    lhs, rhs = ctx.operand(0), ctx.operand(1)
    lhs_matrix = (1, *a_shape) if len(a_shape) == 1 else a_shape
    rhs_matrix = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    result_shape = matmul_shape(lhs_matrix, rhs_matrix)
    if result_shape is None:
        raise ctx.error(
            f"batch dimensions of {list(a_shape)} and {list(b_shape)} do not broadcast"
        )
    if len(a_shape) == 1:
        lhs = ctx.emit(graph.ReshapeOp(lhs, lhs_matrix)).results[0]
    if len(b_shape) == 1:
        rhs = ctx.emit(graph.ReshapeOp(rhs, rhs_matrix)).results[0]
    product = ctx.emit(graph.MatmulOp(lhs, rhs)).results[0]
    final_shape = list(result_shape)
    if len(b_shape) == 1:
        final_shape.pop(-1)
    if len(a_shape) == 1:
        final_shape.pop(-2 if len(b_shape) != 1 else -1)
    if tuple(final_shape) != result_shape:
        product = ctx.emit(graph.ReshapeOp(product, final_shape)).results[0]
    return [product]


def convert_gemm(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Gemm: Y = alpha * A' x B' + beta * C, with A' = A^T when transA and
    B' = B^T when transB; C is optional and broadcasts to [M, N]."""
    alpha = ctx.float_attr("alpha", 1.0)
    beta = ctx.float_attr("beta", 1.0)
    trans_a = ctx.flag_attr("transA")
    trans_b = ctx.flag_attr("transB")
    if ctx.has_attr("broadcast"):
        raise ctx.error("attribute broadcast is from opset < 7 and is not supported")

    a_shape, b_shape = ctx.shape(0), ctx.shape(1)
    if len(a_shape) != 2 or len(b_shape) != 2:
        raise ctx.error(
            f"A and B must be matrices, got shapes {list(a_shape)} and {list(b_shape)}"
        )
    m, k = (a_shape[1], a_shape[0]) if trans_a else a_shape
    k_b, n = (b_shape[1], b_shape[0]) if trans_b else b_shape
    if k != k_b:
        raise ctx.error(
            f"contraction dimensions differ: A' is [{m}, {k}] and B' is [{k_b}, {n}]"
        )
    c_shape: tuple[int, ...] | None = None
    if ctx.has_input(2):
        c_shape = ctx.shape(2)
        if len(c_shape) > 2 or ctx.broadcast(c_shape, (m, n)) != (m, n):
            raise ctx.error(
                f"C of shape {list(c_shape)} does not broadcast to the result [{m}, {n}]"
            )
        if beta == 0.0:
            c_shape = None

    a, b = ctx.value(0), ctx.value(1)
    c = ctx.value(2) if c_shape is not None else None
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        product = alpha * np.matmul(a.T if trans_a else a, b.T if trans_b else b)
        if c is None:
            return [as_float32(product)]
        if isinstance(c, np.ndarray):
            return [as_float32(product + beta * c)]
        return [_add_scaled(ctx, ctx.materialize(product), c, beta)]

    lhs = _transposed_operand(ctx, 0) if trans_a else ctx.operand(0)
    if isinstance(b, np.ndarray):
        # [N, K] weight with alpha folded in; C folds into the bias when it is a
        # constant that is the same for every row.
        weight = alpha * (b if trans_b else b.T)
        bias = None
        if isinstance(c, np.ndarray) and _is_row_vector(c.shape, n):
            bias = ctx.materialize(
                np.broadcast_to(beta * c.reshape(-1), (n,)), ctx.input_name(2)
            )
            c = None
        dense = graph.DenseOp(lhs, ctx.materialize(weight, ctx.input_name(1)), bias)
        result = ctx.emit(dense).results[0]
    else:
        if isinstance(a, np.ndarray) and alpha != 1.0:
            # alpha folds into a constant A before it is used.
            lhs = ctx.materialize(alpha * (a.T if trans_a else a))
            alpha = 1.0
        rhs = _transposed_operand(ctx, 1) if trans_b else ctx.operand(1)
        result = ctx.emit(graph.MatmulOp(lhs, rhs)).results[0]
        if alpha != 1.0:
            scale = ctx.materialize(np.full((1, 1), alpha, dtype=np.float32))
            result = ctx.emit(graph.MulOp(result, scale)).results[0]
    if c is None:
        return [result]
    if isinstance(c, np.ndarray):
        bias = ctx.materialize(beta * c, ctx.input_name(2))
        return [ctx.emit(graph.AddOp(result, bias)).results[0]]
    return [_add_scaled(ctx, result, c, beta)]


def _transposed_operand(ctx: NodeContext, index: int) -> SSAValue:
    constant = ctx.constant(index)
    if constant is not None:
        return ctx.materialize(constant.T, ctx.input_name(index))
    return ctx.emit(graph.TransposeOp(ctx.operand(index), [1, 0])).results[0]


def _is_row_vector(shape: tuple[int, ...], n: int) -> bool:
    """Whether a C of this shape adds the same [N] vector to every row."""
    return shape in ((), (1,), (n,), (1, 1), (1, n))


def _add_scaled(ctx: NodeContext, product: SSAValue, c: SSAValue, beta: float) -> SSAValue:
    """product + beta * c for a computed c."""
    if beta != 1.0:
        rank = max(len(c.type.get_shape()), 1)
        scale = ctx.materialize(np.full((1,) * rank, beta, dtype=np.float32))
        c = ctx.emit(graph.MulOp(c, scale)).results[0]
    return ctx.emit(graph.AddOp(product, c)).results[0]


DET_MAX_SIZE = 4
"""The largest matrix Det expands (Leibniz's formula has n! terms: 24 for 4 x 4)."""


def convert_det(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Det of [*, n, n] float matrices -> Leibniz's formula in graph ops: the sum over
    the permutations p of sign(p) * a[0, p(0)] * .. * a[n-1, p(n-1)], each entry a
    graph.slice of the batch. Exact in its operations (no pivoting to go wrong), but
    n! terms, so n is at most DET_MAX_SIZE; larger matrices are a diagnostic.

        Det(x: [3, 2, 2]) -> a00 * a11 - a01 * a10, each a graph.slice -> [3]
    """
    shape = ctx.shape(0)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ctx.error(f"input of shape {list(shape)} must be [*, n, n] square matrices")
    n = shape[-1]
    if not 1 <= n <= DET_MAX_SIZE:
        raise ctx.error(
            f"determinants of {n} x {n} matrices are not supported (1 to {DET_MAX_SIZE})"
        )
    known = ctx.known(0)
    if known is not None:
        if known.dtype.kind != "f":
            raise ctx.error(f"input must be a float tensor, got {known.dtype}")
        return [np.asarray(np.linalg.det(known)).astype(known.dtype)]
    x = ctx.operand(0)
    if not isinstance(x.type.element_type, AnyFloat):
        raise ctx.error(f"input must be a float tensor, got {x.type.element_type}")
    batch = list(shape[:-2])
    rank = len(shape)

    def entry(row: int, column: int) -> SSAValue:
        starts = [0] * (rank - 2) + [row, column]
        sliced = ctx.emit(graph.SliceOp(x, starts, [1] * rank, [*batch, 1, 1])).results[0]
        return ctx.emit(graph.ReshapeOp(sliced, batch)).results[0]

    entries = {(i, j): entry(i, j) for i in range(n) for j in range(n)}
    even: list[SSAValue] = []
    odd: list[SSAValue] = []
    for permutation in itertools.permutations(range(n)):
        term = entries[0, permutation[0]]
        for row in range(1, n):
            term = ctx.emit(graph.MulOp(term, entries[row, permutation[row]])).results[0]
        (even if _is_even(permutation) else odd).append(term)
    positive = _sum(ctx, even)
    if not odd:
        return [positive]
    return [ctx.emit(graph.SubOp(positive, _sum(ctx, odd))).results[0]]


def _sum(ctx: NodeContext, terms: list[SSAValue]) -> SSAValue:
    total = terms[0]
    for term in terms[1:]:
        total = ctx.emit(graph.AddOp(total, term)).results[0]
    return total


def _is_even(permutation: tuple[int, ...]) -> bool:
    inversions = sum(
        1
        for i, a in enumerate(permutation)
        for b in permutation[i + 1 :]
        if a > b
    )
    return inversions % 2 == 0
