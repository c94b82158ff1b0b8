"""Reductions over axes: sum, mean, max, min, product, the L1 and L2 norms, the sum of
squares and log-sum-exp; and the index of the largest or smallest element (arg_max,
arg_min).

Each op reduces its input over a sorted, non-empty list of axes; with `keepdims` the
reduced dimensions stay as size 1, without they are dropped. What ONNX leaves to
defaults (no axes means all of them, `noop_with_empty_axes`) is settled at import time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    IntegerAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    VarConstraint,
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
    element_type,
    same_dims_as,
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
    RUN_TIME_DIMS: ClassVar[bool] = True

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

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        kept = [d for d in range(len(static_shape(self.input))) if d not in self.axis_values]
        shape = static_shape(self.input)
        if self.keeps_dims:
            return {(0, d): [(0, d)] for d in kept if shape[d] < 0}
        return {(0, n): [(0, d)] for n, d in enumerate(kept) if shape[d] < 0}

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        result = self.reduce(x, self.axis_values)
        shape = reduced_shape(x.shape, self.axis_values, self.keeps_dims)
        return [np.asarray(result, dtype=x.dtype).reshape(shape)]

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


def highest_value(dtype: np.dtype) -> float | int | bool:
    """The identity of min over `dtype`: +inf, the largest integer, or True."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return True
    if np.issubdtype(dtype, np.integer):
        return int(np.iinfo(dtype).max)
    return float("inf")


