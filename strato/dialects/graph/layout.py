"""Operators that move data without arithmetic: reshape, transpose, concat, split, slice,
pad, gather, gather_elements, scatter_nd, tile, broadcast_to, and the inference no-ops
identity and dropout.

Every op here is element-type generic (any int or float tensor; the result holds the
element type of the data operand) and injective, except `graph.broadcast_to`, which is
a broadcast. Everything an ONNX operator computes from shapes and constant inputs (the
target shape of a reshape, the bounds of a slice, the pads) is folded at import time into
static properties and result types, so each op here has static semantics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import (
    NoMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import (
    AnyTensor,
    GraphOp,
    PatternKind,
    broadcast_shapes,
    element_type,
    i64_array,
    same_dims_as,
    shape_text,
    static_shape,
)
from strato.dialects.tensor_types import numpy_dtype, tensor_type_like


class LayoutOp(GraphOp):
    """A data-movement op: any element type, injective."""

    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.INJECTIVE
    FLOAT_OPERANDS: ClassVar[bool] = False


@irdl_op_definition
class ReshapeOp(LayoutOp):
    """Gives the elements of a tensor, in row-major order, a new shape with the same
    number of elements: result.flat[n] = input.flat[n]. The target shape is the result
    type (ONNX Reshape, Flatten, Squeeze and Unsqueeze all become this op).

        %r = graph.reshape %a : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    """

    name = "graph.reshape"
    RUN_TIME_DIMS: ClassVar[bool] = True

    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue | Operation, shape: Sequence[int]):
        input = SSAValue.get(input)
        super().__init__(operands=[input], result_types=[tensor_type_like(input.type, shape)])

    def stretches(self) -> list[tuple[range, range]]:
        """The static stretches of the source and of the result that correspond: the
        dimensions before the first run-time one, between two, and after the last, in
        order (the verifier checks that each pair holds as many elements). The run-time
        dimensions stay, in order, and each stretch is reshaped within itself: a
        [batch, 2, 2, sequence, 16] of a model's grouped heads becomes [batch, 4,
        sequence, 16]."""
        return list(zip(_stretches(static_shape(self.input)), _stretches(static_shape(self.result)), strict=True))

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        # the run-time dimensions in order (the verifier checks that they stay)
        source, target = static_shape(self.input), static_shape(self.result)
        sources = [d for d, size in enumerate(source) if size < 0]
        targets = [d for d, size in enumerate(target) if size < 0]
        return {(0, t): [(0, d)] for t, d in zip(targets, sources)}

    def infer_shape(self) -> tuple[int, ...] | None:
        source = static_shape(self.input)
        target = static_shape(self.result)
        source_stretches, target_stretches = _stretches(source), _stretches(target)
        if len(source_stretches) > 1 or len(target_stretches) > 1:
            kept = len(source_stretches) == len(target_stretches) and all(
                math.prod(source[d] for d in s) == math.prod(target[d] for d in t)
                for s, t in zip(source_stretches, target_stretches, strict=True)
            )
            if not kept:
                raise VerifyException(
                    f"'graph.reshape' of run-time dimensions keeps them, in order, and "
                    "reshapes each stretch of static dimensions around them to as many "
                    f"elements: {shape_text(source)} to {shape_text(target)}"
                )
            return target
        if int(np.prod(source)) != int(np.prod(target)):
            raise VerifyException(
                f"'graph.reshape' cannot reshape {list(source)} ({int(np.prod(source))} "
                f"elements) to {list(target)} ({int(np.prod(target))} elements)"
            )
        return target

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        shape = list(static_shape(self.result))
        for (_, target_dim), ((_, source_dim),) in self.run_time_dim_sources().items():
            shape[target_dim] = x.shape[source_dim]
        return [np.reshape(x, shape).copy()]


def _stretches(shape: Sequence[int]) -> list[range]:
    """The dimensions of `shape` before its first run-time one, between each two, and
    after its last (one stretch more than run-time dimensions; some may be empty)."""
    stretches: list[range] = []
    start = 0
    for d, size in enumerate(shape):
        if size < 0:
            stretches.append(range(start, d))
            start = d + 1
    stretches.append(range(start, len(shape)))
    return stretches


@irdl_op_definition
class TransposeOp(LayoutOp):
    """Permutes dimensions: result.shape[d] = input.shape[perm[d]], and
    result[i_0, .., i_n] = input[j] with j[perm[d]] = i_d.

        %t = graph.transpose %a [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    """

    name = "graph.transpose"
    RUN_TIME_DIMS: ClassVar[bool] = True

    input = operand_def(AnyTensor)
    perm = prop_def(DenseArrayBase.constr(i64))
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input $perm attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue | Operation, perm: Sequence[int]):
        input = SSAValue.get(input)
        shape = static_shape(input)
        super().__init__(
            operands=[input],
            properties={"perm": i64_array(perm)},
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

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        shape = static_shape(self.input)
        return {(0, d): [(0, p)] for d, p in enumerate(self.permutation) if shape[p] < 0}

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.array(np.transpose(inputs[0], self.permutation), order="C")]


def _check_axis(op_name: str, axis: int, rank: int) -> None:
    if not 0 <= axis < rank:
        raise VerifyException(
            f"'{op_name}' axis {axis} is out of range for rank {rank} (expected 0 to {rank - 1})"
        )


def _check_same_element_types(op: GraphOp, values: Sequence[SSAValue]) -> None:
    expected = element_type(values[0])
    for value in values[1:]:
        if element_type(value) != expected:
            raise VerifyException(
                f"'{op.name}' element types differ: {expected} and {element_type(value)}"
            )


@irdl_op_definition
class ConcatOp(LayoutOp):
    """Joins tensors along `axis`; all other dimensions must agree. The result's `axis`
    dimension is the sum of the inputs', and result[.., i, ..] = input_k[.., i - o_k, ..]
    where input_k is the input covering position i and o_k its offset along `axis`.

        %c = graph.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    """

    name = "graph.concat"
    # run-time dimensions outside the axis, which every input has (the heads of an
    # attention joined, features of a sequence of run-time length), and along it: the
    # result's is the sum of the inputs' (past keys and new ones, `past + sequence`)
    RUN_TIME_DIMS: ClassVar[bool] = True

    inputs = var_operand_def(AnyTensor)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$inputs `axis` $axis attr-dict `:` functional-type(operands, results)"

    def __init__(self, inputs: Sequence[SSAValue | Operation], axis: int):
        values = [SSAValue.get(v) for v in inputs]
        shape = list(static_shape(values[0]))
        sizes = [static_shape(v)[axis] for v in values]
        shape[axis] = min(sizes) if any(size < 0 for size in sizes) else sum(sizes)
        super().__init__(
            operands=[values],
            properties={"axis": IntegerAttr(axis, i64)},
            result_types=[tensor_type_like(values[0].type, shape)],
        )

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        shape = static_shape(self.result)
        return {
            (0, d): [(n, d) for n in range(len(self.inputs))]
            for d, size in enumerate(shape)
            if size < 0 and d != self.axis_value
        }

    def run_time_dim_sums(self) -> dict[tuple[int, int], tuple[list[tuple[int, int]], int]]:
        axis = self.axis_value
        sizes = [static_shape(v)[axis] for v in self.inputs]
        if all(size >= 0 for size in sizes):
            return {}
        return {
            (0, axis): (
                [(n, axis) for n, size in enumerate(sizes) if size < 0],
                sum(size for size in sizes if size >= 0),
            )
        }

    def infer_shape(self) -> tuple[int, ...] | None:
        if not self.inputs:
            raise VerifyException("'graph.concat' needs at least one input")
        first = static_shape(self.inputs[0])
        axis = self.axis_value
        _check_axis(self.name, axis, len(first))
        total = 0
        for value in self.inputs:
            shape = static_shape(value)
            if len(shape) != len(first) or any(
                a != b for d, (a, b) in enumerate(zip(shape, first)) if d != axis
            ):
                raise VerifyException(
                    f"'graph.concat' input shapes {list(first)} and {list(shape)} differ "
                    f"outside axis {axis}"
                )
            # a run-time size makes the sum one (as the input writes it: `?`)
            total = total if total < 0 else shape[axis] if shape[axis] < 0 else total + shape[axis]
        return (*first[:axis], total, *first[axis + 1 :])

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.concatenate(list(inputs), axis=self.axis_value)]


@irdl_op_definition
class SplitOp(LayoutOp):
    """Cuts a tensor along `axis` into consecutive pieces, one per result; the sizes of
    the pieces are the results' `axis` dimensions (which sum to the input's):
    result_k[.., i, ..] = input[.., o_k + i, ..] with o_k the sum of the earlier sizes.

        %a, %b = graph.split %x axis 0 : (tensor<5x2xf32>) -> (tensor<2x2xf32>, tensor<3x2xf32>)
    """

    name = "graph.split"
    # run-time dimensions outside the axis, which must be static (q, k and v of a
    # sequence of run-time length)
    RUN_TIME_DIMS: ClassVar[bool] = True

    input = operand_def(AnyTensor)
    axis = prop_def(IntegerAttr[I64])
    outputs = var_result_def(AnyTensor)

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        return same_dims_as(self, results=range(len(self.outputs)))

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input `axis` $axis attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue | Operation, axis: int, sizes: Sequence[int]):
        input = SSAValue.get(input)
        shape = list(static_shape(input))
        types = []
        for size in sizes:
            shape[axis] = size
            types.append(tensor_type_like(input.type, shape))
        super().__init__(
            operands=[input],
            properties={"axis": IntegerAttr(axis, i64)},
            result_types=[types],
        )

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(static_shape(r)[self.axis_value] for r in self.outputs)

    def verify_(self) -> None:
        super().verify_()
        if not self.outputs:
            raise VerifyException("'graph.split' needs at least one result")
        shape = static_shape(self.input)
        axis = self.axis_value
        _check_axis(self.name, axis, len(shape))
        if shape[axis] < 0:
            raise VerifyException(
                f"'graph.split' splits a dimension of static size, got {self.input.type}"
            )
        for n, result in enumerate(self.outputs):
            piece = static_shape(result)
            if element_type(result) != element_type(self.input):
                raise VerifyException(
                    f"'graph.split' result {n} element type {element_type(result)} differs "
                    f"from the input's {element_type(self.input)}"
                )
            if len(piece) != len(shape) or any(
                a != b for d, (a, b) in enumerate(zip(piece, shape)) if d != axis
            ):
                raise VerifyException(
                    f"'graph.split' result {n} shape {list(piece)} differs from the input "
                    f"shape {list(shape)} outside axis {axis}"
                )
        if sum(self.sizes) != shape[axis]:
            raise VerifyException(
                f"'graph.split' result sizes {list(self.sizes)} along axis {axis} do not "
                f"add up to the input's {shape[axis]}"
            )

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        offsets = np.cumsum(self.sizes)[:-1]
        return [p.copy() for p in np.split(inputs[0], offsets, axis=self.axis_value)]


@irdl_op_definition
class SliceOp(LayoutOp):
    """A strided window of a tensor: along each dimension d the result takes
    `result.shape[d]` elements from `starts[d]` in steps of `steps[d]` (negative steps
    walk backwards): result[i_0, .., i_n] = input[starts[0] + i_0 * steps[0], ..].
    Every index read lies inside the input. A dimension of run-time size is taken
    whole (start 0, step 1: the rotated halves of a rotary embedding over a sequence of
    run-time length slice its static last dimension), or by step 1 from its start
    without the last `drops[d]` elements: a dimension of a size computed from its own
    (`x[:, 1:]` of a sequence is `sequence - 1` long; `graph.dims.SizeSum`).

        %s = graph.slice %a starts [0, 9] steps [2, -1] : (tensor<20x10xf32>) -> tensor<10x10xf32>
        %t = graph.slice %x starts [0, 1] steps [1, 1] drops [0, 2] : (tensor<2x?xf32>) -> tensor<2x?xf32>
    """

    name = "graph.slice"
    RUN_TIME_DIMS: ClassVar[bool] = True

    input = operand_def(AnyTensor)
    starts = prop_def(DenseArrayBase.constr(i64))
    steps = prop_def(DenseArrayBase.constr(i64))
    drops = opt_prop_def(DenseArrayBase.constr(i64))
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input `starts` $starts `steps` $steps (`drops` $drops^)? attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        starts: Sequence[int],
        steps: Sequence[int],
        shape: Sequence[int],
        drops: Sequence[int] | None = None,
    ):
        input = SSAValue.get(input)
        properties = {"starts": i64_array(starts), "steps": i64_array(steps)}
        if drops is not None and any(drops):
            properties["drops"] = i64_array(drops)
        super().__init__(
            operands=[input],
            properties=properties,
            result_types=[tensor_type_like(input.type, shape)],
        )

    @property
    def drop_values(self) -> tuple[int, ...]:
        """Per dimension, the elements left out after the window (run-time ones)."""
        if self.drops is None:
            return (0,) * len(self.start_values)
        return tuple(self.drops.get_values())

    @property
    def start_values(self) -> tuple[int, ...]:
        return tuple(self.starts.get_values())

    @property
    def step_values(self) -> tuple[int, ...]:
        return tuple(self.steps.get_values())

    def _cut(self) -> list[int]:
        """The run-time dimensions the slice shortens."""
        shape = static_shape(self.input)
        return [
            d for d, (dim, start, drop) in enumerate(zip(shape, self.start_values, self.drop_values))
            if dim < 0 and start + drop > 0
        ]

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        cut = self._cut()
        return {key: value for key, value in same_dims_as(self).items() if key[1] not in cut}

    def run_time_dim_sums(self) -> dict[tuple[int, int], tuple[list[tuple[int, int]], int]]:
        starts, drops = self.start_values, self.drop_values
        return {(0, d): ([(0, d)], -(starts[d] + drops[d])) for d in self._cut()}

    def infer_shape(self) -> tuple[int, ...] | None:
        shape = static_shape(self.input)
        sizes = static_shape(self.result)
        starts, steps, drops = self.start_values, self.step_values, self.drop_values
        if not len(starts) == len(steps) == len(drops) == len(shape) == len(sizes):
            raise VerifyException(
                f"'graph.slice' needs one start and one step per dimension of the rank-"
                f"{len(shape)} input and a rank-{len(shape)} result, got {len(starts)} "
                f"starts, {len(steps)} steps and a rank-{len(sizes)} result"
                + (f" (and {len(drops)} drops)" if self.drops is not None else "")
            )
        for d, (dim, start, step, size, drop) in enumerate(zip(shape, starts, steps, sizes, drops)):
            if step == 0:
                raise VerifyException(f"'graph.slice' step of dimension {d} is 0")
            if dim < 0 or size < 0:
                if not (dim < 0 and size < 0 and start >= 0 and drop >= 0 and step == 1):
                    raise VerifyException(
                        f"'graph.slice' dimension {d} of run-time size must be taken by step "
                        "1 from a start, less the drops at its end (a result dimension of "
                        "run-time size)"
                    )
                continue
            if drop:
                raise VerifyException(f"'graph.slice' drops elements of dimension {d}, of static size")
            if size == 0:
                continue
            last = start + (size - 1) * step
            if not (0 <= start < dim and 0 <= last < dim):
                raise VerifyException(
                    f"'graph.slice' dimension {d} reads indices {start} to {last}, outside "
                    f"[0, {dim})"
                )
        return sizes

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        sizes = [
            size if size >= 0 else max(x.shape[d] - start - drop, 0)
            for d, (size, start, drop) in enumerate(zip(static_shape(self.result), self.start_values, self.drop_values))
        ]
        index = [
            start + step * np.arange(size, dtype=np.int64)
            for start, step, size in zip(self.start_values, self.step_values, sizes)
        ]
        if not index:
            return [inputs[0].copy()]
        return [np.array(inputs[0][np.ix_(*index)], order="C")]


class PadMode(StrEnum):
    """What `graph.pad` puts outside the input (numpy.pad's modes of the same names)."""

    CONSTANT = "constant"  # a constant value
    REFLECT = "reflect"  # the mirror image, without repeating the edge element
    EDGE = "edge"  # the edge element
    WRAP = "wrap"  # the input repeated periodically


@irdl_op_definition
class PadOp(LayoutOp):
    """Extends each dimension d by `low[d]` elements before and `high[d]` after (both
    >= 0). Inside, result[i] = input[i - low]; outside, the `mode` decides: `constant`
    (the `value`, default 0), `reflect` (mirrored at the edge, pads < dimension),
    `edge` (the nearest edge element) or `wrap` (periodic repetition).

    In constant mode one pad of a dimension may be negative when the other makes up
    for it (low + high = 0): the dimension keeps its size and its elements shift by
    `low`, those shifted out dropped and those shifted in the `value`. This is how a
    dimension of run-time size is shifted (`x[:, 1:]` padded back to its length by one
    at the end is low -1, high 1); it is lengthened in constant mode only (its size
    plus the pads: `sequence + 2`, `graph.dims.SizeSum`).

        %p = graph.pad %a low [0, 1] high [0, 2] mode "constant" value 5.000000e-01 : (tensor<2x3xf32>) -> tensor<2x6xf32>
        %q = graph.pad %a low [1, 1] high [1, 1] mode "reflect" : (tensor<2x3xf32>) -> tensor<4x5xf32>
        %s = graph.pad %b low [0, -1, 0] high [0, 1, 0] mode "constant" : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
    """

    name = "graph.pad"
    # a run-time dimension keeps its size (pads of 0, or a shift), or is lengthened
    # in constant mode
    RUN_TIME_DIMS: ClassVar[bool] = True

    input = operand_def(AnyTensor)
    low = prop_def(DenseArrayBase.constr(i64))
    high = prop_def(DenseArrayBase.constr(i64))
    mode = prop_def(StringAttr)
    value = opt_prop_def(FloatAttr[Float64Type])
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$input `low` $low `high` $high `mode` $mode (`value` $value^)? attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        low: Sequence[int],
        high: Sequence[int],
        mode: PadMode = PadMode.CONSTANT,
        value: float | None = None,
    ):
        input = SSAValue.get(input)
        shape = [d if d < 0 else d + lo + hi for d, lo, hi in zip(static_shape(input), low, high)]
        properties: dict[str, Attribute] = {
            "low": i64_array(low),
            "high": i64_array(high),
            "mode": StringAttr(PadMode(mode).value),
        }
        if value is not None:
            properties["value"] = FloatAttr(float(value), Float64Type())
        super().__init__(
            operands=[input],
            properties=properties,
            result_types=[tensor_type_like(input.type, shape)],
        )

    @property
    def pad_mode(self) -> PadMode:
        return PadMode(self.mode.data)

    @property
    def pad_value(self) -> float:
        return 0.0 if self.value is None else self.value.value.data

    @property
    def low_values(self) -> tuple[int, ...]:
        return tuple(self.low.get_values())

    @property
    def high_values(self) -> tuple[int, ...]:
        return tuple(self.high.get_values())

    def infer_shape(self) -> tuple[int, ...] | None:
        try:
            mode = PadMode(self.mode.data)
        except ValueError:
            raise VerifyException(
                f"'graph.pad' mode '{self.mode.data}' is not one of "
                f"{', '.join(m.value for m in PadMode)}"
            ) from None
        if self.value is not None and mode != PadMode.CONSTANT:
            raise VerifyException("'graph.pad' value is only allowed in constant mode")
        shape = static_shape(self.input)
        low, high = self.low_values, self.high_values
        if not len(low) == len(high) == len(shape):
            raise VerifyException(
                f"'graph.pad' needs low and high pads for each of the {len(shape)} "
                f"dimensions, got {len(low)} and {len(high)}"
            )
        for d, (dim, lo, hi) in enumerate(zip(shape, low, high)):
            if (lo < 0 or hi < 0) and (lo + hi != 0 or mode != PadMode.CONSTANT):
                raise VerifyException(
                    f"'graph.pad' pads of dimension {d} must be >= 0, or sum to 0 in "
                    f"constant mode (a shift), got {lo} and {hi}"
                )
            if dim < 0 and (lo or hi) and mode != PadMode.CONSTANT:
                raise VerifyException(
                    f"'graph.pad' dimension {d} is of run-time size: it is padded in "
                    f"constant mode only, got {lo} and {hi} in {mode} mode"
                )
            if (lo or hi) and mode != PadMode.CONSTANT and dim == 0:
                raise VerifyException(
                    f"'graph.pad' cannot pad the empty dimension {d} in {mode} mode"
                )
            if mode == PadMode.REFLECT and max(lo, hi) >= dim and (lo or hi):
                raise VerifyException(
                    f"'graph.pad' reflect pads of dimension {d} ({lo}, {hi}) must be "
                    f"smaller than the dimension {dim}"
                )
        return tuple(d if d < 0 else d + lo + hi for d, lo, hi in zip(shape, low, high))

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        shape = static_shape(self.input)
        grown = self.run_time_dim_sums()
        return {(0, d): [(0, d)] for d, size in enumerate(shape) if size < 0 and (0, d) not in grown}

    def run_time_dim_sums(self) -> dict[tuple[int, int], tuple[list[tuple[int, int]], int]]:
        shape = static_shape(self.input)
        return {
            (0, d): ([(0, d)], lo + hi)
            for d, (size, lo, hi) in enumerate(zip(shape, self.low_values, self.high_values))
            if size < 0 and lo + hi > 0
        }

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        widths = list(zip(self.low_values, self.high_values))
        if self.pad_mode != PadMode.CONSTANT:
            return [np.pad(x, widths, mode=self.pad_mode.value)]
        value = np.asarray(self.pad_value).astype(x.dtype)
        for d, (lo, hi) in enumerate(widths):
            if lo < 0 or hi < 0:  # a shift: result[i] = x[i - lo] where that exists
                widths[d] = (0, 0)
                if x.shape[d] == 0:
                    continue
                source = np.arange(x.shape[d]) - lo
                inside = (source >= 0) & (source < x.shape[d])
                shifted = np.take(x, np.clip(source, 0, x.shape[d] - 1), axis=d)
                mask = inside.reshape([-1 if a == d else 1 for a in range(x.ndim)])
                x = np.where(mask, shifted, value).astype(x.dtype)
        return [np.pad(x, widths, mode="constant", constant_values=value)]


