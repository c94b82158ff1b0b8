"""Element-wise operators: unary maps and binary ops with numpy broadcasting."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.irdl import (
    irdl_op_definition,
)

from strato.dialects.graph.base import (
    BroadcastBinaryOp,
    UnaryElementwiseOp,
)


@irdl_op_definition
class AddOp(BroadcastBinaryOp):
    """Element-wise sum with numpy broadcasting: result[i] = lhs[i'] + rhs[i''].

        %r = graph.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    """

    name = "graph.add"

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return lhs + rhs


@irdl_op_definition
class MulOp(BroadcastBinaryOp):
    """Element-wise product with numpy broadcasting: result[i] = lhs[i'] * rhs[i''].

        %r = graph.mul %a, %b : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
    """

    name = "graph.mul"

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return lhs * rhs


@irdl_op_definition
class ReluOp(UnaryElementwiseOp):
    """Rectified linear unit: result[i] = max(input[i], 0).

        %r = graph.relu %a : tensor<4x8xf32>
    """

    name = "graph.relu"

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.maximum(inputs[0], 0).astype(inputs[0].dtype)]


OPS = (AddOp, MulOp, ReluOp,)

__all__ = ["AddOp", "MulOp", "ReluOp"]
