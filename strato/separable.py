"""Dimensions along which a model is separable: one compile for every size of them.

A model is separable along a dimension (its batch, almost always) when the slice i of
each output along that dimension is the model computed on the slice i of each input
alone. Then the model compiled for size 1 of the dimension serves every size: a call
of size N runs it on each slice and stacks the results. `strato.specializing` asks
this module, for a dynamic dimension, whether that holds, and compiles the model
once for size 1 when it does.

It is decided on the graph dialect, from two imports of the model: with the dimension
at 1 and at N (the call's size; the other dimensions as in the call). The two functions
must have the same operations in the same order, with the same properties and
attributes and the same operands. Each value is then either

- unbatched: its shape is the same in both imports (its value is then the same), or
- batched along one axis: the axis's size is N times larger at N, the others equal;
  sample i owns the block [i k, (i + 1) k) of that axis (k: its size at 1), or, after a
  reshape that folds an axis before the batch into it (a sequence-first attention's
  [S, N, E] -> [S N, E]), the indices s N + i: its samples interleave, which only
  operations that run independently along that axis, and the reshape that undoes it,
  accept.

Every operation with a batched operand must keep samples apart, by the rule of its
kind: an element-wise operation broadcasts along the axis; a reduction, softmax, scan,
concatenation, split, gather or sort runs along other axes; a convolution or pooling
has the batch first; a matmul has it in a batch dimension or in the rows of one
operand; a reshape keeps each sample's elements a contiguous block in the same order;
a transpose moves the axis; a slice or pad leaves it whole; a constant whose size grows
with N repeats its value at 1 in each block. Any other case, an operation without a
rule, or an operation with regions makes the model not separable along that dimension,
and `strato.specializing` compiles it per size as before. The check runs for each new
size N, as the model may be a different program at another size.

    x: [batch, 3, 224, 224] -> conv .. flatten (reshape [batch, 512]) -> dense -> y
        separable along batch: y[i] = model(x[i : i + 1]) for each i
    x: [batch, 4] -> reduce_mean over axis 0 -> y
        not separable: graph.reduce_mean reduces over the batched axis 0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from strato.dialects import graph
from strato.dialects.graph.core import ConstantOp
from strato.dialects.graph.layout import PassThroughOp
from strato.dialects.tensor_types import array_from_dense

Axis = int | None
"""The batched axis of a value, or None when it is unbatched."""

MIN_SAMPLE_ELEMENTS = 1 << 22
"""The fewest elements a sample's operations compute for a call to be split into one run
per sample. A run has a fixed cost (the call, the slices, the stacking: microseconds),
and a sample alone gives each kernel less to share between threads and to block for
registers than the whole batch does: a small BERT (64 wide, sequence 128: 1.4 million
elements a sample) runs 1.3-1.4x slower split at batch 4 than compiled for batch 4,
while ResNet-18 (5.7 million) runs within a few percent of it. Below 2^22 (4.2 million)
the model is compiled per size instead."""


class NotSeparable(Exception):
    """Why a model is not separable along a dimension (the message names the op)."""


@dataclass(frozen=True)
class Separation:
    """The batched axis of each input and output of a separable model (None: that
    input or output does not carry the dimension)."""

    input_axes: tuple[Axis, ...]
    output_axes: tuple[Axis, ...]
    sample_elements: int = 0
    """The elements the operations of one sample compute (the results of the import at
    size 1, constants aside): a measure of its work against a call's fixed cost."""

    @property
    def worth_splitting(self) -> bool:
        """Whether a sample computes enough that running each alone costs little more
        than running all at once (MIN_SAMPLE_ELEMENTS)."""
        return self.sample_elements >= MIN_SAMPLE_ELEMENTS

    def run(self, run_one: Callable[..., list[np.ndarray]], arrays: Sequence, count: int):
        """`run_one` (the model at size 1) on each of the `count` samples of `arrays`,
        its outputs stacked along their axes."""
        per_sample = []
        for i in range(count):
            inputs = []
            for array, axis in zip(arrays, self.input_axes, strict=True):
                if axis is None:
                    inputs.append(array)
                    continue
                block = array.shape[axis] // count
                index = (slice(None),) * axis + (slice(i * block, (i + 1) * block),)
                inputs.append(np.ascontiguousarray(array[index]))
            per_sample.append(run_one(*inputs))
        outputs = []
        for position, axis in enumerate(self.output_axes):
            if axis is None:  # computed from unbatched values only: the same in every sample
                outputs.append(per_sample[0][position])
            else:
                outputs.append(np.concatenate([out[position] for out in per_sample], axis=axis))
        return outputs


