"""Linear algebra: matmul and dense."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import (
    NoMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import (
    FloatTensor,
    GraphOp,
    PatternKind,
    broadcast_dim_sources,
    broadcast_shapes,
    is_run_time,
    static_shape,
)
from strato.dialects.tensor_types import tensor_type_like


@irdl_op_definition
class MatmulOp(GraphOp):
    """Matrix product with numpy `matmul` semantics on tensors of rank >= 2.

    The last two dimensions are multiplied, [.., M, K] x [.., K, N] -> [.., M, N];
    leading (batch) dimensions broadcast.

        %c = graph.matmul %a, %b : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
    """

    name = "graph.matmul"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OUT_ELEMWISE_FUSABLE
    RUN_TIME_DIMS: ClassVar[bool] = True

    lhs = operand_def(FloatTensor)
    rhs = operand_def(FloatTensor)
    result = result_def(FloatTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        lhs, rhs = SSAValue.get(lhs), SSAValue.get(rhs)
        shape = matmul_shape(static_shape(lhs), static_shape(rhs))
        if shape is None:
            raise ValueError(f"cannot multiply {lhs.type} by {rhs.type}")
        super().__init__(
            operands=[lhs, rhs], result_types=[tensor_type_like(lhs.type, shape)]
        )

    def infer_shape(self) -> tuple[int, ...] | None:
        lhs, rhs = static_shape(self.lhs), static_shape(self.rhs)
        if len(lhs) < 2 or len(rhs) < 2:
            raise VerifyException("'graph.matmul' operands must have rank >= 2")
        if lhs[-1] != rhs[-2]:
            raise VerifyException(
                f"'graph.matmul' contraction dimensions differ: {lhs[-1]} and {rhs[-2]}"
            )

        shape = matmul_shape(lhs, rhs)
        if shape is None:
            raise VerifyException(
                f"'graph.matmul' batch dimensions {list(lhs[:-2])} and "
                f"{list(rhs[:-2])} do not broadcast"
            )
        return shape

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        lhs, rhs = static_shape(self.lhs), static_shape(self.rhs)
        rank = len(static_shape(self.result))
        batch = broadcast_dim_sources([lhs[:-2], rhs[:-2]], rank - 2)
        sources = {(0, d): s for d, s in batch.items()}
        if lhs[-2] < 0:
            sources[(0, rank - 2)] = [(0, len(lhs) - 2)]
        if rhs[-1] < 0:
            sources[(0, rank - 1)] = [(1, len(rhs) - 1)]
        return sources

    def run_time_dim_equalities(self) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        lhs, rhs = static_shape(self.lhs), static_shape(self.rhs)
        if lhs[-1] < 0:
            return [((0, len(lhs) - 1), (1, len(rhs) - 2))]
        return []

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.matmul(inputs[0], inputs[1]).astype(inputs[0].dtype)]


def matmul_shape(lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...] | None:
    if len(lhs) < 2 or len(rhs) < 2 or lhs[-1] != rhs[-2]:
        return None
    batch = broadcast_shapes(lhs[:-2], rhs[:-2])
    if batch is None:
        return None
    return (*batch, lhs[-2], rhs[-1])


@irdl_op_definition
class DenseOp(GraphOp):
    """Fully connected layer: result = input x weight^T (+ bias).

    input is [.., K], weight is [N, K] (one row per output unit), the optional bias
    is [N]; the result is [.., N]:
    result[.., n] = sum_k input[.., k] * weight[n, k] + bias[n].

        %y = graph.dense %x, %w, %b : (tensor<1x784xf32>, tensor<10x784xf32>, tensor<10xf32>) -> tensor<1x10xf32>
    """

    name = "graph.dense"
    # quantized graphs multiply int32 tensors (int8 values, exact int32 accumulation)
    FLOAT_OPERANDS: ClassVar[bool] = False
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OUT_ELEMWISE_FUSABLE
    RUN_TIME_DIMS: ClassVar[bool] = True

    input = operand_def(FloatTensor)
    weight = operand_def(FloatTensor)
    bias = opt_operand_def(FloatTensor)
    result = result_def(FloatTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
    ):
        input, weight = SSAValue.get(input), SSAValue.get(weight)
        shape = (*static_shape(input)[:-1], static_shape(weight)[0])
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            result_types=[tensor_type_like(input.type, shape)],
        )

    def infer_shape(self) -> tuple[int, ...] | None:
        x, w = static_shape(self.input), static_shape(self.weight)
        if len(x) < 1:
            raise VerifyException("'graph.dense' input must have rank >= 1")
        if len(w) != 2:
            raise VerifyException(
                f"'graph.dense' weight must have rank 2, got rank {len(w)}"
            )
        if x[-1] != w[1]:
            features = "?" if x[-1] < 0 else x[-1]
            raise VerifyException(
                f"'graph.dense' input features {features} differ from weight features {w[1]}"
            )
        if self.bias is not None and static_shape(self.bias) != (w[0],):
            raise VerifyException(
                f"'graph.dense' bias must have shape [{w[0]}], got {list(static_shape(self.bias))}"
            )
        return (*x[:-1], w[0])

    def verify_(self) -> None:
        for operand in self.operands[1:]:
            if is_run_time(operand.type):
                raise VerifyException(
                    f"'graph.dense' weight and bias take static shapes, got {operand.type}"
                )
        super().verify_()

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        shape = static_shape(self.input)
        return {(0, d): [(0, d)] for d, size in enumerate(shape[:-1]) if size < 0}

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        out = np.matmul(inputs[0], inputs[1].T)
        if len(inputs) > 2:
            out = out + inputs[2]
        return [out.astype(inputs[0].dtype)]


OPS = (MatmulOp, DenseOp,)

__all__ = ["MatmulOp", "DenseOp", "matmul_shape"]