class _AxisIndexedOp(LayoutOp):
    """Shared definition of the ops that pick entries of `data` by an integer `indices`
    tensor along one `axis`; a subclass gives the result shape."""

    data = operand_def(AnyTensor)
    indices = operand_def(AnyTensor)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(AnyTensor)

    SAME_ELEMENT_TYPE: ClassVar[bool] = False

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$data `,` $indices `axis` $axis attr-dict `:` functional-type(operands, results)"
    )

    @staticmethod
    def result_shape(data: Sequence[int], indices: Sequence[int], axis: int) -> tuple[int, ...]:
        raise NotImplementedError

    def __init__(self, data: SSAValue | Operation, indices: SSAValue | Operation, axis: int):
        data, indices = SSAValue.get(data), SSAValue.get(indices)
        shape = self.result_shape(static_shape(data), static_shape(indices), axis)
        super().__init__(
            operands=[data, indices],
            properties={"axis": IntegerAttr(axis, i64)},
            result_types=[tensor_type_like(data.type, shape)],
        )

    @property
    def axis_value(self) -> int:
        return self.axis.value.data


@irdl_op_definition
class GatherOp(_AxisIndexedOp):
    """Picks entries of `data` along `axis` by an integer index tensor (numpy `take`):
    result[o.., j.., i..] = data[o.., indices[j..], i..], where o.. are the dimensions
    before `axis` and i.. those after it. A negative index counts from the end; an
    index outside [-n, n) is an error (clamped into range by the compiled code).

        %g = graph.gather %data, %idx axis 0 : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
    """

    name = "graph.gather"
    # run-time dimensions of the indices (an embedding's batch and sequence) and of the
    # data, along the gathered axis too (the last `sequence` positions of `past +
    # sequence`: a slice from a run-time size)
    RUN_TIME_DIMS: ClassVar[bool] = True

    @staticmethod
    def result_shape(data: Sequence[int], indices: Sequence[int], axis: int) -> tuple[int, ...]:
        return gather_shape(data, indices, axis)

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        data, indices = static_shape(self.data), static_shape(self.indices)
        axis, rank = self.axis_value, len(static_shape(self.indices))
        origins = [
            *((0, d) for d in range(axis)),
            *((1, d) for d in range(rank)),
            *((0, d) for d in range(axis + 1, len(data))),
        ]
        shapes = (data, indices)
        return {(0, r): [(o, d)] for r, (o, d) in enumerate(origins) if shapes[o][d] < 0}

    def infer_shape(self) -> tuple[int, ...] | None:
        data = static_shape(self.data)
        _check_axis(self.name, self.axis_value, len(data))
        index_type = element_type(self.indices)
        if not isinstance(index_type, IntegerType) or index_type.width.data == 1:
            raise VerifyException(
                f"'graph.gather' indices must be an integer tensor, got {self.indices.type}"
            )
        if element_type(self.data) != element_type(self.result):
            raise VerifyException(
                f"'graph.gather' result element type {element_type(self.result)} differs "
                f"from the data's {element_type(self.data)}"
            )
        return gather_shape(data, static_shape(self.indices), self.axis_value)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        data, indices = inputs
        size = data.shape[self.axis_value]
        indices = np.asarray(indices, dtype=np.int64)
        if indices.size and (indices.min() < -size or indices.max() >= size):
            from strato.diagnostics import StratoError

            raise StratoError(
                f"'graph.gather' index out of range [{-size}, {size}) along axis {self.axis_value}",
                op=self,
            )
        indices = np.where(indices < 0, indices + size, indices)
        return [np.asarray(np.take(data, indices, axis=self.axis_value))]