def separation(one: func.FuncOp, many: func.FuncOp, count: int) -> Separation:
    """How `many` (a model imported with a dimension at `count` >= 2) splits into
    `count` runs of `one` (the same model with that dimension at 1); NotSeparable
    names the first operation that does not keep samples apart."""
    if count < 2:
        raise ValueError("separation needs a size of at least 2")
    axes: dict[SSAValue, Axis] = {}
    outers: dict[SSAValue, int] = {}  # batched values whose samples interleave (_reshape)
    offsets: dict[SSAValue, np.ndarray] = {}  # constants whose block i is block 0 + i d
    counterpart: dict[SSAValue, SSAValue] = {}
    args_one, args_many = one.body.block.args, many.body.block.args
    if len(args_one) != len(args_many):
        raise NotSeparable("the two imports take different numbers of inputs")
    for position, (a, b) in enumerate(zip(args_one, args_many, strict=True)):
        counterpart[b] = a
        axes[b] = _axis_of(a, b, count, f"input {position}")
    ops_one, ops_many = list(one.body.block.ops), list(many.body.block.ops)
    work = 0
    if len(ops_one) != len(ops_many):
        raise NotSeparable(
            f"the model has {len(ops_one)} operations at size 1 but {len(ops_many)} at "
            f"size {count}"
        )
    for index, (a, b) in enumerate(zip(ops_one, ops_many, strict=True)):
        where = f"operation {index} ({b.name})"
        _check_same_op(a, b, counterpart, where)
        if isinstance(b, func.ReturnOp):
            if any(outers.get(value, 1) != 1 for value in b.operands):
                raise NotSeparable(f"{where} gives a value whose samples interleave")
            output_axes = tuple(axes[value] for value in b.operands)
            break
        for r_one, r_many in zip(a.results, b.results, strict=True):
            if isinstance(r_one.type, TensorType) and not isinstance(a, ConstantOp):
                work += math.prod(r_one.type.get_shape())
            counterpart[r_many] = r_one
            axes[r_many] = _axis_of(r_one, r_many, count, f"result of {where}")
        in_axes = [axes[value] for value in b.operands]
        out_axes = [axes[value] for value in b.results]
        if isinstance(b, ConstantOp):
            offset = _check_constant(a, b, out_axes[0], where)
            if offset is not None:
                offsets[b.results[0]] = offset
            continue
        for position, value in enumerate(b.operands):
            if value in offsets and not _offset_indices(b, position, offsets[value], a):
                raise NotSeparable(
                    f"{where} reads a constant that differs between samples"
                )
        if all(axis is None for axis in in_axes) and all(axis is None for axis in out_axes):
            continue  # unbatched operands, the same op: the same value in both imports
        interleaved = {outers.get(v, 1) for v, axis in zip(b.operands, in_axes) if axis is not None}
        if len(interleaved) > 1:
            raise NotSeparable(f"{where} reads values whose samples interleave differently")
        outer = interleaved.pop() if interleaved else 1
        if isinstance(b, graph.ReshapeOp):
            outer = _reshape(b, in_axes[0], outer, out_axes[0], count)
            if outer is None:
                raise _mixes(where, in_axes, out_axes)
            outers[b.results[0]] = outer
            continue
        if outer != 1 and (any(v in offsets for v in b.operands) or isinstance(b, _BLOCKS_ONLY)):
            raise NotSeparable(f"{where} reads a value whose samples interleave")
        if isinstance(b, graph.GatherOp) and b.operands[1] in offsets:
            expected = [b.axis.value.data + in_axes[1]]  # each sample's indices in its block
        elif isinstance(b, graph.GatherNDOp) and b.operands[1] in offsets:
            index_axis = in_axes[1]
            last = len(_shape(b.operands[1])) - 1
            expected = None if index_axis is None or index_axis == last else [index_axis]
        else:
            rule = _rule_of(b)
            if rule is None:
                raise NotSeparable(f"{where} has no rule for a batched operand")
            expected = rule(b, in_axes, out_axes)
        if expected is None or tuple(expected) != tuple(out_axes):
            raise _mixes(where, in_axes, out_axes)
        if outer != 1:  # the op runs independently along the batched axis: as it came
            outers.update((result, outer) for result, axis in zip(b.results, out_axes) if axis is not None)
    else:
        raise NotSeparable("the function does not end in a return")
    input_axes = tuple(axes[arg] for arg in args_many)
    return Separation(input_axes, output_axes, work)