@irdl_op_definition
class ReduceMinOp(ReductionOp):
    """Minimum over `axes`, NaN if any element is NaN (the highest value of the element
    type, +inf for floats, over an empty range).

        %m = graph.reduce_min %a [1] : (tensor<3x4xf32>) -> tensor<3xf32>
    """

    name = "graph.reduce_min"

    @staticmethod
    def reduce(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.min(x, axis=axes, initial=highest_value(x.dtype))


@irdl_op_definition
class ReduceProdOp(ReductionOp):
    """Product over `axes` (1 over an empty range).

        %p = graph.reduce_prod %a [0] : (tensor<3x4xf32>) -> tensor<4xf32>
    """

    name = "graph.reduce_prod"

    @staticmethod
    def reduce(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.prod(x, axis=axes, dtype=x.dtype)


@irdl_op_definition
class ReduceL1Op(ReductionOp):
    """Sum of absolute values over `axes` (0 over an empty range).

        %n = graph.reduce_l1 %a [1] : (tensor<3x4xf32>) -> tensor<3xf32>
    """

    name = "graph.reduce_l1"

    @staticmethod
    def reduce(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.sum(np.abs(x), axis=axes, dtype=x.dtype)


@irdl_op_definition
class ReduceSumSquareOp(ReductionOp):
    """Sum of squares over `axes` (0 over an empty range).

        %n = graph.reduce_sum_square %a [1] : (tensor<3x4xf32>) -> tensor<3xf32>
    """

    name = "graph.reduce_sum_square"

    @staticmethod
    def reduce(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.sum(x * x, axis=axes, dtype=x.dtype)


class FloatReductionOp(ReductionOp):
    """A reduction defined on floats only (a square root or a logarithm follows the
    combination)."""

    FLOAT_OPERANDS: ClassVar[bool] = True


@irdl_op_definition
class ReduceL2Op(FloatReductionOp):
    """Euclidean norm over `axes`: the square root of the sum of squares (0 over an
    empty range).

        %n = graph.reduce_l2 %a [1] : (tensor<3x4xf32>) -> tensor<3xf32>
    """

    name = "graph.reduce_l2"

    @staticmethod
    def reduce(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.sqrt(np.sum(x * x, axis=axes, dtype=x.dtype))


@irdl_op_definition
class ReduceLogSumExpOp(FloatReductionOp):
    """log(sum(exp(x))) over `axes`, computed as max + log(sum(exp(x - max))) so that
    large inputs do not overflow (-inf over an empty range).

        %l = graph.reduce_log_sum_exp %a [1] : (tensor<3x4xf32>) -> tensor<3xf32>
    """

    name = "graph.reduce_log_sum_exp"

    @staticmethod
    def reduce(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        if any(x.shape[a] == 0 for a in axes):
            return np.full(reduced_shape(x.shape, axes, False), -np.inf, dtype=x.dtype)
        peak = np.max(x, axis=axes, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            peak = np.where(np.isfinite(peak), peak, 0).astype(x.dtype)
            total = np.sum(np.exp(x - peak), axis=axes, keepdims=True, dtype=x.dtype)
            return (np.log(total) + peak).reshape(reduced_shape(x.shape, axes, False))


class ArgReductionOp(GraphOp):
    """The shared definition of `graph.arg_max` and `graph.arg_min`: the position along
    `axis` of the largest (smallest) element, as i64. Ties give the first position, or
    the last one with `select_last_index`. With `keepdims` the axis stays as size 1."""

    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.REDUCTION
    FLOAT_OPERANDS: ClassVar[bool] = False
    SAME_ELEMENT_TYPE: ClassVar[bool] = False

    input = operand_def(AnyTensor)
    axis = prop_def(IntegerAttr[I64])
    keepdims = opt_prop_def(UnitAttr)
    select_last_index = opt_prop_def(UnitAttr)
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input `axis` $axis (`keepdims` $keepdims^)? (`select_last_index` $select_last_index^)? "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        axis: int,
        keepdims: bool = False,
        select_last_index: bool = False,
    ):
        input = SSAValue.get(input)
        properties: dict[str, Attribute] = {"axis": IntegerAttr(axis, i64)}
        if keepdims:
            properties["keepdims"] = UnitAttr()
        if select_last_index:
            properties["select_last_index"] = UnitAttr()
        shape = reduced_shape(static_shape(input), [axis], keepdims)
        super().__init__(
            operands=[input], properties=properties, result_types=[TensorType(i64, shape)]
        )

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    @property
    def keeps_dims(self) -> bool:
        return self.keepdims is not None

    @property
    def last_index(self) -> bool:
        return self.select_last_index is not None

    def infer_shape(self) -> tuple[int, ...] | None:
        shape = static_shape(self.input)
        axis = self.axis_value
        if not 0 <= axis < len(shape):
            raise VerifyException(
                f"'{self.name}' axis {axis} is out of range for rank {len(shape)}"
            )
        if shape[axis] == 0:
            raise VerifyException(f"'{self.name}' cannot reduce the empty axis {axis}")
        if element_type(self.result) != i64:
            raise VerifyException(
                f"'{self.name}' result must be an i64 tensor, got {self.result.type}"
            )
        return reduced_shape(shape, [axis], self.keeps_dims)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        axis = self.axis_value
        if self.last_index:
            flipped = np.flip(x, axis)
            index = x.shape[axis] - 1 - self.pick(flipped, axis)
        else:
            index = self.pick(x, axis)
        return [np.asarray(index, dtype=np.int64).reshape(static_shape(self.result))]

    @staticmethod
    def pick(x: np.ndarray, axis: int) -> np.ndarray:
        raise NotImplementedError


@irdl_op_definition
class ArgMaxOp(ArgReductionOp):
    """The position of the largest element along `axis` (of the first NaN, if any).

        %i = graph.arg_max %a axis 1 keepdims : (tensor<3x4xf32>) -> tensor<3x1xi64>
    """

    name = "graph.arg_max"

    @staticmethod
    def pick(x: np.ndarray, axis: int) -> np.ndarray:
        return np.argmax(x, axis=axis)


@irdl_op_definition
class ArgMinOp(ArgReductionOp):
    """The position of the smallest element along `axis` (of the first NaN, if any).

        %i = graph.arg_min %a axis 0 select_last_index : (tensor<3x4xf32>) -> tensor<4xi64>
    """

    name = "graph.arg_min"

    @staticmethod
    def pick(x: np.ndarray, axis: int) -> np.ndarray:
        return np.argmin(x, axis=axis)


class CumulativeOp(GraphOp):
    """The shared definition of `graph.cumsum` and `graph.cumprod`: the running
    combination along `axis`, result[.., i, ..] = combine of input[.., k, ..] over
    k <= i; over k < i with `exclusive`, k >= i with `reverse`, k > i with both (an empty
    combination is the identity, 0 or 1). Elements are combined in the running
    direction, from the first one the direction meets (integers wrap)."""

    FLOAT_OPERANDS: ClassVar[bool] = False
    RUNNING: ClassVar = staticmethod(np.cumsum)
    IDENTITY: ClassVar[int] = 0
    # run-time dimensions anywhere (RoBERTa's position ids: a running count of the
    # tokens along the sequence)
    RUN_TIME_DIMS: ClassVar[bool] = True

    T: ClassVar = VarConstraint("T", AnyTensor)
    input = operand_def(T)
    axis = prop_def(IntegerAttr[I64])
    exclusive = opt_prop_def(UnitAttr)
    reverse = opt_prop_def(UnitAttr)
    result = result_def(T)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input `axis` $axis (`exclusive` $exclusive^)? (`reverse` $reverse^)? "
        "attr-dict `:` type($input)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        axis: int,
        exclusive: bool = False,
        reverse: bool = False,
    ):
        input = SSAValue.get(input)
        properties: dict[str, Attribute] = {"axis": IntegerAttr(axis, i64)}
        if exclusive:
            properties["exclusive"] = UnitAttr()
        if reverse:
            properties["reverse"] = UnitAttr()
        super().__init__(operands=[input], properties=properties, result_types=[input.type])

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    @property
    def is_exclusive(self) -> bool:
        return self.exclusive is not None

    @property
    def is_reverse(self) -> bool:
        return self.reverse is not None

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        return same_dims_as(self)

    def infer_shape(self) -> tuple[int, ...] | None:
        shape = static_shape(self.input)
        if not 0 <= self.axis_value < len(shape):
            raise VerifyException(
                f"'{self.name}' axis {self.axis_value} is out of range for rank {len(shape)}"
            )
        return shape

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [
            running(
                inputs[0], self.axis_value, self.is_exclusive, self.is_reverse, self.RUNNING
            )
        ]


@irdl_op_definition
class CumSumOp(CumulativeOp):
    """Running sum along `axis` (`CumulativeOp`).

        %c = graph.cumsum %a axis 1 : tensor<3x4xf32>
        %d = graph.cumsum %i axis 0 exclusive reverse : tensor<5xi64>
    """

    name = "graph.cumsum"


@irdl_op_definition
class CumProdOp(CumulativeOp):
    """Running product along `axis` (`CumulativeOp`).

        %c = graph.cumprod %a axis 0 reverse : tensor<3x4xf32>
    """

    name = "graph.cumprod"
    RUNNING: ClassVar = staticmethod(np.cumprod)
    IDENTITY: ClassVar[int] = 1


def cumsum(x: np.ndarray, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    """graph.cumsum's reference (`running` with numpy's cumsum)."""
    return running(x, axis, exclusive, reverse, np.cumsum)


def cumprod(x: np.ndarray, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    """graph.cumprod's reference (`running` with numpy's cumprod)."""
    return running(x, axis, exclusive, reverse, np.cumprod)


def running(x: np.ndarray, axis: int, exclusive: bool, reverse: bool, combine) -> np.ndarray:
    """numpy's running `combine` (cumsum, cumprod) in the element type, taken from the
    end with `reverse`, shifted by one (a leading identity) with `exclusive`."""
    x = np.asarray(x)
    identity = 1 if combine is np.cumprod else 0
    ordered = np.flip(x, axis) if reverse else x
    with np.errstate(all="ignore"):
        total = combine(ordered, axis=axis, dtype=x.dtype)
    if exclusive and x.shape[axis]:
        first = np.full_like(np.take(total, [0], axis=axis), identity)
        total = np.concatenate([first, np.delete(total, -1, axis=axis)], axis=axis)
    if reverse:
        total = np.flip(total, axis)
    return np.require(total, dtype=x.dtype, requirements="C")


@irdl_op_definition
class TopKOp(GraphOp):
    """The `k` largest (or, without `largest`, smallest) entries along `axis`, in order,
    and their positions (i64): values[.., r, ..] is the entry of rank r, where entries
    rank by value and, among equal values, by position (the earlier first); NaN ranks
    after every number, largest or smallest.

        %v, %i = graph.top_k %a axis 1 k 2 largest : (tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)

    Opaque: each result element depends on the whole axis.
    """

    name = "graph.top_k"
    FLOAT_OPERANDS: ClassVar[bool] = False
    SAME_ELEMENT_TYPE: ClassVar[bool] = False

    input = operand_def(AnyTensor)
    axis = prop_def(IntegerAttr[I64])
    k = prop_def(IntegerAttr[I64])
    largest = opt_prop_def(UnitAttr)
    values = result_def(AnyTensor)
    indices = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input `axis` $axis `k` $k (`largest` $largest^)? attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(self, input: SSAValue | Operation, axis: int, k: int, largest: bool = True):
        input = SSAValue.get(input)
        shape = list(static_shape(input))
        shape[axis] = k
        properties: dict[str, Attribute] = {
            "axis": IntegerAttr(axis, i64),
            "k": IntegerAttr(k, i64),
        }
        if largest:
            properties["largest"] = UnitAttr()
        super().__init__(
            operands=[input],
            properties=properties,
            result_types=[tensor_type_like(input.type, shape), TensorType(i64, shape)],
        )

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    @property
    def k_value(self) -> int:
        return self.k.value.data

    @property
    def is_largest(self) -> bool:
        return self.largest is not None

    def infer_shape(self) -> tuple[int, ...] | None:
        shape = list(static_shape(self.input))
        axis, k = self.axis_value, self.k_value
        if not 0 <= axis < len(shape):
            raise VerifyException(
                f"'graph.top_k' axis {axis} is out of range for rank {len(shape)}"
            )
        if not 0 <= k <= shape[axis]:
            raise VerifyException(
                f"'graph.top_k' k {k} is not in [0, {shape[axis]}] (the size of axis {axis})"
            )
        if element_type(self.values) != element_type(self.input):
            raise VerifyException(
                f"'graph.top_k' values element type {element_type(self.values)} differs "
                f"from the input's {element_type(self.input)}"
            )
        shape[axis] = k
        if element_type(self.indices) != i64 or static_shape(self.indices) != tuple(shape):
            raise VerifyException(
                f"'graph.top_k' indices must be a tensor of i64 of shape {shape}, got "
                f"{self.indices.type}"
            )
        return tuple(shape)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        values, indices = top_k(inputs[0], self.axis_value, self.k_value, self.is_largest)
        return [values, indices]


def top_k(x: np.ndarray, axis: int, k: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """The reference semantics of `graph.top_k`: a stable sort of the axis (descending
    for the largest), cut to k."""
    keys = -x if largest and x.dtype.kind != "u" and x.dtype != np.bool_ else x
    if largest and (x.dtype.kind == "u" or x.dtype == np.bool_):
        keys = np.iinfo(np.int64).max - x.astype(np.int64)
    order = np.argsort(keys, axis=axis, kind="stable")
    order = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, order, axis=axis), order.astype(np.int64)


OPS = (
    ReduceSumOp,
    ReduceMeanOp,
    ReduceMaxOp,
    ReduceMinOp,
    ReduceProdOp,
    ReduceL1Op,
    ReduceL2Op,
    ReduceSumSquareOp,
    ReduceLogSumExpOp,
    ArgMaxOp,
    ArgMinOp,
    CumSumOp,
    CumProdOp,
    TopKOp,
)

__all__ = [
    "ArgMaxOp",
    "ArgMinOp",
    "ArgReductionOp",
    "CumProdOp",
    "CumSumOp",
    "CumulativeOp",
    "cumprod",
    "cumsum",
    "running",
    "FloatReductionOp",
    "ReduceL1Op",
    "ReduceL2Op",
    "ReduceLogSumExpOp",
    "ReduceMinOp",
    "ReduceProdOp",
    "ReduceSumSquareOp",
    "highest_value",
    "top_k",
    "TopKOp",
    "ReduceMaxOp",
    "ReduceMeanOp",
    "ReduceSumOp",
    "ReductionOp",
    "lowest_value",
    "reduced_shape",
]