def gather_shape(data: Sequence[int], indices: Sequence[int], axis: int) -> tuple[int, ...]:
    """The shape of `graph.gather`: data's dims before axis, the indices', data's after."""
    return (*data[:axis], *indices, *data[axis + 1 :])


def _check_index_tensor(op: GraphOp, value: SSAValue, what: str = "indices") -> None:
    index_type = element_type(value)
    if not isinstance(index_type, IntegerType) or index_type.width.data == 1:
        raise VerifyException(f"'{op.name}' {what} must be an integer tensor, got {value.type}")


def _checked_positions(
    op: GraphOp, indices: np.ndarray, size: int | np.ndarray, where: str
) -> np.ndarray:
    """`indices` with negative entries counted from the end, or an error when one lies
    outside [-size, size)."""
    indices = np.asarray(indices, dtype=np.int64)
    if indices.size and (np.any(indices < -size) or np.any(indices >= size)):
        from strato.diagnostics import StratoError

        raise StratoError(f"'{op.name}' index out of range {where}", op=op)
    return np.where(indices < 0, indices + size, indices)


@irdl_op_definition
class GatherElementsOp(_AxisIndexedOp):
    """Picks one entry of `data` per entry of `indices` (same rank) along `axis`
    (numpy `take_along_axis`): result[i..] = data[i.. with indices[i..] at axis]. The
    result has the shape of `indices`; outside `axis` its dimensions are at most the
    data's. A negative index counts from the end; one outside [-n, n) is an error
    (clamped into range by the compiled code).

        %g = graph.gather_elements %data, %idx axis 1 : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
    """

    name = "graph.gather_elements"
    # run-time dimensions of the indices: along the axis (of static size in the data)
    # any, elsewhere the data's (the same size)
    RUN_TIME_DIMS: ClassVar[bool] = True

    @staticmethod
    def result_shape(data: Sequence[int], indices: Sequence[int], axis: int) -> tuple[int, ...]:
        return tuple(indices)

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        return same_dims_as(self, operand=1)

    def run_time_dim_equalities(self) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        data, indices = static_shape(self.data), static_shape(self.indices)
        return [
            ((1, d), (0, d))
            for d in range(min(len(data), len(indices)))
            if d != self.axis_value and data[d] < 0 and indices[d] < 0
        ]

    def infer_shape(self) -> tuple[int, ...] | None:
        data, indices = static_shape(self.data), static_shape(self.indices)
        _check_axis(self.name, self.axis_value, len(data))
        _check_index_tensor(self, self.indices)
        _check_same_element_types(self, [self.data, self.result])
        if data[self.axis_value] < 0 or any(
            (n < 0) != (d < 0)
            for axis, (n, d) in enumerate(zip(indices, data))
            if axis != self.axis_value
        ):
            raise VerifyException(
                f"'graph.gather_elements' of run-time dimensions gathers along a static "
                f"one, and outside it the indices' and the data's are both of run-time "
                f"size or neither: {shape_text(indices)} from {shape_text(data)}"
            )
        if len(indices) != len(data) or any(
            n > d for axis, (n, d) in enumerate(zip(indices, data)) if axis != self.axis_value
        ):
            raise VerifyException(
                f"'graph.gather_elements' indices shape {list(indices)} must have the rank "
                f"of the data shape {list(data)} and no larger dimension outside the axis"
            )
        return indices

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        data, indices = inputs
        axis = self.axis_value
        positions = _checked_positions(self, indices, data.shape[axis], f"along axis {axis}")
        return [take_along_axis(data, positions, axis)]


