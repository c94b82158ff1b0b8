"""The base of every graph operator: pattern kinds, shape rules, op families."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import (
    NoMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from strato.dialects.tensor_types import is_run_time, numpy_dtype, tensor_type_like


class PatternKind(StrEnum):
    """How an operator may take part in fusion (the four kinds of the TVM paper, plus opaque).

    - injective: each output element depends on one input element (add, relu, reshape);
    - broadcast: injective with broadcasting of some inputs (bias add);
    - reduction: reduces along axes (sum, max pooling);
    - out_elemwise_fusable: complex-out-fusable, element-wise ops may fuse into its
      output (conv2d, dense, matmul);
    - opaque: never fused (sort, lstm).
    """

    INJECTIVE = "injective"
    BROADCAST = "broadcast"
    REDUCTION = "reduction"
    OUT_ELEMWISE_FUSABLE = "out_elemwise_fusable"
    OPAQUE = "opaque"


def pattern_kind_of(op: Operation) -> PatternKind:
    """The fusion pattern kind of `op`; ops that do not declare one are opaque."""
    if isinstance(op, GraphOp):
        return op.PATTERN_KIND
    return PatternKind.OPAQUE


def broadcast_shapes(lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...] | None:
    """The numpy broadcast of two static shapes, or None when they do not broadcast."""
    result: list[int] = []
    for i in range(1, max(len(lhs), len(rhs)) + 1):
        a = lhs[-i] if i <= len(lhs) else 1
        b = rhs[-i] if i <= len(rhs) else 1
        if a != b and a != 1 and b != 1:
            return None
        result.append(a if b == 1 else b)
    return tuple(reversed(result))


def shape_text(shape: Sequence[int]) -> str:
    """A shape as a user reads it, `?` for a run-time dimension: [?, 8]."""
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def same_dims_as(
    op: Operation, operand: int = 0, results: Sequence[int] = (0,)
) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """The run-time dimension sources of results shaped like operand `operand`."""
    shape = static_shape(op.operands[operand])
    return {
        (r, d): [(operand, d)] for r in results for d, size in enumerate(shape) if size < 0
    }


def broadcast_dim_sources(
    shapes: Sequence[Sequence[int]], result_rank: int, operands: Sequence[int] | None = None
) -> dict[int, list[tuple[int, int]]]:
    """For each result dimension of a broadcast of `shapes` (aligned from the right),
    the operand dimensions of run-time size that meet there; `operands` are the
    operand indices of the shapes (0, 1, .. when omitted)."""
    indices = range(len(shapes)) if operands is None else operands
    sources: dict[int, list[tuple[int, int]]] = {}
    for index, shape in zip(indices, shapes, strict=True):
        offset = result_rank - len(shape)
        for d, size in enumerate(shape):
            if size < 0:
                sources.setdefault(d + offset, []).append((index, d))
    return sources


def static_shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return value.type.get_shape()


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    """The i64 dense array property of `values` (strides, paddings, permutations)."""
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


FloatTensor = base(TensorType)
AnyTensor = base(TensorType)


def element_type(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.element_type


class GraphOp(IRDLOperation):
    """Base of every graph operator.

    Subclasses set `PATTERN_KIND` and implement `evaluate`, the operator's reference
    semantics on numpy arrays. Shape rules live in `infer_shape` so the verifier, the
    builders and the importer share one definition.
    """

    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OPAQUE
    # the default verifier checks that operands are float tensors ...
    FLOAT_OPERANDS: ClassVar[bool] = True
    # ... and that operands and the first result share one element type
    SAME_ELEMENT_TYPE: ClassVar[bool] = True
    # whether the op's shape rule and strategy also hold for run-time (`?`)
    # dimensions; such an op says where each of its results' run-time sizes comes
    # from (`run_time_dim_sources`)
    RUN_TIME_DIMS: ClassVar[bool] = False

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError(f"{self.name} has no reference semantics")

    def infer_shape(self) -> tuple[int, ...] | None:
        """The result shape implied by the operands, or None where it is not defined."""
        return None

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        """For each run-time dimension of a result, (result index, dimension), the
        operand dimensions, (operand index, dimension), of the same size. Two run-time
        dimensions that meet are the same size: they never broadcast against each other.
        Ops that set `RUN_TIME_DIMS` define it."""
        return {}

    def run_time_dim_sums(self) -> dict[tuple[int, int], tuple[list[tuple[int, int]], int]]:
        """For each run-time dimension of a result that is the sum of operand
        dimensions, (result index, dimension), those dimensions, (operand index,
        dimension), and an int added (the static sizes among them): a concatenation
        along a run-time dimension. Such a dimension is of a class of its own, named
        by the sum (`graph.dims.SizeSum`)."""
        return {}

    def run_time_dim_equalities(self) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """Pairs of operand dimensions, (operand index, dimension), of run-time size
        that must be the same size though no result dimension is theirs (a matrix
        product's contracted dimensions)."""
        return []

    def verify_(self) -> None:
        if self.RUN_TIME_DIMS:
            self._check_run_time_dims()
        else:
            for value in (*self.operands, *self.results):
                self._check_static(value.type)
        if self.FLOAT_OPERANDS:
            for operand in self.operands:
                if not isinstance(element_type(operand), AnyFloat):
                    raise VerifyException(
                        f"'{self.name}' expects float tensors, got {operand.type}"
                    )
        if not self.results:
            return
        result_type = self.results[0].type
        assert isinstance(result_type, TensorType)
        if self.SAME_ELEMENT_TYPE:
            for operand in self.operands:
                if element_type(operand) != result_type.element_type:
                    raise VerifyException(
                        f"'{self.name}' operand element type {element_type(operand)} "
                        f"differs from result element type {result_type.element_type}"
                    )
        expected = self.infer_shape()
        if expected is not None and tuple(expected) != result_type.get_shape():
            raise VerifyException(
                f"'{self.name}' result shape {shape_text(result_type.get_shape())} does "
                f"not match the inferred shape {shape_text(expected)}"
            )

    def _check_run_time_dims(self) -> None:
        """Each run-time dimension of a result is given by an operand's dimension."""
        if not any(is_run_time(r.type) for r in self.results):
            return
        sources = self.run_time_dim_sources()
        sums = self.run_time_dim_sums()
        for n, result in enumerate(self.results):
            assert isinstance(result.type, TensorType)
            for d, size in enumerate(result.type.get_shape()):
                if size < 0 and not sources.get((n, d)) and (n, d) not in sums:
                    raise VerifyException(
                        f"'{self.name}' result dimension {d} is of run-time size, but no "
                        "operand dimension gives it"
                    )

    def _check_static(self, type_: Attribute) -> None:
        assert isinstance(type_, TensorType)
        if any(dim < 0 for dim in type_.get_shape()):
            raise VerifyException(f"'{self.name}' requires static shapes, got {type_}")


class UnaryElementwiseOp(GraphOp):
    """One tensor in, a tensor of the same type out, element by element."""

    T: ClassVar = VarConstraint("T", FloatTensor)
    input = operand_def(T)
    result = result_def(T)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input attr-dict `:` type($input)"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.INJECTIVE

    def __init__(self, input: SSAValue | Operation):
        super().__init__(operands=[input], result_types=[SSAValue.get(input).type])

    RUN_TIME_DIMS: ClassVar[bool] = True

    def infer_shape(self) -> tuple[int, ...] | None:
        return static_shape(self.input)

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        return same_dims_as(self)


class BroadcastBinaryOp(GraphOp):
    """Two tensors in, combined element by element with numpy broadcasting."""

    lhs = operand_def(FloatTensor)
    rhs = operand_def(FloatTensor)
    result = result_def(FloatTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.BROADCAST
    RUN_TIME_DIMS: ClassVar[bool] = True

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        lhs, rhs = SSAValue.get(lhs), SSAValue.get(rhs)
        shape = broadcast_shapes(static_shape(lhs), static_shape(rhs))
        if shape is None:
            raise ValueError(f"shapes {lhs.type} and {rhs.type} do not broadcast")
        super().__init__(
            operands=[lhs, rhs], result_types=[tensor_type_like(lhs.type, shape)]
        )

    def infer_shape(self) -> tuple[int, ...] | None:
        shape = broadcast_shapes(static_shape(self.lhs), static_shape(self.rhs))
        if shape is None:
            raise VerifyException(
                f"'{self.name}' operand shapes {shape_text(static_shape(self.lhs))} and "
                f"{shape_text(static_shape(self.rhs))} do not broadcast"
            )
        return shape

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        shapes = [static_shape(self.lhs), static_shape(self.rhs)]
        rank = len(static_shape(self.result))
        return {(0, d): s for d, s in broadcast_dim_sources(shapes, rank).items()}

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        dtype = numpy_dtype(self.result.type)
        return [np.asarray(self.compute(inputs[0], inputs[1]), dtype=dtype)]

    @staticmethod
    def compute(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        raise NotImplementedError
