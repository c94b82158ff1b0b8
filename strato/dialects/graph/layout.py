"""Operators that move data without arithmetic: transpose, reshape, concat, ..."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    prop_def,
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
    static_shape,
)
from strato.dialects.tensor_types import tensor_type_like


@irdl_op_definition
class TransposeOp(GraphOp):
    """Permutes dimensions: result.shape[d] = input.shape[perm[d]], and
    result[i_0, .., i_n] = input[j] with j[perm[d]] = i_d.

        %t = graph.transpose %a [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    """

    name = "graph.transpose"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.INJECTIVE

    input = operand_def(FloatTensor)
    perm = prop_def(DenseArrayBase.constr(i64))
    result = result_def(FloatTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input $perm attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue | Operation, perm: Sequence[int]):
        input = SSAValue.get(input)
        shape = static_shape(input)
        super().__init__(
            operands=[input],
            properties={"perm": DenseArrayBase.from_list(i64, list(perm))},
            result_types=[tensor_type_like(input.type, [shape[p] for p in perm])],
        )

    @property
    def permutation(self) -> tuple[int, ...]:
        return tuple(self.perm.get_values())

    def infer_shape(self) -> tuple[int, ...] | None:
        shape = static_shape(self.input)
        perm = self.permutation
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(
                f"'graph.transpose' perm {list(perm)} is not a permutation of "
                f"{len(shape)} dimensions"
            )
        return tuple(shape[p] for p in perm)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.ascontiguousarray(np.transpose(inputs[0], self.permutation))]


OPS = (TransposeOp,)

__all__ = ["TransposeOp"]