def take_along_axis(data: np.ndarray, positions: np.ndarray, axis: int) -> np.ndarray:
    """numpy's take_along_axis without broadcasting: outside `axis`, data is cut to the
    (smaller or equal) dimensions of `positions`."""
    window = tuple(
        slice(None) if d == axis else slice(0, n) for d, n in enumerate(positions.shape)
    )
    return np.take_along_axis(data[window], positions, axis=axis)


def gather_nd_shape(
    data: Sequence[int], indices: Sequence[int], batch_dims: int
) -> tuple[int, ...]:
    """The shape of `graph.gather_nd`: the batch dims, the indices' other leading dims,
    then the data dims the index rows do not address."""
    depth = indices[-1]
    return (*indices[:-1], *data[batch_dims + depth :])


@irdl_op_definition
class GatherNDOp(LayoutOp):
    """Picks slices of `data` by index rows (ONNX GatherND): `indices` has shape
    [b.., i.., q]; each row addresses q dimensions of data after the `batch_dims`
    leading ones it shares with indices, and
    result[b.., i.., r..] = data[b.., indices[b.., i.., 0], .., indices[b.., i.., q-1], r..].
    A negative index counts from the end; one outside [-n, n) is an error (clamped
    into range by the compiled code).

        %g = graph.gather_nd %data, %idx batch_dims 0 : (tensor<4x3xf32>, tensor<2x1xi64>) -> tensor<2x3xf32>
    """

    name = "graph.gather_nd"

    data = operand_def(AnyTensor)
    indices = operand_def(AnyTensor)
    batch_dims = prop_def(IntegerAttr[I64])
    result = result_def(AnyTensor)

    SAME_ELEMENT_TYPE: ClassVar[bool] = False

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$data `,` $indices `batch_dims` $batch_dims attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self, data: SSAValue | Operation, indices: SSAValue | Operation, batch_dims: int = 0
    ):
        data, indices = SSAValue.get(data), SSAValue.get(indices)
        shape = gather_nd_shape(static_shape(data), static_shape(indices), batch_dims)
        super().__init__(
            operands=[data, indices],
            properties={"batch_dims": IntegerAttr(batch_dims, i64)},
            result_types=[tensor_type_like(data.type, shape)],
        )

    @property
    def batch_count(self) -> int:
        return self.batch_dims.value.data

    def infer_shape(self) -> tuple[int, ...] | None:
        data, indices = static_shape(self.data), static_shape(self.indices)
        batch = self.batch_count
        _check_index_tensor(self, self.indices)
        _check_same_element_types(self, [self.data, self.result])
        if not indices or batch < 0 or batch >= len(indices) or batch > len(data):
            raise VerifyException(
                f"'graph.gather_nd' batch_dims {batch} must be below the rank of the indices "
                f"{list(indices)} and at most the rank of the data {list(data)}"
            )
        if tuple(indices[:batch]) != tuple(data[:batch]):
            raise VerifyException(
                f"'graph.gather_nd' batch dimensions of data {list(data)} and indices "
                f"{list(indices)} differ"
            )
        if not 1 <= indices[-1] <= len(data) - batch:
            raise VerifyException(
                f"'graph.gather_nd' index rows of length {indices[-1]} do not fit the "
                f"{len(data) - batch} non-batch dimensions of the data"
            )
        return gather_nd_shape(data, indices, batch)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        data, indices = inputs
        batch, depth = self.batch_count, indices.shape[-1]
        sizes = np.array(data.shape[batch : batch + depth], dtype=np.int64)
        positions = _checked_positions(self, indices, sizes, "of the data")
        return [gather_nd(data, positions, batch)]


