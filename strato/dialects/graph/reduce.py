"""Reductions over axes: sum, mean, max.

Each op reduces its input over a sorted, non-empty list of axes; with `keepdims` the
reduced dimensions stay as size 1, without they are dropped. What ONNX leaves to
defaults (no axes means all of them, `noop_with_empty_axes`) is settled at import time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    UnitAttr,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import (
    NoMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import (
    AnyTensor,
    GraphOp,
    PatternKind,
    static_shape,
)
from strato.dialects.tensor_types import tensor_type_like


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keepdims: bool) -> tuple[int, ...]:
    """The shape of a reduction of `shape` over `axes`."""
    if keepdims:
        return tuple(1 if d in axes else size for d, size in enumerate(shape))
    return tuple(size for d, size in enumerate(shape) if d not in axes)


class ReductionOp(GraphOp):
    """The shared definition of `graph.reduce_*`: input, axes, keepdims, and the
    numpy reduction that gives the reference semantics."""

    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.REDUCTION
    FLOAT_OPERANDS: ClassVar[bool] = False

    input = operand_def(AnyTensor)
    axes = prop_def(DenseArrayBase.constr(i64))
    keepdims = opt_prop_def(UnitAttr)
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input $axes (`keepdims` $keepdims^)? attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, input: SSAValue | Operation, axes: Sequence[int], keepdims: bool = False):
        input = SSAValue.get(input)
        axes = sorted(int(a) for a in axes)
        properties = {"axes": DenseArrayBase.from_list(i64, axes)}
        if keepdims:
            properties["keepdims"] = UnitAttr()
        shape = reduced_shape(static_shape(input), axes, keepdims)
        super().__init__(
            operands=[input],
            properties=properties,
            result_types=[tensor_type_like(input.type, shape)],
        )

    @property
    def axis_values(self) -> tuple[int, ...]:
        return tuple(self.axes.get_values())

    @property
    def keeps_dims(self) -> bool:
        return self.keepdims is not None

    def infer_shape(self) -> tuple[int, ...] | None:
        shape = static_shape(self.input)
        axes = self.axis_values
        if not axes:
            raise VerifyException(f"'{self.name}' needs at least one axis")
        if list(axes) != sorted(set(axes)):
            raise VerifyException(
                f"'{self.name}' axes {list(axes)} must be increasing without repeats"
            )
        if axes[0] < 0 or axes[-1] >= len(shape):
            raise VerifyException(
                f"'{self.name}' axes {list(axes)} are out of range for rank {len(shape)}"
            )
        return reduced_shape(shape, axes, self.keeps_dims)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        result = self.reduce(x, self.axis_values)
        return [np.asarray(result, dtype=x.dtype).reshape(static_shape(self.result))]

    @staticmethod
    def reduce(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        raise NotImplementedError


@irdl_op_definition
class ReduceSumOp(ReductionOp):
    """Sum over `axes` (0 over an empty range).

    %s = graph.reduce_sum %a [1] keepdims : (tensor<3x4xf32>) -> tensor<3x1xf32>
    """

    name = "graph.reduce_sum"

    @staticmethod
    def reduce(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.sum(x, axis=axes, dtype=x.dtype)


@irdl_op_definition
class ReduceMeanOp(ReductionOp):
    """Arithmetic mean over `axes`: the sum divided by the number of elements reduced
    (NaN over an empty range).

        %m = graph.reduce_mean %a [0, 2] : (tensor<2x3x4xf32>) -> tensor<3xf32>
    """

    name = "graph.reduce_mean"

    @staticmethod
    def reduce(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        count = int(np.prod([x.shape[a] for a in axes]))
        total = np.sum(x, axis=axes, dtype=x.dtype)
        with np.errstate(invalid="ignore", divide="ignore"):
            if np.issubdtype(x.dtype, np.integer):
                # numpy's mean cast back to the element type: truncated toward zero
                return np.trunc(total / count) if count else np.zeros_like(total)
            return total / x.dtype.type(count)


@irdl_op_definition
class ReduceMaxOp(ReductionOp):
    """Maximum over `axes`, NaN if any element is NaN (the lowest value of the element
    type, -inf for floats, over an empty range).

        %m = graph.reduce_max %a [1] : (tensor<3x4xf32>) -> tensor<3xf32>
    """

    name = "graph.reduce_max"

    @staticmethod
    def reduce(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.max(x, axis=axes, initial=lowest_value(x.dtype))


def lowest_value(dtype: np.dtype) -> float | int | bool:
    """The identity of max over `dtype`: -inf, the smallest integer, or False."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return False
    if np.issubdtype(dtype, np.integer):
        return int(np.iinfo(dtype).min)
    return float("-inf")


OPS = (ReduceSumOp, ReduceMeanOp, ReduceMaxOp)

__all__ = [
    "ReduceMaxOp",
    "ReduceMeanOp",
    "ReduceSumOp",
    "ReductionOp",
    "lowest_value",
    "reduced_shape",
]