def _mixes(where: str, in_axes: Sequence[Axis], out_axes: Sequence[Axis]) -> NotSeparable:
    """The diagnostic of an operation that mixes samples, with the axes it was given."""

    def shown(axes: Sequence[Axis]) -> str:
        return "[" + ", ".join("-" if a is None else str(a) for a in axes) + "]"

    return NotSeparable(
        f"{where} does not keep samples apart (operand axes {shown(in_axes)}, result axes "
        f"{shown(out_axes)})"
    )


def _axis_of(one: SSAValue, many: SSAValue, count: int, what: str) -> Axis:
    if not isinstance(one.type, TensorType) or not isinstance(many.type, TensorType):
        if one.type != many.type:
            raise NotSeparable(f"{what} has type {one.type} at size 1, {many.type} at {count}")
        return None
    if one.type.element_type != many.type.element_type:
        raise NotSeparable(f"{what} changes element type with the size")
    s1, sn = one.type.get_shape(), many.type.get_shape()
    if len(s1) != len(sn):
        raise NotSeparable(f"{what} has rank {len(s1)} at size 1, {len(sn)} at {count}")
    if 0 in s1:
        raise NotSeparable(f"{what} is empty")
    differ = [d for d in range(len(s1)) if s1[d] != sn[d]]
    if not differ:
        return None
    if len(differ) == 1 and sn[differ[0]] == count * s1[differ[0]]:
        return differ[0]
    raise NotSeparable(
        f"{what} has shape {list(s1)} at size 1 and {list(sn)} at {count}, not one axis "
        f"{count} times larger"
    )


def _check_same_op(
    a: Operation, b: Operation, counterpart: dict[SSAValue, SSAValue], where: str
) -> None:
    if a.name != b.name:
        raise NotSeparable(f"{where} is {a.name} at size 1")
    if a.regions or b.regions:
        raise NotSeparable(f"{where} has regions")
    if len(a.operands) != len(b.operands) or len(a.results) != len(b.results):
        raise NotSeparable(f"{where} has other operands or results at size 1")
    for x, y in zip(a.operands, b.operands, strict=True):
        if counterpart.get(y) is not x:
            raise NotSeparable(f"{where} reads other values at size 1")
    if isinstance(b, ConstantOp):
        return  # the value is compared block by block (_check_constant)
    if a.properties != b.properties or a.attributes != b.attributes:
        raise NotSeparable(f"{where} has other properties at size 1")


def _check_constant(a: Operation, b: Operation, axis: Axis, where: str) -> np.ndarray | None:
    """None when `b` is `a` (unbatched) or `a` repeated in each block of `axis`. For
    integers, the offset d (a vector along the last axis) when block i of `b` is
    `a` + i d: the positions of each sample's elements in a tensor of all samples, which
    only a gather's indices may be (`_offset_indices`)."""
    assert isinstance(a, ConstantOp) and isinstance(b, ConstantOp)
    if axis is None:
        if a.value != b.value:
            raise NotSeparable(f"{where} is another constant at size 1")
        return None
    one, many = array_from_dense(a.value, copy=False), array_from_dense(b.value, copy=False)
    block = one.shape[axis]
    blocks = [
        many[(slice(None),) * axis + (slice(start, start + block),)]
        for start in range(0, many.shape[axis], block)
    ]
    if all(np.array_equal(x, one, equal_nan=one.dtype.kind in "fc") for x in blocks):
        return None
    if one.dtype.kind in "iu" and one.ndim and one.size and len(blocks) > 1:
        base = one.astype(np.int64)
        offset = (blocks[1].astype(np.int64) - base).reshape(-1, one.shape[-1])[0]
        if np.all(offset >= 0) and all(
            np.array_equal(x.astype(np.int64), base + i * offset) for i, x in enumerate(blocks)
        ):
            return offset
    raise NotSeparable(f"{where} is a constant that differs between samples")


# --- rules: the result axes an operation gives for its operands' axes, or None -------