def gather_nd(data: np.ndarray, positions: np.ndarray, batch_dims: int) -> np.ndarray:
    """The reference semantics of `graph.gather_nd` for in-range, non-negative rows."""
    batch_shape = data.shape[:batch_dims]
    count = int(np.prod(batch_shape, dtype=np.int64))
    flat_data = data.reshape(count, *data.shape[batch_dims:])
    flat_rows = positions.reshape(count, -1, positions.shape[-1])
    pieces = [
        np.stack([flat_data[b][tuple(row)] for row in rows]) if len(rows) else
        np.zeros((0, *data.shape[batch_dims + positions.shape[-1] :]), data.dtype)
        for b, rows in enumerate(flat_rows)
    ]
    shape = gather_nd_shape(data.shape, positions.shape, batch_dims)
    return np.asarray(pieces, dtype=data.dtype).reshape(shape)


class ScatterReduction(StrEnum):
    """How `graph.scatter_nd` combines an update with what is already there."""

    NONE = "none"  # replace
    ADD = "add"
    MUL = "mul"
    MAX = "max"
    MIN = "min"


_SCATTER_COMBINE = {
    ScatterReduction.ADD: np.add,
    ScatterReduction.MUL: np.multiply,
    ScatterReduction.MAX: np.maximum,
    ScatterReduction.MIN: np.minimum,
}


@irdl_op_definition
class ScatterNDOp(LayoutOp):
    """A copy of `data` with slices replaced (or combined, by `reduction`) by
    `updates`. `indices` has shape [u.., q]: each of its rows indexes the first q
    dimensions of data, and updates[u..] (shape data.shape[q:]) goes there. With
    `reduction` none, rows must be distinct; add, mul, max and min combine every
    update of a position, in row order, with the data.

        %s = graph.scatter_nd %data, %idx, %upd reduction "add" : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
    """

    name = "graph.scatter_nd"
    # every update may land on any element: a reduction over the updates per element
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.OPAQUE

    data = operand_def(AnyTensor)
    indices = operand_def(AnyTensor)
    updates = operand_def(AnyTensor)
    reduction = prop_def(StringAttr)
    result = result_def(AnyTensor)

    SAME_ELEMENT_TYPE: ClassVar[bool] = False

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$data `,` $indices `,` $updates `reduction` $reduction attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue | Operation,
        indices: SSAValue | Operation,
        updates: SSAValue | Operation,
        reduction: ScatterReduction = ScatterReduction.NONE,
    ):
        data = SSAValue.get(data)
        super().__init__(
            operands=[data, indices, updates],
            properties={"reduction": StringAttr(ScatterReduction(reduction).value)},
            result_types=[data.type],
        )

    @property
    def combine(self) -> ScatterReduction:
        return ScatterReduction(self.reduction.data)

    def infer_shape(self) -> tuple[int, ...] | None:
        try:
            ScatterReduction(self.reduction.data)
        except ValueError:
            raise VerifyException(
                f"'graph.scatter_nd' reduction '{self.reduction.data}' is not one of "
                f"{', '.join(r.value for r in ScatterReduction)}"
            ) from None
        data, indices = static_shape(self.data), static_shape(self.indices)
        updates = static_shape(self.updates)
        _check_index_tensor(self, self.indices)
        _check_same_element_types(self, [self.data, self.updates, self.result])
        if not indices or not 1 <= indices[-1] <= len(data):
            raise VerifyException(
                f"'graph.scatter_nd' indices shape {list(indices)} must end in a depth "
                f"between 1 and the data rank {len(data)}"
            )
        expected = (*indices[:-1], *data[indices[-1] :])
        if updates != expected:
            raise VerifyException(
                f"'graph.scatter_nd' updates shape {list(updates)} differs from "
                f"{list(expected)} (indices shape without its last dimension, then the "
                "data dimensions it does not index)"
            )
        return data

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        data, indices, updates = inputs
        depth = indices.shape[-1]
        rows = np.asarray(indices, dtype=np.int64).reshape(-1, depth)
        sizes = np.array(data.shape[:depth], dtype=np.int64)
        rows = _checked_positions(self, rows, sizes, "of the data")
        return [scatter_nd(data, rows, updates, self.combine)]