Rule = Callable[[Operation, list[Axis], list[Axis]], Sequence[Axis] | None]


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _broadcast(op: Operation, in_axes: list[Axis], out_axes: list[Axis]) -> Sequence[Axis] | None:
    """Operands broadcast (numpy) to each result's shape, element by element."""
    rank = len(_shape(op.results[0]))
    found: Axis = None
    for value, axis in zip(op.operands, in_axes, strict=True):
        if axis is None:
            continue
        aligned = axis + rank - len(_shape(value))
        if found is not None and aligned != found:
            return None
        found = aligned
    if found is None:  # unbatched operands broadcast to a batched result
        found = out_axes[0]
        if found is None:
            return None
    for value, axis in zip(op.operands, in_axes, strict=True):
        position = found - (rank - len(_shape(value)))
        if axis is None and position >= 0 and _shape(value)[position] != 1:
            return None
    return [found] * len(op.results)


def _alone(in_axes: list[Axis]) -> Axis:
    """The batched axis of the first operand when no other operand is batched (weights,
    scales, parameters), else None."""
    return None if any(a is not None for a in in_axes[1:]) else in_axes[0]


def _first_only(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    """Windows over a channel-first [N, C, spatial..] tensor: the batch is axis 0."""
    if _alone(in_axes) != 0:
        return None
    if isinstance(op, graph.MaxPoolWithIndicesOp):
        return None  # its indices count from the start of the whole tensor
    return [0] * len(op.results)


def _reduction(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    axis = in_axes[0]
    axes = set(op.axes.get_values())  # type: ignore[attr-defined]
    if axis is None or axis in axes:
        return None
    if op.keepdims is None:  # type: ignore[attr-defined]
        axis -= sum(1 for a in axes if a < axis)
    return [axis]


def _along_axis(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    """ArgMax/ArgMin (keepdims or not), CumSum/CumProd, TopK: along `axis`."""
    axis = _alone(in_axes)
    along = op.axis.value.data  # type: ignore[attr-defined]
    if axis is None or axis == along:
        return None
    if isinstance(op, graph.ArgMaxOp | graph.ArgMinOp) and op.keepdims is None and along < axis:
        axis -= 1
    return [axis] * len(op.results)


def _softmax(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    axis = in_axes[0]
    if axis is None or axis in set(op.axes.get_values()):  # type: ignore[attr-defined]
        return None
    return [axis]


def _layer_norm(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    axis = _alone(in_axes)
    if axis is None or axis >= op.axis.value.data:  # type: ignore[attr-defined]
        return None
    return [axis] * len(op.results)


def _quantization(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    """Quantize/Dequantize/Requantize: scales per tensor or along `axis`."""
    axis = _alone(in_axes)
    if axis is None:
        return None
    per_axis = any(math.prod(_shape(value)) > 1 for value in op.operands[1:])
    if per_axis and axis == op.axis.value.data:  # type: ignore[attr-defined]
        return None
    return [axis] * len(op.results)


def _dense(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    axis = _alone(in_axes)
    if axis is None or axis == len(_shape(op.operands[0])) - 1:
        return None
    return [axis]


def _matmul(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    """numpy matmul: the batch in a batch dimension (broadcast against the other
    operand's), in the rows of the left operand, or in the columns of the right one."""
    lhs, rhs = (len(_shape(value)) for value in op.operands)
    rank = len(_shape(op.results[0]))
    lhs_axis, rhs_axis = in_axes
    if lhs_axis is not None and rhs_axis is not None:
        if lhs < 2 or rhs < 2 or lhs_axis >= lhs - 2 or rhs_axis >= rhs - 2:
            return None
        aligned = lhs_axis + rank - lhs
        return [aligned] if aligned == rhs_axis + rank - rhs else None
    if lhs_axis is not None:
        if lhs_axis == lhs - 1:  # the contracted axis
            return None
        if rhs < 2:  # [.., M, K] x [K] -> [.., M]
            return [lhs_axis]
        return [lhs_axis + rank - lhs]  # a batch dimension or the rows
    if rhs_axis is not None:
        if rhs < 2 or rhs_axis == rhs - 2:  # the contracted axis
            return None
        if lhs < 2:  # [K] x [.., K, N] -> [.., N]
            return [rhs_axis if rhs_axis < rhs - 2 else rank - 1]
        return [rhs_axis + rank - rhs]  # a batch dimension or the columns
    return None


def _transpose(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    if in_axes[0] is None:
        return None
    perm = list(op.perm.get_values())  # type: ignore[attr-defined]
    return [perm.index(in_axes[0])]


def _reshape(op: Operation, axis: Axis, outer: int, result: Axis, count: int) -> int | None:
    """The interleaving of a reshape's result (None: it mixes samples). A batched axis
    of extent `outer` x N x `inner` (sample i at the middle index i; `outer` 1: one
    block per sample) makes the tensor, in row-major order, [P, N, B]: P = the elements
    before the axis times `outer`, B = `inner` times the elements after it. A reshape
    keeps that order, so the result's batched axis must split into the same P and B;
    its `outer` is P over the elements before it. A sequence-first attention's
    [S, N, H, D] -> [S N, H D] gives rows with samples interleaved (`outer` S), and the
    reshape back [S N, E] -> [S, N, E] undoes it."""
    if axis is None or result is None:
        return None
    src, dst = _shape(op.operands[0]), _shape(op.results[0])
    if src[axis] % (outer * count):
        return None
    inner = src[axis] // outer  # N times the inner extent
    before = math.prod(src[:axis]) * outer
    after = inner * math.prod(src[axis + 1 :])  # of N * this, per middle index
    dst_before = math.prod(dst[:result])
    if before % dst_before:
        return None
    dst_outer = before // dst_before
    if dst[result] % (dst_outer * count):
        return None
    dst_inner = dst[result] // dst_outer
    if dst_inner * math.prod(dst[result + 1 :]) != after:
        return None
    return dst_outer


def _concat(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    axis = in_axes[0]
    along = op.axis.value.data  # type: ignore[attr-defined]
    if axis is None or axis == along or any(a != axis for a in in_axes):
        return None
    return [axis]


def _split(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    axis = in_axes[0]
    if axis is None or axis == op.axis.value.data:  # type: ignore[attr-defined]
        return None
    return [axis] * len(op.results)


def _whole_axis(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    """Slice, pad, tile: the batched axis untouched (each checked by its properties)."""
    axis = _alone(in_axes)
    if axis is None:
        return None
    if _shape(op.operands[0])[axis] != _shape(op.results[0])[axis]:
        return None
    if isinstance(op, graph.SliceOp):
        if op.starts.get_values()[axis] != 0 or op.steps.get_values()[axis] != 1:
            return None
    elif isinstance(op, graph.PadOp):
        if op.low.get_values()[axis] != 0 or op.high.get_values()[axis] != 0:
            return None
    elif isinstance(op, graph.TileOp):
        if op.repeats.get_values()[axis] != 1:
            return None
    elif isinstance(op, graph.ResizeOp) and (
        op.scales.get_values()[axis] != 1.0 or op.roi is not None
    ):
        return None
    return [axis]


def _offset_indices(op: Operation, position: int, offset: np.ndarray, at_one: Operation) -> Axis | bool:
    """Whether operand `position` of `op` is the indices of a gather (or gather_nd)
    into data batched in blocks along the axis the indices offset, by a block per sample,
    with values at size 1 within a block: then the indices of sample i point into its
    block, as the model's at size 1 point into the one block there."""
    if position != 1 or not isinstance(op, graph.GatherOp | graph.GatherNDOp):
        return False
    data_one = _shape(at_one.operands[0])
    values = array_from_dense(at_one.operands[1].owner.value, copy=False).astype(np.int64)  # type: ignore[union-attr]
    if isinstance(op, graph.GatherOp):
        along, component = op.axis.value.data, None
        if np.any(offset != offset[0]):
            return False
    else:
        if op.batch_dims.value.data != 0 or np.count_nonzero(offset) != 1:
            return False
        component = int(np.flatnonzero(offset)[0])
        along = component
        values = values[..., component]
    step = int(offset[component or 0])
    block = data_one[along]
    if _shape(op.operands[0])[along] == block or step != block:
        return False  # the data is not batched along that axis in blocks of the offset
    return bool(values.size) and int(values.min()) >= 0 and int(values.max()) < block


def _gather(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    data_axis, index_axis = in_axes
    along = op.axis.value.data  # type: ignore[attr-defined]
    if data_axis is not None and index_axis is None:
        if data_axis == along:
            return None
        index_rank = len(_shape(op.operands[1]))
        return [data_axis if data_axis < along else data_axis + index_rank - 1]
    if data_axis is None and index_axis is not None:
        return [along + index_axis]
    return None


def _gather_elements(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    """Both batched on one axis, in blocks of one size (sample i's indices read sample i's
    data), the gather along another."""
    data_axis, index_axis = in_axes
    if data_axis is None or data_axis != index_axis or data_axis == op.axis.value.data:  # type: ignore[attr-defined]
        return None
    if _shape(op.operands[0])[data_axis] != _shape(op.operands[1])[data_axis]:
        return None
    return [data_axis]


def _gather_nd(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    data_axis, index_axis = in_axes
    if data_axis is None or data_axis != index_axis:
        return None
    if data_axis >= op.batch_dims.value.data:  # type: ignore[attr-defined]
        return None
    return [data_axis]


def _einsum(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    equation = op.equation.data.replace(" ", "")  # type: ignore[attr-defined]
    if "->" not in equation or "." in equation:
        return None
    inputs, output = equation.split("->")
    terms = inputs.split(",")
    letter = None
    for term, axis in zip(terms, in_axes, strict=True):
        if axis is None:
            continue
        if letter is not None and term[axis] != letter:
            return None
        letter = term[axis]
    if letter is None or output.count(letter) != 1:
        return None
    for term, axis in zip(terms, in_axes, strict=True):
        if term.count(letter) != (0 if axis is None else 1):
            return None
    return [output.index(letter)]


def _batch_norm(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    axis = _alone(in_axes)
    if axis is None or axis == 1:
        return None
    return [axis]


def _recurrence(op: Operation, in_axes: list[Axis], out_axes: list[Axis]):
    """LSTM, GRU, RNN: x [seq, batch, in], states [dirs, batch, hidden], lengths
    [batch]; y [seq, dirs, batch, hidden], the last states [dirs, batch, hidden]."""
    expected = {"x": 1, "sequence_lens": 0, "initial_h": 1, "initial_c": 1}
    for name, values in _named_operands(op).items():
        for value in values:
            axis = in_axes[list(op.operands).index(value)]
            if axis != expected.get(name):
                return None
    return [2 if name == "y" else 1 for name in _result_names(op)]


def _named_operands(op: Operation) -> dict[str, list[SSAValue]]:
    names = ("x", "w", "r", "bias", "sequence_lens", "initial_h", "initial_c", "peepholes")
    found = {}
    for name in names:
        value = getattr(op, name, None)
        if value is not None:
            found[name] = [value]
    return found


def _result_names(op: Operation) -> list[str]:
    names = []
    for result in op.results:
        for name in ("y", "y_h", "y_c"):
            if getattr(op, name, None) is result:
                names.append(name)
    return names


_ELEMENTWISE = (
    graph.UnaryElementwiseOp, graph.BroadcastBinaryOp, graph.WhereOp, graph.CastOp,
    graph.BitcastOp, graph.FloatClassOp, PassThroughOp, graph.BroadcastToOp,
)  # fmt: skip

_RULES: list[tuple[type | tuple[type, ...], Rule]] = [
    (_ELEMENTWISE, _broadcast),
    ((graph.ConvolutionOp, graph.PoolOp, graph.GlobalAvgPoolOp, graph.QConvOp), _first_only),
    (graph.ReductionOp, _reduction),
    ((graph.ArgMaxOp, graph.ArgMinOp, graph.CumSumOp, graph.CumProdOp, graph.TopKOp), _along_axis),
    (graph.SoftmaxOp, _softmax),
    (graph.LayerNormOp, _layer_norm),
    (graph.BatchNormOp, _batch_norm),
    ((graph.QuantizeOp, graph.DequantizeOp, graph.RequantizeOp), _quantization),
    ((graph.DenseOp, graph.QDenseOp), _dense),
    (graph.MatmulOp, _matmul),
    (graph.EinsumOp, _einsum),
    (graph.TransposeOp, _transpose),
    (graph.ConcatOp, _concat),
    (graph.SplitOp, _split),
    ((graph.SliceOp, graph.PadOp, graph.TileOp, graph.ResizeOp), _whole_axis),
    (graph.GatherOp, _gather),
    (graph.GatherElementsOp, _gather_elements),
    (graph.GatherNDOp, _gather_nd),
    ((graph.LstmOp, graph.RecurrenceOp), _recurrence),
]


_BLOCKS_ONLY = (graph.LstmOp, graph.RecurrenceOp, graph.GatherNDOp)
"""Operations whose rules assume one block of the batched axis per sample (an
interleaved operand is refused)."""


def _rule_of(op: Operation) -> Rule | None:
    for kinds, rule in _RULES:
        if isinstance(op, kinds):
            return rule
    return None


__all__ = ["MIN_SAMPLE_ELEMENTS", "NotSeparable", "Separation", "separation"]