def scatter_nd(
    data: np.ndarray, rows: np.ndarray, updates: np.ndarray, combine: ScatterReduction
) -> np.ndarray:
    """The reference semantics of `graph.scatter_nd` for in-range, non-negative index
    `rows` of shape [n, q]: each row's update, in row order, replaces (or combines with)
    data[row]."""
    depth = rows.shape[1]
    slices = updates.reshape(rows.shape[0], *data.shape[depth:])
    result = data.copy()
    combiner = _SCATTER_COMBINE.get(combine)
    for row, update in zip(rows, slices):
        position = tuple(int(i) for i in row)
        result[position] = update if combiner is None else combiner(result[position], update)
    return result


@irdl_op_definition
class TileOp(LayoutOp):
    """Repeats a tensor `repeats[d]` times along each dimension d:
    result[i..] = input[i_d mod input.shape[d]..].

        %t = graph.tile %a [2, 3] : (tensor<2x4xf32>) -> tensor<4x12xf32>
    """

    name = "graph.tile"

    input = operand_def(AnyTensor)
    repeats = prop_def(DenseArrayBase.constr(i64))
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input $repeats attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue | Operation, repeats: Sequence[int]):
        input = SSAValue.get(input)
        shape = [d * r for d, r in zip(static_shape(input), repeats)]
        super().__init__(
            operands=[input],
            properties={"repeats": i64_array(repeats)},
            result_types=[tensor_type_like(input.type, shape)],
        )

    @property
    def repeat_values(self) -> tuple[int, ...]:
        return tuple(self.repeats.get_values())

    def infer_shape(self) -> tuple[int, ...] | None:
        shape, repeats = static_shape(self.input), self.repeat_values
        if len(repeats) != len(shape) or any(r < 0 for r in repeats):
            raise VerifyException(
                f"'graph.tile' needs one repeat count >= 0 per dimension of the rank-"
                f"{len(shape)} input, got {list(repeats)}"
            )
        _check_same_element_types(self, [self.input, self.result])
        return tuple(d * r for d, r in zip(shape, repeats))

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.tile(inputs[0], self.repeat_values)]


class _DimensionReadOp(LayoutOp):
    """Shared definition of the ops that read dimension `dim` of `like`'s shape, not its
    elements, into an integer tensor; a subclass gives the result."""

    RUN_TIME_DIMS: ClassVar[bool] = True
    SAME_ELEMENT_TYPE: ClassVar[bool] = False

    like = operand_def(AnyTensor)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$like `dim` $dim attr-dict `:` functional-type(operands, results)"

    @property
    def dim_value(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        _check_axis(self.name, self.dim_value, len(static_shape(self.like)))
        super().verify_()

    def _check_integer_result(self) -> None:
        result_type = element_type(self.result)
        if not isinstance(result_type, IntegerType) or result_type.width.data == 1:
            raise VerifyException(f"'{self.name}' gives an integer tensor, got {self.result.type}")


@irdl_op_definition
class IotaOp(_DimensionReadOp):
    """The positions along dimension `dim` of `like`, from 0: result[i] = i, a 1-D
    integer tensor as long as that dimension. It reads `like`'s shape, not its
    elements, so a dimension of run-time size gives its length (ONNX Range(0, n, 1) of
    a size n, and the positions of a sequence):

        %p = graph.iota %ids dim 1 : (tensor<?x?xi64>) -> tensor<?xi64>
    """

    name = "graph.iota"

    def __init__(self, like: SSAValue | Operation, dim: int, element_type: Attribute = i64):
        like = SSAValue.get(like)
        shape = static_shape(like)
        length = shape[dim] if 0 <= dim < len(shape) else 0
        super().__init__(
            operands=[like],
            properties={"dim": IntegerAttr(dim, i64)},
            result_types=[TensorType(element_type, [length])],
        )

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        shape = static_shape(self.like)
        if 0 <= self.dim_value < len(shape) and shape[self.dim_value] < 0:
            return {(0, 0): [(0, self.dim_value)]}
        return {}

    def infer_shape(self) -> tuple[int, ...] | None:
        self._check_integer_result()
        return (static_shape(self.like)[self.dim_value],)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        dtype = numpy_dtype(element_type(self.result))
        return [np.arange(inputs[0].shape[self.dim_value]).astype(dtype)]


@irdl_op_definition
class SizeOfOp(_DimensionReadOp):
    """The size of dimension `dim` of `like`, a rank-0 integer tensor (MLIR's
    `tensor.dim` as a value): a run-time size made data, as exporters compute with it
    (ONNX Shape, Gather of one dimension, then arithmetic on tensors: the positions of
    new tokens after a cache, `Range(0, sequence) + past`). It reads `like`'s shape,
    not its elements:

        %n = graph.size_of %past dim 2 : (tensor<?x4x?x16xf32>) -> tensor<i64>
    """

    name = "graph.size_of"

    def __init__(self, like: SSAValue | Operation, dim: int, element_type: Attribute = i64):
        super().__init__(
            operands=[SSAValue.get(like)],
            properties={"dim": IntegerAttr(dim, i64)},
            result_types=[TensorType(element_type, [])],
        )

    def infer_shape(self) -> tuple[int, ...] | None:
        self._check_integer_result()
        return ()

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        dtype = numpy_dtype(element_type(self.result))
        return [np.array(inputs[0].shape[self.dim_value], dtype=dtype)]


@irdl_op_definition
class BroadcastToOp(GraphOp):
    """Numpy-broadcasts a tensor to the result shape: dimensions align from the right,
    and a size-1 (or missing) input dimension is repeated. A run-time dimension of the
    result is the input's there, or, where the input has 1, the same dimension of
    `like`, a tensor of the result's rank whose elements are not read:

        %b = graph.broadcast_to %a : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
        %t = graph.broadcast_to %p like %ids : (tensor<1x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
    """

    name = "graph.broadcast_to"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.BROADCAST
    FLOAT_OPERANDS: ClassVar[bool] = False
    SAME_ELEMENT_TYPE: ClassVar[bool] = False
    RUN_TIME_DIMS: ClassVar[bool] = True

    input = operand_def(AnyTensor)
    like = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input (`like` $like^)? attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        input: SSAValue | Operation,
        shape: Sequence[int],
        like: SSAValue | Operation | None = None,
    ):
        input = SSAValue.get(input)
        super().__init__(
            operands=[input, [SSAValue.get(like)] if like is not None else []],
            result_types=[tensor_type_like(input.type, shape)],
        )

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        source, target = static_shape(self.input), static_shape(self.result)
        offset = len(target) - len(source)
        sources: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for d, size in enumerate(target):
            if size >= 0:
                continue
            if d >= offset and source[d - offset] < 0:
                sources[(0, d)] = [(0, d - offset)]
            elif self.like is not None and len(static_shape(self.like)) == len(target):
                if static_shape(self.like)[d] < 0:
                    sources[(0, d)] = [(1, d)]
        return sources

    def infer_shape(self) -> tuple[int, ...] | None:
        source, target = static_shape(self.input), static_shape(self.result)
        if element_type(self.input) != element_type(self.result):
            raise VerifyException(
                f"'graph.broadcast_to' result element type {element_type(self.result)} "
                f"differs from the input's {element_type(self.input)}"
            )
        if len(source) > len(target) or any(
            s != t and s != 1 for s, t in zip(source, target[len(target) - len(source) :])
        ):
            raise VerifyException(
                f"'graph.broadcast_to' cannot broadcast {shape_text(source)} to {shape_text(target)}"
            )
        return target

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        target = list(static_shape(self.result))
        offset = len(target) - inputs[0].ndim
        for d, size in enumerate(target):
            if size < 0:
                given = d >= offset and static_shape(self.input)[d - offset] < 0
                target[d] = inputs[0].shape[d - offset] if given else inputs[1].shape[d]
        return [np.broadcast_to(inputs[0], target).copy()]


class PassThroughOp(LayoutOp):
    """An op whose inference semantics is the identity: result = input."""

    T: ClassVar = VarConstraint("T", AnyTensor)
    input = operand_def(T)
    result = result_def(T)
    RUN_TIME_DIMS: ClassVar[bool] = True

    def infer_shape(self) -> tuple[int, ...] | None:
        return static_shape(self.input)

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        return same_dims_as(self)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [inputs[0]]


@irdl_op_definition
class IdentityOp(PassThroughOp):
    """result = input. Kept from the model so that graph simplification removes it in
    one place.

        %r = graph.identity %a : tensor<4x8xf32>
    """

    name = "graph.identity"

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input: SSAValue | Operation):
        input = SSAValue.get(input)
        super().__init__(operands=[input], result_types=[input.type])


@irdl_op_definition
class DropoutOp(PassThroughOp):
    """Dropout at inference: result = input. `ratio`, when known, records the drop
    probability used in training (0 <= ratio < 1); graph simplification removes the op.

        %r = graph.dropout %a ratio 5.000000e-01 : tensor<4x8xf32>
    """

    name = "graph.dropout"

    ratio = opt_prop_def(FloatAttr[Float64Type])

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input (`ratio` $ratio^)? attr-dict `:` type($input)"

    def __init__(self, input: SSAValue | Operation, ratio: float | None = None):
        input = SSAValue.get(input)
        properties = {} if ratio is None else {"ratio": FloatAttr(float(ratio), Float64Type())}
        super().__init__(operands=[input], properties=properties, result_types=[input.type])

    def verify_(self) -> None:
        super().verify_()
        if self.ratio is not None and not 0.0 <= self.ratio.value.data < 1.0:
            raise VerifyException(f"'graph.dropout' ratio {self.ratio.value.data} is not in [0, 1)")


OPS = (
    ReshapeOp,
    TransposeOp,
    ConcatOp,
    SplitOp,
    SliceOp,
    PadOp,
    GatherOp,
    GatherElementsOp,
    GatherNDOp,
    ScatterNDOp,
    TileOp,
    IotaOp,
    SizeOfOp,
    BroadcastToOp,
    IdentityOp,
    DropoutOp,
)

__all__ = [
    "BroadcastToOp",
    "ConcatOp",
    "DropoutOp",
    "GatherElementsOp",
    "GatherNDOp",
    "gather_nd",
    "gather_nd_shape",
    "GatherOp",
    "ScatterNDOp",
    "ScatterReduction",
    "TileOp",
    "IdentityOp",
    "IotaOp",
    "SizeOfOp",
    "PadMode",
    "PadOp",
    "ReshapeOp",
    "SliceOp",
    "SplitOp",
    "TransposeOp",
    "gather_shape",
    "scatter_nd",
    "take_along_axis",
]
