"""Converters for ONNX operators that move data: Flatten, Reshape, Squeeze, Unsqueeze,
Transpose, Concat, Split, Slice, Pad, Gather, GatherElements, GatherND, ScatterND, Shape,
Expand,
Tile, DepthToSpace, SpaceToDepth, Identity, Dropout, ReverseSequence, TensorScatter,
Compress.

Whatever decides a result shape (a target shape, axes, slice bounds, pads) must be known
at import time; it is folded into static properties of the graph op, as is every
operator whose data inputs are all known (so shape arithmetic such as
Shape -> Gather -> Concat -> Reshape disappears at import):

    Reshape(x: [2, 3, 4], shape=[0, -1])   ->  graph.reshape %x : (...) -> tensor<2x12xf32>
    Slice(x: [20, 10], starts=[-1], ends=[-11], axes=[1], steps=[-1])
                                           ->  graph.slice %x starts [0, 9] steps [1, -1]
    Pad(x, pads=[0, -1, 1, 2]) (negative pads crop first)
                                           ->  graph.slice, then graph.pad

`IMPORT_TIME_INPUTS` lists, per operator, the inputs that must be known at import
time; a test driver that feeds them as graph inputs can bind them to constants first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, f32
from xdsl.ir import SSAValue

from strato.dialects import graph
from strato.dialects.graph.base import shape_text
from strato.dialects.tensor_types import element_type_of, is_bit_pattern_float
from strato.frontends.onnx import shape_values
from strato.frontends.onnx.conversion import (
    ImportedValue,
    NodeContext,
    shape_of,
    ssa_name,
)
from strato.frontends.onnx.merged_dims import restretched
from strato.frontends.onnx.run_time_slices import (
    Cropped,
    Padded,
    run_time_slice,
    shifted,
    sliced,
)

IMPORT_TIME_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "Split": (1,),
    "Slice": (1, 2, 3, 4),
    "Pad": (1, 2, 3),
    "Expand": (1,),
    "Tile": (1,),
    "Dropout": (1, 2),
    "Trilu": (1,),
    "OneHot": (1,),
    "Compress": (1,),
}
"""The inputs of each operator that must be known at import time (by position)."""


# -- reading import-time inputs ---------------------------------------------------


def int_list_input(ctx: NodeContext, index: int, what: str) -> list[int]:
    """Integer input `index` (a shape, axes, ...), which must be known at import time."""
    array = ctx.known(index)
    if array is None:
        raise ctx.error(
            f"{what} (input '{ctx.input_name(index)}') must be known at import time (an "
            "initializer or a Constant): strato compiles static shapes"
        )
    if array.dtype.kind not in "iu":
        raise ctx.error(f"{what} must be an integer tensor, got {array.dtype}")
    if array.ndim > 1:
        raise ctx.error(f"{what} must be a 1-D tensor, got shape {list(array.shape)}")
    return [int(v) for v in array.reshape(-1)]


def axes_of(ctx: NodeContext, input_index: int) -> list[int] | None:
    """The `axes` of a node: the attribute (older opsets) or input `input_index`
    (newer ones), or None when neither is given."""
    if ctx.has_attr("axes"):
        return [int(a) for a in ctx.attr("axes")]
    if ctx.has_input(input_index):
        return int_list_input(ctx, input_index, "axes")
    return None


def normalize_axis(ctx: NodeContext, axis: int, rank: int, what: str = "axis") -> int:
    """`axis` in [-rank, rank) as a non-negative axis, or a diagnostic."""
    if not -rank <= axis < rank:
        raise ctx.error(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def normalize_axes(ctx: NodeContext, axes: Sequence[int], rank: int) -> list[int]:
    """Distinct axes in [-rank, rank), made non-negative, in the given order."""
    result = [normalize_axis(ctx, a, rank) for a in axes]
    if len(set(result)) != len(result):
        raise ctx.error(f"axes {list(axes)} repeat an axis")
    return result


def input_shape(ctx: NodeContext, index: int) -> tuple[int, ...]:
    """The static shape of input `index`, whatever its element type."""
    return shape_of(_data(ctx, index))


def _data(ctx: NodeContext, index: int = 0) -> ImportedValue:
    """A data input: the array when known at import time (any element type), else
    its SSA value."""
    known = ctx.known(index)
    return known if known is not None else ctx.operand(index)


def _reshaped(ctx: NodeContext, shape: Sequence[int]) -> ImportedValue:
    """Input 0 with a new shape (no op when the shape does not change)."""
    x = _data(ctx)
    shape = tuple(int(d) for d in shape)
    if isinstance(x, np.ndarray):
        return x.reshape(shape)
    if shape_of(x) == shape:
        return x
    return ctx.emit(graph.ReshapeOp(x, shape)).results[0]


# -- reshapes ---------------------------------------------------------------------


def convert_flatten(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Flatten: [d_0 .. d_n] -> [d_0 * .. * d_(axis-1), d_axis * .. * d_n]."""
    shape = input_shape(ctx, 0)
    axis = int(ctx.attr("axis", 1))
    if not -len(shape) <= axis <= len(shape):
        raise ctx.error(f"axis {axis} is out of range for rank {len(shape)}")
    if axis < 0:
        axis += len(shape)
    return [_reshaped(ctx, (math.prod(shape[:axis]), math.prod(shape[axis:])))]


def convert_reshape(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Reshape: 0 copies the input dimension (a literal 0 with allowzero=1), -1
    is inferred from the element count."""
    source = input_shape(ctx, 0)
    kept = shape_values.target_shape(ctx, 1, ctx.run_time_dims)
    requested = kept if kept is not None else int_list_input(ctx, 1, "the target shape")
    allow_zero = ctx.flag_attr("allowzero")
    if allow_zero and 0 in requested and -1 in requested:
        raise ctx.error("a shape with both 0 and -1 is invalid with allowzero=1")
    shape: list[int] = []
    for n, size in enumerate(requested):
        if size == DYNAMIC_INDEX:
            pass  # a run-time dimension the computed shape names
        elif size == 0 and not allow_zero:
            if n >= len(source):
                raise ctx.error(
                    f"shape {requested} copies dimension {n}, which the rank-{len(source)} "
                    "input does not have"
                )
            size = source[n]
        elif size < -1:
            raise ctx.error(f"shape {requested} has the invalid dimension {size}")
        shape.append(size)
    if shape.count(-1) > 1:
        raise ctx.error(f"shape {requested} has more than one -1")
    if any(size < -1 for size in source):
        # run-time dimensions, copied by 0 into the same places: -1 is inferred from
        # the static rest (graph.reshape checks that they stay), or is the one run-time
        # dimension not copied when the static sizes around it agree ([1, seq] to [-1])
        static = [size for size in source if size >= 0]
        known = [size for size in shape if size >= 0]
        if -1 in shape:
            at = shape.index(-1)
            left = [n for n, size in enumerate(source) if size < -1 and shape[n:n + 1] != [size]]
            if len(left) == 1:
                candidate = [*shape[:at], source[left[0]], *shape[at + 1 :]]
                if restretched(tuple(source), tuple(candidate)):
                    return [_reshaped(ctx, candidate)]
            if math.prod(known) == 0 or math.prod(static) % math.prod(known):
                raise ctx.error(f"cannot reshape {shape_text(source)} to {requested}")
            shape[shape.index(-1)] = math.prod(static) // math.prod(known)
        return [_reshaped(ctx, shape)]
    count = math.prod(source)
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or count % known:
            raise ctx.error(f"cannot reshape {list(source)} to {requested}")
        shape[shape.index(-1)] = count // known
    if math.prod(shape) != count:
        raise ctx.error(f"cannot reshape {list(source)} ({count} elements) to {requested}")
    return [_reshaped(ctx, shape)]


def convert_squeeze(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Squeeze: drop the given size-1 axes (all size-1 axes by default)."""
    shape = input_shape(ctx, 0)
    axes = axes_of(ctx, 1)
    if axes is None:
        dropped = {d for d, size in enumerate(shape) if size == 1}
    else:
        dropped = set(normalize_axes(ctx, axes, len(shape)))
        for d in sorted(dropped):
            if shape[d] != 1:
                raise ctx.error(f"cannot squeeze axis {d} of size {shape[d]}")
    return [_reshaped(ctx, [size for d, size in enumerate(shape) if d not in dropped])]


def convert_unsqueeze(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Unsqueeze: insert size-1 axes at the given positions of the result."""
    shape = input_shape(ctx, 0)
    axes = axes_of(ctx, 1)
    if axes is None:
        raise ctx.error("axes are required")
    rank = len(shape) + len(axes)
    inserted = set(normalize_axes(ctx, axes, rank))
    rest = iter(shape)
    return [_reshaped(ctx, [1 if d in inserted else next(rest) for d in range(rank)])]


# -- transpose, concat, split -----------------------------------------------------


def convert_transpose(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Transpose: perm defaults to reversing the dimensions."""
    rank = len(input_shape(ctx, 0))
    perm = [int(p) for p in ctx.attr("perm", list(reversed(range(rank))))]
    if sorted(perm) != list(range(rank)):
        raise ctx.error(f"perm {perm} is not a permutation of {rank} dimensions")
    x = _data(ctx)
    if isinstance(x, np.ndarray):
        return [np.array(np.transpose(x, perm), order="C")]
    if perm == list(range(rank)):
        return [x]
    return [ctx.emit(graph.TransposeOp(x, perm)).results[0]]


def convert_concat(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Concat along `axis` (negative counts from the end)."""
    count = len(ctx.node.input)
    shapes = [input_shape(ctx, n) for n in range(count)]
    axis = normalize_axis(ctx, int(ctx.attr("axis", 0)), len(shapes[0]))
    for shape in shapes[1:]:
        if len(shape) != len(shapes[0]) or any(
            a != b for d, (a, b) in enumerate(zip(shape, shapes[0])) if d != axis
        ):
            raise ctx.error(
                f"input shapes {list(shapes[0])} and {list(shape)} differ outside axis {axis}"
            )
    values = [_data(ctx, n) for n in range(count)]
    if all(isinstance(v, np.ndarray) for v in values):
        return [np.concatenate(values, axis=axis)]
    operands = [ctx.operand(n) for n in range(count)]
    if len(operands) == 1:
        return [operands[0]]
    return [ctx.emit(graph.ConcatOp(operands, axis)).results[0]]


def split_sizes(ctx: NodeContext, dim: int, outputs: int) -> list[int]:
    """The sizes of the pieces of a Split: the `split` input or attribute, else
    `num_outputs` pieces of ceil(dim / num_outputs) (the last one smaller), else equal
    pieces, one per output."""
    if ctx.has_input(1):
        sizes = int_list_input(ctx, 1, "split")
    elif ctx.has_attr("split"):
        sizes = [int(s) for s in ctx.attr("split")]
    else:
        count = int(ctx.attr("num_outputs", outputs))
        if count != outputs:
            raise ctx.error(f"num_outputs={count} but the node has {outputs} outputs")
        if ctx.has_attr("num_outputs"):
            chunk = -(-dim // count)
            sizes = [chunk] * (count - 1) + [dim - chunk * (count - 1)]
        else:
            if dim % count:
                raise ctx.error(f"cannot split {dim} elements into {count} equal parts")
            sizes = [dim // count] * count
    if len(sizes) != outputs:
        raise ctx.error(f"split {sizes} has {len(sizes)} sizes for {outputs} outputs")
    if any(s < 0 for s in sizes) or sum(sizes) != dim:
        raise ctx.error(f"split sizes {sizes} do not cover the {dim} elements of the axis")
    return sizes


def convert_split(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Split along `axis` into consecutive pieces."""
    shape = input_shape(ctx, 0)
    axis = normalize_axis(ctx, int(ctx.attr("axis", 0)), len(shape))
    sizes = split_sizes(ctx, shape[axis], len(ctx.node.output))
    x = _data(ctx)
    if isinstance(x, np.ndarray):
        offsets = np.cumsum(sizes)[:-1]
        return [p.copy() for p in np.split(x, offsets, axis=axis)]
    if len(sizes) == 1:
        return [x]
    return list(ctx.emit(graph.SplitOp(x, axis, sizes)).results)


# -- slice and pad ----------------------------------------------------------------


def slice_bounds(
    shape: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int],
    steps: Sequence[int],
) -> tuple[list[int], list[int], list[int]]:
    """ONNX Slice bounds made static: the first index, step and element count per
    dimension. Negative starts and ends count from the end; then they are clamped to
    [0, dim] (positive steps) or [0, dim - 1] and [-1, dim - 1] (negative steps)."""
    first = [0] * len(shape)
    step_of = [1] * len(shape)
    sizes = list(shape)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        dim = shape[axis]
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        size = max(0, -(-(end - start) // step))
        first[axis] = start if size else 0
        step_of[axis] = step
        sizes[axis] = size
    return first, step_of, sizes


def _strided(
    x: np.ndarray, starts: Sequence[int], steps: Sequence[int], sizes: Sequence[int]
) -> np.ndarray:
    if x.ndim == 0:
        return x.copy()
    index = [s + t * np.arange(n, dtype=np.int64) for s, t, n in zip(starts, steps, sizes)]
    return np.array(x[np.ix_(*index)], order="C")


def _sliced(
    ctx: NodeContext,
    x: ImportedValue,
    starts: Sequence[int],
    steps: Sequence[int],
    sizes: Sequence[int],
) -> ImportedValue:
    if isinstance(x, np.ndarray):
        return _strided(x, starts, steps, sizes)
    shape = shape_of(x)
    if all(s == 0 for s in starts) and all(t == 1 for t in steps) and tuple(sizes) == shape:
        return x
    return ctx.emit(graph.SliceOp(x, starts, steps, sizes)).results[0]


def convert_slice(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Slice: starts, ends, axes and steps (inputs, or attributes before opset 10)
    become a static `graph.slice`."""
    shape = input_shape(ctx, 0)
    if ctx.has_attr("starts"):  # opset < 10
        starts = [int(v) for v in ctx.attr("starts")]
        ends = [int(v) for v in ctx.attr("ends")]
        axes = [int(v) for v in ctx.attr("axes", list(range(len(starts))))]
        steps = [1] * len(starts)
    else:
        starts = int_list_input(ctx, 1, "starts")
        ends = int_list_input(ctx, 2, "ends")
        axes = int_list_input(ctx, 3, "axes") if ctx.has_input(3) else list(range(len(starts)))
        steps = int_list_input(ctx, 4, "steps") if ctx.has_input(4) else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error(
            f"starts, ends, axes and steps differ in length: {len(starts)}, {len(ends)}, "
            f"{len(axes)}, {len(steps)}"
        )
    if 0 in steps:
        raise ctx.error("steps must not be 0")
    axes = normalize_axes(ctx, axes, len(shape))
    crops: list[Cropped] = []
    x = _data(ctx)
    for n in reversed([n for n, axis in enumerate(axes) if shape[axis] < 0]):
        # a run-time dimension keeps its size, or drops elements at its ends for a Pad
        # that gives them back (`run_time_slices`)
        assert isinstance(x, SSAValue)
        crop = run_time_slice(ctx.label, x, axes[n], starts[n], ends[n], steps[n])
        crops += [crop] if crop is not None else []
        del starts[n], ends[n], axes[n], steps[n]
    if len(crops) > 1:
        raise shape_values.StaticShapesOnly(
            f"{ctx.label} slices {len(crops)} dimensions of run-time size"
        )
    first, step_of, sizes = slice_bounds(shape, starts, ends, axes, steps)
    sliced = _sliced(ctx, x, first, step_of, sizes)
    if crops:
        assert isinstance(sliced, SSAValue)
        return [Cropped(sliced, crops[0].axis, crops[0].start, crops[0].end)]
    return [sliced]


_PAD_MODES = {mode.value: mode for mode in graph.PadMode}


def convert_pad(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Pad (modes constant, reflect, edge, wrap). Pads, the constant value and
    axes are inputs (attributes before opset 11) known at import time; negative pads
    crop, with a `graph.slice` before the `graph.pad`. A dimension of run-time size
    keeps its size: its pads are 0 or a shift (constant pads that sum to 0), or give
    back what a slice of it took (`run_time_slices`)."""
    data = ctx.static_value(0)
    if isinstance(data, Cropped):
        mode, low, high, value = _pad_amounts(ctx, len(data.value.type.get_shape()))  # type: ignore[union-attr]
        op = shifted(ctx.label, data, mode, low, high, value)
        if op is None:
            # not back to its length: the slice, then padded (a size computed from
            # the dimension's: `sequence + 1`)
            x = sliced(data, ctx.emit)
            return [ctx.emit(graph.PadOp(x, low, high, mode, value if value != 0.0 else None)).results[0]]
        return [ctx.emit(op).results[0]]
    shape = input_shape(ctx, 0)
    rank = len(shape)
    mode, low, high, value = _pad_amounts(ctx, rank)
    shifts = {d: (low[d], high[d]) for d in range(rank) if shape[d] < 0 and (low[d] or high[d])}
    grown = [d for d, (lo, hi) in shifts.items() if lo >= 0 and hi >= 0 and lo + hi > 0]
    if mode == graph.PadMode.CONSTANT and len(grown) == 1 and len(shifts) == 1:
        # a run-time dimension made longer: kept for a Gather of its windows
        (d,) = grown
        lo, hi = low[d], high[d]
        low[d] = high[d] = 0
        x = _data(ctx)
        if any(p < 0 for p in (*low, *high)) or not isinstance(x, SSAValue):
            raise shape_values.StaticShapesOnly(f"{ctx.label} pads a run-time dimension and crops another")
        if any(low) or any(high):
            constant = value if value != 0.0 else None
            x = ctx.emit(graph.PadOp(x, low, high, mode, constant)).results[0]
        return [Padded(x, d, lo, hi, value)]
    for d, (lo, hi) in shifts.items():
        if mode != graph.PadMode.CONSTANT or lo + hi:
            raise shape_values.StaticShapesOnly(
                f"{ctx.label} pads dimension {d}, of run-time size, by ({lo}, {hi}): only "
                "constant pads that sum to 0 (a shift) keep its size"
            )
        low[d] = high[d] = 0  # the shift goes into the graph.pad below as it is
    for d in range(rank):
        if shape[d] >= 0 and shape[d] + low[d] + high[d] < 0:
            pads = [*(low[a] for a in range(rank)), *(high[a] for a in range(rank))]
            raise ctx.error(f"pads {pads} remove more than the {shape[d]} elements of axis {d}")

    x = _data(ctx)
    if any(p < 0 for p in (*low, *high)):
        starts = [max(-lo, 0) for lo in low]
        sizes = [dim + min(lo, 0) + min(hi, 0) if dim >= 0 else dim for dim, lo, hi in zip(shape, low, high)]
        x = _sliced(ctx, x, starts, [1] * rank, sizes)
        shape = tuple(sizes)
        low, high = [max(p, 0) for p in low], [max(p, 0) for p in high]
    for d, (lo, hi) in shifts.items():
        low[d], high[d] = lo, hi
    for d, (dim, lo, hi) in enumerate(zip(shape, low, high)):
        if not (lo or hi) or mode == graph.PadMode.CONSTANT:
            continue
        if dim == 0:
            raise ctx.error(f"cannot pad the empty axis {d} in {mode.value} mode")
        if mode == graph.PadMode.REFLECT and max(lo, hi) >= dim:
            raise ctx.error(
                f"reflect pads ({lo}, {hi}) of axis {d} must be smaller than its size {dim}"
            )
    if isinstance(x, np.ndarray):
        widths = list(zip(low, high))
        if mode == graph.PadMode.CONSTANT:
            return [np.pad(x, widths, constant_values=np.asarray(value).astype(x.dtype))]
        return [np.pad(x, widths, mode=mode.value)]
    if not any(low) and not any(high):
        return [x]
    constant = value if mode == graph.PadMode.CONSTANT and value != 0.0 else None
    return [ctx.emit(graph.PadOp(x, low, high, mode, constant)).results[0]]


def _pad_amounts(ctx: NodeContext, rank: int) -> tuple[graph.PadMode, list[int], list[int], float]:
    """A Pad's mode, its pads before and after each of `rank` dimensions, and its
    constant value."""
    mode_name = ctx.attr("mode", "constant")
    if mode_name not in _PAD_MODES:
        raise ctx.error(f"mode '{mode_name}' is not supported (constant, reflect, edge, wrap)")
    mode = _PAD_MODES[mode_name]
    if ctx.has_attr("pads"):  # opset < 11
        pads = [int(p) for p in ctx.attr("pads")]
        value = float(ctx.attr("value", 0.0))
        axes = list(range(rank))
    else:
        pads = int_list_input(ctx, 1, "pads")
        value = _pad_value(ctx)
        axes = (
            normalize_axes(ctx, int_list_input(ctx, 3, "axes"), rank)
            if ctx.has_input(3)
            else list(range(rank))
        )
    if len(pads) != 2 * len(axes):
        raise ctx.error(f"pads {pads} must hold 2 values for each of {len(axes)} axes")
    low, high = [0] * rank, [0] * rank
    for n, axis in enumerate(axes):
        low[axis], high[axis] = pads[n], pads[n + len(axes)]
    return mode, low, high, value


def _pad_value(ctx: NodeContext) -> float:
    if not ctx.has_input(2):
        return 0.0
    value = ctx.known(2)
    if value is None:
        raise ctx.error(
            f"the constant value (input '{ctx.input_name(2)}') must be known at import time"
        )
    if value.size != 1:
        raise ctx.error(f"the constant value must be a scalar, got shape {list(value.shape)}")
    return float(value.reshape(()))


# -- gather, shape, expand --------------------------------------------------------


def convert_gather(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Gather along `axis` (numpy `take`; negative indices count from the end).
    Known indices become an i64 constant operand of `graph.gather`."""
    shape = input_shape(ctx, 0)
    axis = normalize_axis(ctx, int(ctx.attr("axis", 0)), len(shape))
    indices = ctx.known(1)
    if indices is not None:
        if indices.dtype.kind not in "iu":
            raise ctx.error(f"indices must be integers, got {indices.dtype}")
        size = shape[axis]
        if indices.size and (indices.min() < -size or indices.max() >= size):
            raise ctx.error(f"indices out of range [{-size}, {size}) for axis {axis}")
        indices = np.where(indices < 0, indices + size, indices).astype(np.int64)
    data = _data(ctx)
    if isinstance(data, np.ndarray) and indices is not None:
        return [np.asarray(np.take(data, indices, axis=axis))]
    if isinstance(data, np.ndarray):
        data = _constant(ctx, data, ctx.input_name(0))
    if indices is not None:
        index_operand = _constant(ctx, indices, ctx.input_name(1))
    else:
        index_operand = ctx.operand(1)
    return [ctx.emit(graph.GatherOp(data, index_operand, axis)).results[0]]


def _constant(ctx: NodeContext, array: np.ndarray, name: str) -> SSAValue:
    """A graph.constant of `array` with its own element type."""
    op = ctx.emit(graph.ConstantOp.from_array(array))
    op.results[0].name_hint = ssa_name(name)
    return op.results[0]


def convert_shape(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Shape: the static shape as an int64 array (start/end select a range of
    dimensions, clamped to the rank)."""
    shape = input_shape(ctx, 0)
    rank = len(shape)

    def clamp(bound: int) -> int:
        bound = bound + rank if bound < 0 else bound
        return min(max(bound, 0), rank)

    start = clamp(int(ctx.attr("start", 0)))
    end = clamp(int(ctx.attr("end", rank)))
    return [np.array(shape[start:end], dtype=np.int64)]


def convert_size(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Size: the static number of elements, an int64 scalar."""
    return [np.array(int(np.prod(input_shape(ctx, 0), dtype=np.int64)), dtype=np.int64)]


def convert_expand(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Expand: numpy broadcasting of the input with the given shape."""
    source = input_shape(ctx, 0)
    like = None
    computed = shape_values.broadcast_target(ctx, source, ctx.run_time_dims)
    if computed is not None:
        # a shape computed from run-time sizes: those the input has 1 for are given by
        # a tensor of them (`like`)
        shape, needs = computed
        shape = tuple(DYNAMIC_INDEX if size == -1 else size for size in shape)
        if needs:
            assert ctx.run_time_dims is not None
            like = shape_values.like_for(ctx, needs, len(shape), ctx.run_time_dims)
    else:
        shape = ctx.broadcast(source, int_list_input(ctx, 1, "the shape"))
    x = _data(ctx)
    if isinstance(x, np.ndarray):
        if like is None:
            return [np.broadcast_to(x, shape).copy()]
        x = _constant(ctx, np.require(x, requirements="C"), ctx.input_name(0))
    if shape == tuple(source):
        return [x]
    return [ctx.emit(graph.BroadcastToOp(x, shape, like)).results[0]]


# -- identity and dropout ---------------------------------------------------------


def convert_identity(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Identity -> graph.identity (graph simplification removes it). Of a static
    sequence it is the same list of values, of an absent optional None (`sequences`):

        Identity(x: seq(float) of 2)  ->  [%x_0, %x_1]
    """
    value = ctx.static_value(0)
    if value is None or isinstance(value, list):
        return [value]
    x = _data(ctx)
    if isinstance(x, np.ndarray):
        return [x]
    return [ctx.emit(graph.IdentityOp(x)).results[0]]


DROPOUT_DEFAULT_SEED = 0
"""The seed of a training-mode Dropout's mask when the node sets no `seed` attribute
(the seed ONNX's reference outputs use)."""


def convert_dropout(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Dropout -> graph.dropout at inference, a product with a constant mask in
    training mode; the mask output is the all-true or the drawn mask.

    ONNX leaves a training-mode Dropout's random generator unspecified. strato draws
    the mask once, at compile time, from numpy's MT19937 seeded with the node's `seed`
    (`DROPOUT_DEFAULT_SEED` when absent), as ONNX's reference outputs are drawn:

        mask = np.random.RandomState(seed).uniform(0, 1, x.shape) >= ratio
        y = x * mask / (1 - ratio)

    The draws depend only on the seed and the shape, so every call of a compiled model
    applies the same mask. The ratio and training_mode must be known at compile time
    (`IMPORT_TIME_INPUTS`); with ratio 0 or at inference Dropout is the identity.

        Dropout(x: float[3, 4], r=0.5, t=true, seed=3)
            ->  %y = graph.mul %x, %scaled_mask : (...) -> tensor<3x4xf32>
    """
    ratio = _dropout_ratio(ctx)
    training = _dropout_training(ctx)
    if training and ratio is None:
        raise ctx.error(
            f"the ratio (input '{ctx.input_name(1)}') of a training-mode Dropout must be "
            "known at compile time"
        )
    if ratio is not None and not 0.0 <= ratio < 1.0:
        raise ctx.error(f"ratio {ratio:g} is not in [0, 1)")
    x = _data(ctx)
    if training and ratio:
        mask, y = _training_dropout(ctx, x, ratio)
    else:
        mask = np.ones(input_shape(ctx, 0), dtype=np.bool_)
        if isinstance(x, np.ndarray):
            y = x
        else:
            y = ctx.emit(graph.DropoutOp(x, ratio)).results[0]
    results = [y]
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        results.append(mask)
    return results


def _training_dropout(
    ctx: NodeContext, x: ImportedValue, ratio: float
) -> tuple[np.ndarray, ImportedValue]:
    """The mask drawn at compile time and `x` times the mask scaled by 1 / (1 - ratio)."""
    seed = ctx.attr("seed", DROPOUT_DEFAULT_SEED)
    if not 0 <= seed < 2**32:  # MT19937 takes 32-bit seeds
        raise ctx.error(f"attribute seed={seed} is not in [0, 2**32)")
    shape = input_shape(ctx, 0)
    draws = np.random.RandomState(seed).uniform(0.0, 1.0, shape)
    mask = draws >= ratio
    dtype = x.dtype if isinstance(x, np.ndarray) else _dtype_of(x)
    one = dtype.type(1)
    factor = mask.astype(dtype) * (one / (one - dtype.type(ratio)))
    if isinstance(x, np.ndarray):
        return mask, np.asarray(x * factor, dtype=dtype)
    element = x.type.element_type
    if is_bit_pattern_float(element):
        # Stage bodies hold these formats as bit patterns, which no product takes: the
        # product is taken in f32 and rounded back.
        factor32 = mask.astype(np.float32) * np.float32(1.0 / (1.0 - float(dtype.type(ratio))))
        wide = ctx.emit(graph.CastOp(x, f32)).results[0]
        wide_mask = ctx.materialize(factor32, name_hint="dropout_mask")
        product = ctx.emit(graph.MulOp(wide, wide_mask)).results[0]
        return mask, ctx.emit(graph.CastOp(product, element)).results[0]
    scaled_mask = ctx.materialize(np.asarray(factor, dtype=dtype), name_hint="dropout_mask")
    return mask, ctx.emit(graph.MulOp(x, scaled_mask)).results[0]


def _dtype_of(value: SSAValue) -> np.dtype:
    from strato.dialects.tensor_types import numpy_dtype

    return numpy_dtype(value.type.element_type)


def _dropout_ratio(ctx: NodeContext) -> float | None:
    if ctx.has_attr("ratio"):  # opset < 12
        return float(ctx.attr("ratio"))
    if not ctx.has_input(1):
        return 0.5
    ratio = ctx.known(1)
    return None if ratio is None else float(np.asarray(ratio).reshape(()))


def _dropout_training(ctx: NodeContext) -> bool:
    if not ctx.has_input(2):
        return False
    training = ctx.known(2)
    if training is None:
        raise ctx.error(f"training_mode (input '{ctx.input_name(2)}') must be known at import time")
    return bool(np.asarray(training).reshape(()))


# -- gather_elements, scatter_nd, tile ---------------------------------------------


def _index_operand(ctx: NodeContext, index: int, sizes: np.ndarray | int, what: str) -> SSAValue:
    """Integer input `index` as an operand: a known array is range-checked against
    `sizes` and made non-negative (an i64 constant); otherwise the SSA value."""
    indices = ctx.known(index)
    if indices is None:
        operand = ctx.operand(index)
        return operand
    if indices.dtype.kind not in "iu":
        raise ctx.error(f"{what} must be integers, got {indices.dtype}")
    indices = indices.astype(np.int64)
    if indices.size and (np.any(indices < -sizes) or np.any(indices >= sizes)):
        raise ctx.error(f"{what} out of range of the data")
    indices = np.where(indices < 0, indices + sizes, indices)
    return _constant(ctx, np.require(indices, requirements="C"), ctx.input_name(index))


def _data_operand(ctx: NodeContext, index: int = 0) -> SSAValue:
    known = ctx.known(index)
    if known is not None:
        return _constant(ctx, np.require(known, requirements="C"), ctx.input_name(index))
    return ctx.operand(index)


def convert_gather_elements(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX GatherElements along `axis` -> graph.gather_elements (folded when data and
    indices are known)."""
    shape = input_shape(ctx, 0)
    index_shape = input_shape(ctx, 1)
    if not shape:
        raise ctx.error("data must have rank >= 1")
    axis = normalize_axis(ctx, int(ctx.attr("axis", 0)), len(shape))
    if len(index_shape) != len(shape):
        raise ctx.error(
            f"indices of shape {list(index_shape)} must have the rank of the data {list(shape)}"
        )
    if any(n > d for a, (n, d) in enumerate(zip(index_shape, shape)) if a != axis):
        raise ctx.error(
            f"indices of shape {list(index_shape)} exceed the data shape {list(shape)} "
            f"outside axis {axis}"
        )
    data, known_indices = ctx.known(0), ctx.known(1)
    if data is not None and known_indices is not None:
        size = shape[axis]
        if known_indices.size and (
            known_indices.min() < -size or known_indices.max() >= size
        ):
            raise ctx.error(f"indices out of range [{-size}, {size}) for axis {axis}")
        positions = np.where(known_indices < 0, known_indices + size, known_indices)
        return [graph.take_along_axis(data, positions.astype(np.int64), axis)]
    indices = _index_operand(ctx, 1, shape[axis], "indices")
    return [ctx.emit(graph.GatherElementsOp(_data_operand(ctx), indices, axis)).results[0]]


def convert_gather_nd(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX GatherND (batch_dims) -> graph.gather_nd (folded when data and indices are
    known); of positions of run-time sizes into the first axis only, graph.gather."""
    shape = input_shape(ctx, 0)
    index_shape = input_shape(ctx, 1)
    batch = int(ctx.attr("batch_dims", 0))
    if not index_shape or not 0 <= batch < len(index_shape) or batch > len(shape):
        raise ctx.error(
            f"batch_dims={batch} must be below the rank of the indices {list(index_shape)}"
        )
    if tuple(index_shape[:batch]) != tuple(shape[:batch]):
        raise ctx.error(
            f"the batch dimensions of data {list(shape)} and indices {list(index_shape)} differ"
        )
    depth = index_shape[-1]
    if not 1 <= depth <= len(shape) - batch:
        raise ctx.error(
            f"index rows of length {depth} do not fit the {len(shape) - batch} non-batch "
            "dimensions of the data"
        )
    if batch == 0 and depth == 1 and any(size < 0 for size in index_shape) and shape[0] >= 0:
        # rows of a table at positions of run-time sizes (dynamo's rotary tables): a
        # gather along the first axis at the positions without their last axis
        # (graph.gather takes run-time dimensions, graph.gather_nd does not)
        data = _data(ctx)
        if isinstance(data, np.ndarray):
            data = _constant(ctx, data, ctx.input_name(0))
        positions = ctx.emit(graph.ReshapeOp(ctx.operand(1), index_shape[:-1])).results[0]
        return [ctx.emit(graph.GatherOp(data, positions, 0)).results[0]]
    if any(size < 0 for size in (*shape, *index_shape)):
        raise shape_values.StaticShapesOnly(f"{ctx.label} gathers other than rows at run-time sizes")
    sizes = np.array(shape[batch : batch + depth], dtype=np.int64)
    data, known = ctx.known(0), ctx.known(1)
    if data is not None and known is not None:
        rows = _known_rows(ctx, known, sizes).reshape(known.shape)
        return [graph.gather_nd(data, rows, batch)]
    indices = _index_operand(ctx, 1, sizes, "indices")
    return [ctx.emit(graph.GatherNDOp(_data_operand(ctx), indices, batch)).results[0]]


_SCATTER_REDUCTIONS = {r.value: r for r in graph.ScatterReduction}


def convert_scatter_nd(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX ScatterND (reduction none, add, mul, max, min) -> graph.scatter_nd."""
    shape = input_shape(ctx, 0)
    index_shape = input_shape(ctx, 1)
    name = ctx.attr("reduction", "none")
    if name not in _SCATTER_REDUCTIONS:
        raise ctx.error(f"reduction '{name}' is not supported (none, add, mul, max, min)")
    if not index_shape or not 1 <= index_shape[-1] <= len(shape):
        raise ctx.error(
            f"indices of shape {list(index_shape)} must end in a depth between 1 and the "
            f"data rank {len(shape)}"
        )
    depth = index_shape[-1]
    expected = (*index_shape[:-1], *shape[depth:])
    if input_shape(ctx, 2) != expected:
        raise ctx.error(
            f"updates of shape {list(input_shape(ctx, 2))} must have shape {list(expected)}"
        )
    sizes = np.array(shape[:depth], dtype=np.int64)
    reduction = _SCATTER_REDUCTIONS[name]
    known = ctx.known(1)
    if known is not None:
        rows = _known_rows(ctx, known, sizes)
        data, updates = ctx.known(0), ctx.known(2)
        if data is not None and updates is not None:
            return [graph.scatter_nd(data, rows, updates, reduction)]
        if reduction == graph.ScatterReduction.NONE:
            return [_scatter_by_gather(ctx, shape, rows)]
    indices = _index_operand(ctx, 1, sizes, "indices")
    op = graph.ScatterNDOp(_data_operand(ctx, 0), indices, _data_operand(ctx, 2), reduction)
    return [ctx.emit(op).results[0]]


def _known_rows(ctx: NodeContext, indices: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Known ScatterND indices as [n, q] in-range, non-negative rows."""
    if indices.dtype.kind not in "iu":
        raise ctx.error(f"indices must be integers, got {indices.dtype}")
    rows = indices.astype(np.int64).reshape(-1, indices.shape[-1])
    if rows.size and (np.any(rows < -sizes) or np.any(rows >= sizes)):
        raise ctx.error("indices out of range of the data")
    return np.where(rows < 0, rows + sizes, rows)


def _scatter_by_gather(ctx: NodeContext, shape: Sequence[int], rows: np.ndarray) -> ImportedValue:
    """ScatterND with known indices and no reduction, in time linear in the data: which
    row (if any) lands on each position is known at import time, so the result is
    where(hit, gather(updates, row), data), with the last of duplicate rows winning."""
    count, depth = rows.shape
    if count == 0:
        return _data(ctx)
    landing = np.full(shape[:depth], -1, dtype=np.int64)
    landing[tuple(rows.T)] = np.arange(count)
    updates = _reshaped_value(ctx, _data(ctx, 2), (count, *shape[depth:]))
    if isinstance(updates, np.ndarray):
        updates = _constant(ctx, np.require(updates, requirements="C"), ctx.input_name(2))
    positions = _constant(ctx, np.maximum(landing, 0), ctx.input_name(1))
    gathered = ctx.emit(graph.GatherOp(updates, positions, 0)).results[0]
    hit = (landing >= 0).reshape(*landing.shape, *(1,) * (len(shape) - depth))
    condition = _constant(ctx, np.require(hit, requirements="C"), ctx.input_name(1) + "_hit")
    op = graph.WhereOp(condition, gathered, _data_operand(ctx, 0))
    return ctx.emit(op).results[0]


def convert_tile(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Tile: the repeats (known at import time) -> graph.tile; of a tensor of
    run-time dimensions, which it repeats once, the copies joined along each static
    axis (graph.concat)."""
    shape = input_shape(ctx, 0)
    repeats = int_list_input(ctx, 1, "repeats")
    if len(repeats) != len(shape) or any(r < 0 for r in repeats):
        raise ctx.error(
            f"repeats {repeats} must hold one count >= 0 per dimension of the rank-"
            f"{len(shape)} input"
        )
    x = _data(ctx)
    if isinstance(x, np.ndarray):
        return [np.tile(x, repeats)]
    if all(r == 1 for r in repeats):
        return [x]
    if any(size < 0 for size in shape):
        # run-time dimensions, repeated once: the copies along each static axis joined
        # (graph.concat takes run-time dimensions, graph.tile does not)
        if any(r != 1 for r, size in zip(repeats, shape) if size < 0):
            raise shape_values.StaticShapesOnly(f"{ctx.label} repeats a dimension of run-time size")
        for axis, r in enumerate(repeats):
            if r != 1:
                x = ctx.emit(graph.ConcatOp([x] * r, axis)).results[0]
        return [x]
    return [ctx.emit(graph.TileOp(x, repeats)).results[0]]


# -- depth_to_space and space_to_depth ----------------------------------------------


def _permuted(ctx: NodeContext, x: ImportedValue, perm: Sequence[int]) -> ImportedValue:
    if isinstance(x, np.ndarray):
        return np.array(np.transpose(x, perm), order="C")
    return ctx.emit(graph.TransposeOp(x, perm)).results[0]


def _reshaped_value(ctx: NodeContext, x: ImportedValue, shape: Sequence[int]) -> ImportedValue:
    shape = tuple(int(d) for d in shape)
    if isinstance(x, np.ndarray):
        return x.reshape(shape)
    if shape_of(x) == shape:
        return x
    return ctx.emit(graph.ReshapeOp(x, shape)).results[0]


def _block_size(ctx: NodeContext) -> tuple[tuple[int, ...], int]:
    shape = input_shape(ctx, 0)
    if len(shape) != 4:
        raise ctx.error(f"input must have rank 4 (N, C, H, W), got shape {list(shape)}")
    if not ctx.has_attr("blocksize"):
        raise ctx.error("attribute blocksize is required")
    block = int(ctx.attr("blocksize"))
    if block < 1:
        raise ctx.error(f"blocksize {block} must be >= 1")
    return shape, block


def convert_depth_to_space(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX DepthToSpace, as its definition: a reshape to 6 dimensions, a transpose
    (DCR: depth-column-row order, or CRD) and a reshape to [N, C / b^2, H * b, W * b]."""
    (n, c, h, w), b = _block_size(ctx)
    if c % (b * b):
        raise ctx.error(f"{c} channels are not a multiple of blocksize^2 = {b * b}")
    mode = ctx.attr("mode", "DCR")
    if mode == "DCR":
        split, perm = (n, b, b, c // (b * b), h, w), (0, 3, 4, 1, 5, 2)
    elif mode == "CRD":
        split, perm = (n, c // (b * b), b, b, h, w), (0, 1, 4, 2, 5, 3)
    else:
        raise ctx.error(f"mode '{mode}' is not one of DCR, CRD")
    x = _reshaped_value(ctx, _data(ctx), split)
    x = _permuted(ctx, x, perm)
    return [_reshaped_value(ctx, x, (n, c // (b * b), h * b, w * b))]


def convert_space_to_depth(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX SpaceToDepth, as its definition: [N, C, H, W] -> [N, C, H/b, b, W/b, b],
    transposed to [N, b, b, C, H/b, W/b] (DCR, the default) or [N, C, b, b, H/b, W/b]
    (CRD), reshaped to [N, C * b^2, H / b, W / b]."""
    (n, c, h, w), b = _block_size(ctx)
    if h % b or w % b:
        raise ctx.error(f"spatial size {h}x{w} is not a multiple of blocksize {b}")
    perms = {"DCR": (0, 3, 5, 1, 2, 4), "CRD": (0, 1, 3, 5, 2, 4)}
    mode = ctx.attr("mode", "DCR")
    if mode not in perms:
        raise ctx.error(f"mode '{mode}' is not one of DCR, CRD")
    x = _reshaped_value(ctx, _data(ctx), (n, c, h // b, b, w // b, b))
    x = _permuted(ctx, x, perms[mode])
    return [_reshaped_value(ctx, x, (n, c * b * b, h // b, w // b))]


# -- scatter_elements, trilu, one_hot: compositions of the ops above ------------------

_I64 = element_type_of(np.dtype(np.int64))


def convert_scatter_elements(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX ScatterElements (and the older Scatter) along `axis` -> graph.scatter_nd.

    ScatterElements is ScatterND whose index rows are full positions: the update at
    position p of `indices` goes to data[p with p[axis] replaced by indices[p]]. The rows
    are that position tuple, built from the index tensor and, for the other axes, its
    own coordinates (an import-time iota):

        ScatterElements(data: [3, 3], indices: [1, 2], updates: [1, 2], axis=1)
          -> graph.scatter_nd %data, %rows, %updates : rows of shape [1, 2, 2]
    """
    shape = input_shape(ctx, 0)
    index_shape = input_shape(ctx, 1)
    if not shape:
        raise ctx.error("data must have rank >= 1")
    axis = normalize_axis(ctx, int(ctx.attr("axis", 0)), len(shape))
    name = ctx.attr("reduction", "none")
    if name not in _SCATTER_REDUCTIONS:
        raise ctx.error(f"reduction '{name}' is not supported (none, add, mul, max, min)")
    if len(index_shape) != len(shape):
        raise ctx.error(
            f"indices of shape {list(index_shape)} must have the rank of the data {list(shape)}"
        )
    if input_shape(ctx, 2) != index_shape:
        raise ctx.error(
            f"updates of shape {list(input_shape(ctx, 2))} must have the shape of the "
            f"indices {list(index_shape)}"
        )
    if any(n > d for a, (n, d) in enumerate(zip(index_shape, shape)) if a != axis):
        raise ctx.error(
            f"indices of shape {list(index_shape)} exceed the data shape {list(shape)} "
            f"outside axis {axis}"
        )
    reduction = _SCATTER_REDUCTIONS[name]
    coordinates = np.indices(index_shape, dtype=np.int64)
    known = ctx.known(1)
    if known is not None:
        if known.dtype.kind not in "iu":
            raise ctx.error(f"indices must be integers, got {known.dtype}")
        coordinates[axis] = known.astype(np.int64)
        sizes = np.array(shape, dtype=np.int64)
        rows = _known_rows(ctx, np.moveaxis(coordinates, 0, -1), sizes)
        data, updates = ctx.known(0), ctx.known(2)
        if data is not None and updates is not None:
            return [graph.scatter_nd(data, rows, updates, reduction)]
        if reduction == graph.ScatterReduction.NONE:
            return [_scatter_by_gather(ctx, shape, rows)]
        full = rows.reshape(*index_shape, len(shape))
        indices = _constant(ctx, np.require(full, requirements="C"), ctx.input_name(1))
    else:
        indices = _position_rows(ctx, coordinates, axis)
    op = graph.ScatterNDOp(_data_operand(ctx, 0), indices, _data_operand(ctx, 2), reduction)
    return [ctx.emit(op).results[0]]


def _position_rows(ctx: NodeContext, coordinates: np.ndarray, axis: int) -> SSAValue:
    """The [*index_shape, rank] position rows of run-time ScatterElements indices: the
    coordinates of each index, with the index itself (as i64) at `axis`."""
    indices = ctx.operand(1)
    index_type = indices.type.element_type
    i64 = _I64
    if index_type != i64:
        indices = ctx.emit(graph.CastOp(indices, i64)).results[0]
    column_shape = (*coordinates.shape[1:], 1)
    columns: list[SSAValue] = []
    for d in range(coordinates.shape[0]):
        if d == axis:
            columns.append(ctx.emit(graph.ReshapeOp(indices, column_shape)).results[0])
        else:
            iota = np.require(coordinates[d].reshape(column_shape), requirements="C")
            columns.append(_constant(ctx, iota, f"{ctx.input_name(1)}_axis{d}"))
    if len(columns) == 1:
        return columns[0]
    return ctx.emit(graph.ConcatOp(columns, len(column_shape) - 1)).results[0]


def convert_trilu(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Trilu -> graph.where(mask, x, 0), the mask of the kept triangle of the last
    two dimensions known at import time: j - i >= k (upper, the default) or j - i <= k
    (lower), k the optional input 1 (known at import time, default 0)."""
    shape = input_shape(ctx, 0)
    if len(shape) < 2:
        raise ctx.error(f"input must have rank >= 2, got shape {list(shape)}")
    k = 0
    if ctx.has_input(1):
        known = ctx.known(1)
        if known is None:
            raise ctx.error(f"k (input '{ctx.input_name(1)}') must be known at import time")
        if known.dtype.kind not in "iu" or known.size != 1:
            raise ctx.error(f"k must be one integer, got {known.dtype}{list(known.shape)}")
        k = int(known.reshape(()))
    upper = ctx.flag_attr("upper", 1)
    rows, columns = shape[-2:]
    offset = np.arange(columns)[None, :] - np.arange(rows)[:, None]
    keep = offset >= k if upper else offset <= k
    x = _data(ctx)
    if isinstance(x, np.ndarray):
        return [np.where(keep, x, np.zeros((), x.dtype)).astype(x.dtype)]
    if keep.all():
        return [x]
    zero = _constant(ctx, np.zeros((), _dtype_of(x)), "zero")
    mask = _constant(ctx, np.require(keep, requirements="C"), "triangle")
    return [ctx.emit(graph.WhereOp(mask, x, zero)).results[0]]


def convert_one_hot(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX OneHot -> graph.where(equal(indices, iota), on, off): the iota of `depth`
    (known at import time) runs along the new axis `axis`; a negative index counts from
    depth, and an index out of [-depth, depth) gives a row of `off`.

        OneHot(indices: [2], depth=3, values=[off, on], axis=-1) -> [2, 3]
    """
    index_shape = input_shape(ctx, 0)
    rank = len(index_shape) + 1
    axis = normalize_axis(ctx, int(ctx.attr("axis", -1)), rank)
    depth_array = ctx.known(1)
    if depth_array is None:
        raise ctx.error(f"depth (input '{ctx.input_name(1)}') must be known at import time")
    if depth_array.size != 1:
        raise ctx.error(f"depth must be one number, got shape {list(depth_array.shape)}")
    depth = int(depth_array.reshape(()))
    if depth < 1:
        raise ctx.error(f"depth {depth} must be >= 1")
    if input_shape(ctx, 2) != (2,):
        raise ctx.error(f"values must have shape [2] (off, on), got {list(input_shape(ctx, 2))}")
    iota_shape = [1] * rank
    iota_shape[axis] = depth
    iota = np.arange(depth, dtype=np.int64).reshape(iota_shape)
    expanded_shape = list(index_shape)
    expanded_shape.insert(axis, 1)
    indices, values = _data(ctx, 0), _data(ctx, 2)
    if isinstance(indices, np.ndarray):
        # ONNX's reference truncates float indices
        wrapped = _wrapped_indices(indices.astype(np.int64), depth)
        hit = wrapped.reshape(expanded_shape) == iota
        if isinstance(values, np.ndarray):
            return [np.where(hit, values[1], values[0]).astype(values.dtype)]
        condition = _constant(ctx, np.require(hit, requirements="C"), "one_hot")
    else:
        condition = _one_hot_condition(ctx, indices, depth, iota, expanded_shape)
    if isinstance(values, np.ndarray):
        off = _constant(ctx, np.require(values[0], requirements="C"), "off")
        on = _constant(ctx, np.require(values[1], requirements="C"), "on")
    else:
        off = ctx.emit(graph.SliceOp(values, [0], [1], [1])).results[0]
        on = ctx.emit(graph.SliceOp(values, [1], [1], [1])).results[0]
        off = ctx.emit(graph.ReshapeOp(off, ())).results[0]
        on = ctx.emit(graph.ReshapeOp(on, ())).results[0]
    return [ctx.emit(graph.WhereOp(condition, on, off)).results[0]]


def _wrapped_indices(indices: np.ndarray, depth: int) -> np.ndarray:
    return np.where(indices < 0, indices + depth, indices)


def _one_hot_condition(
    ctx: NodeContext, indices: SSAValue, depth: int, iota: np.ndarray, expanded: list[int]
) -> SSAValue:
    """equal(wrapped indices, iota) of run-time indices, computed in i64."""
    i64 = _I64
    if indices.type.element_type != i64:
        indices = ctx.emit(graph.CastOp(indices, i64)).results[0]
    zero = _constant(ctx, np.zeros((), np.int64), "zero")
    depth_value = _constant(ctx, np.array(depth, np.int64), "depth")
    negative = ctx.emit(graph.LessOp(indices, zero)).results[0]
    shifted = ctx.emit(graph.AddOp(indices, depth_value)).results[0]
    wrapped = ctx.emit(graph.WhereOp(negative, shifted, indices)).results[0]
    wrapped = ctx.emit(graph.ReshapeOp(wrapped, expanded)).results[0]
    iota_value = _constant(ctx, np.require(iota, requirements="C"), "iota")
    return ctx.emit(graph.EqualOp(wrapped, iota_value)).results[0]


def convert_reverse_sequence(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX ReverseSequence -> graph.gather_elements along the time axis: batch entry b
    reads time step lens[b] - 1 - t for t < lens[b] and t itself after, a position
    computed from the lengths (run-time values) with an import-time iota, clamped into
    the axis (ONNX requires 1 <= lens[b] <= T; a length past it reads the last step).

        ReverseSequence(x: [T=4, B=2], lens=[2, 4], time_axis=0, batch_axis=1)
            -> graph.gather_elements %x, (where(iota < lens, lens - 1 - iota, iota))
    """
    shape = input_shape(ctx, 0)
    if len(shape) < 2:
        raise ctx.error(f"input of shape {list(shape)} must have rank 2 or more")
    time_axis = int(ctx.attr("time_axis", 0))
    batch_axis = int(ctx.attr("batch_axis", 1))
    if {time_axis, batch_axis} != {0, 1}:
        raise ctx.error(
            f"time_axis {time_axis} and batch_axis {batch_axis} must be 0 and 1, one each"
        )
    steps, batch = shape[time_axis], shape[batch_axis]
    if input_shape(ctx, 1) != (batch,):
        raise ctx.error(
            f"sequence_lens of shape {list(input_shape(ctx, 1))} must be [{batch}], one "
            "length for each batch entry"
        )
    iota_shape, lens_shape = [1] * len(shape), [1] * len(shape)
    iota_shape[time_axis], lens_shape[batch_axis] = steps, batch
    iota = np.arange(steps, dtype=np.int64).reshape(iota_shape)
    known_lens = ctx.known(1)
    if known_lens is not None:
        lens = known_lens.astype(np.int64).reshape(lens_shape)
        positions = np.where(iota < lens, lens - 1 - iota, iota).clip(0, steps - 1)
        positions = np.broadcast_to(positions, shape).astype(np.int64)
        data = ctx.known(0)
        if data is not None:
            return [graph.take_along_axis(data, positions, time_axis)]
        index = _constant(ctx, np.require(positions, requirements="C"), "positions")
        return [ctx.emit(graph.GatherElementsOp(ctx.operand(0), index, time_axis)).results[0]]
    lens_value = ctx.operand(1)
    if lens_value.type.element_type != _I64:
        lens_value = ctx.emit(graph.CastOp(lens_value, _I64)).results[0]
    lens_value = ctx.emit(graph.ReshapeOp(lens_value, lens_shape)).results[0]
    iota_value = _constant(ctx, np.require(iota, requirements="C"), "iota")
    one = _constant(ctx, np.array(1, np.int64), "one")
    last = ctx.emit(graph.SubOp(lens_value, one)).results[0]
    reversed_positions = ctx.emit(graph.SubOp(last, iota_value)).results[0]
    inside = ctx.emit(graph.LessOp(iota_value, lens_value)).results[0]
    positions = ctx.emit(graph.WhereOp(inside, reversed_positions, iota_value)).results[0]
    low = _constant(ctx, np.array(0, np.int64), "zero")
    high = _constant(ctx, np.array(steps - 1, np.int64), "last_step")
    positions = ctx.emit(graph.MaximumOp(positions, low)).results[0]
    positions = ctx.emit(graph.MinimumOp(positions, high)).results[0]
    positions = ctx.emit(graph.BroadcastToOp(positions, shape)).results[0]
    return [ctx.emit(graph.GatherElementsOp(ctx.operand(0), positions, time_axis)).results[0]]


def convert_tensor_scatter(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX TensorScatter (a KV-cache update) -> graph.where(written, gather_elements
    (update, positions), past_cache): cache step s of batch entry b takes update step
    j = s - write_indices[b] (taken modulo the cache length in `circular` mode) when
    0 <= j < the update's length, and keeps the past value otherwise. The write indices
    are run-time values (0 when absent); the step iota is known at import time.

        TensorScatter(past: [B, H, M, D], update: [B, H, L, D], idx: [B], axis=-2)
            -> [B, H, M, D]
    """
    shape, update_shape = input_shape(ctx, 0), input_shape(ctx, 1)
    rank = len(shape)
    if rank < 2:
        raise ctx.error(f"past_cache of shape {list(shape)} must have rank 2 or more")
    axis = normalize_axis(ctx, int(ctx.attr("axis", -2)), rank)
    if axis == 0:
        raise ctx.error("axis must not be the batch axis 0")
    mode = ctx.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise ctx.error(f"mode '{mode}' is not one of linear, circular")
    steps, length = shape[axis], update_shape[axis] if len(update_shape) == rank else -1
    if len(update_shape) != rank or length > steps or any(
        u != p for d, (u, p) in enumerate(zip(update_shape, shape)) if d != axis
    ):
        raise ctx.error(
            f"update of shape {list(update_shape)} must have the shape of past_cache "
            f"{list(shape)} but for at most {steps} steps along axis {axis}"
        )
    if length == 0:
        return [ctx.value(0)]
    batch = shape[0]
    iota_shape, batch_shape = [1] * rank, [1] * rank
    iota_shape[axis], batch_shape[0] = steps, batch
    iota = np.arange(steps, dtype=np.int64).reshape(iota_shape)
    has_indices = ctx.has_input(2)
    if has_indices and input_shape(ctx, 2) != (batch,):
        raise ctx.error(
            f"write_indices of shape {list(input_shape(ctx, 2))} must be [{batch}]"
        )
    known = ctx.known(2) if has_indices else np.zeros(batch, np.int64)
    if known is not None:
        offsets = iota - known.astype(np.int64).reshape(batch_shape)
        if mode == "circular":
            offsets = np.mod(offsets, steps)
        written = np.broadcast_to((offsets >= 0) & (offsets < length), shape)
        positions = np.broadcast_to(offsets.clip(0, length - 1), shape)
        condition = _constant(ctx, np.require(written, requirements="C"), "written")
        index = _constant(ctx, np.require(positions, np.int64, "C"), "positions")
    else:
        condition, index = _scatter_positions(ctx, iota, batch_shape, shape, length, mode)
    update = _data_operand(ctx, 1)
    gathered = ctx.emit(graph.GatherElementsOp(update, index, axis)).results[0]
    past = _data_operand(ctx, 0)
    return [ctx.emit(graph.WhereOp(condition, gathered, past)).results[0]]


def _scatter_positions(
    ctx: NodeContext,
    iota: np.ndarray,
    batch_shape: list[int],
    shape: Sequence[int],
    length: int,
    mode: str,
) -> tuple[SSAValue, SSAValue]:
    """TensorScatter's written mask and update positions from run-time write indices."""
    indices = ctx.operand(2)
    if indices.type.element_type != _I64:
        indices = ctx.emit(graph.CastOp(indices, _I64)).results[0]
    indices = ctx.emit(graph.ReshapeOp(indices, batch_shape)).results[0]
    iota_value = _constant(ctx, np.require(iota, requirements="C"), "iota")
    offsets = ctx.emit(graph.SubOp(iota_value, indices)).results[0]
    if mode == "circular":
        steps = _constant(ctx, np.array(iota.size, np.int64), "steps")
        offsets = ctx.emit(graph.ModOp(offsets, steps)).results[0]
    zero = _constant(ctx, np.array(0, np.int64), "zero")
    limit = _constant(ctx, np.array(length, np.int64), "length")
    last = _constant(ctx, np.array(length - 1, np.int64), "last")
    not_before = ctx.emit(graph.GreaterEqualOp(offsets, zero)).results[0]
    before_end = ctx.emit(graph.LessOp(offsets, limit)).results[0]
    written = ctx.emit(graph.AndOp(not_before, before_end)).results[0]
    positions = ctx.emit(graph.MaximumOp(offsets, zero)).results[0]
    positions = ctx.emit(graph.MinimumOp(positions, last)).results[0]
    written = ctx.emit(graph.BroadcastToOp(written, shape)).results[0]
    positions = ctx.emit(graph.BroadcastToOp(positions, shape)).results[0]
    return written, positions


def convert_compress(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Compress -> graph.gather of the positions where the condition holds: the
    condition decides the result shape, so it must be known at import time (the
    positions become an i64 constant). Without `axis` the input is flattened first; a
    condition shorter than the axis selects nothing past its end.

        Compress(x: [3, 2], condition=[0, 1, 1], axis=0) -> graph.gather %x, [1, 2] -> [2, 2]
    """
    condition = ctx.known(1)
    if condition is None:
        raise ctx.error(
            f"condition (input '{ctx.input_name(1)}') must be known at import time: it "
            "decides the result shape, and strato compiles static shapes"
        )
    if condition.ndim != 1:
        raise ctx.error(f"condition of shape {list(condition.shape)} must be 1-D")
    data = _data(ctx)
    shape = shape_of(data)
    if ctx.has_attr("axis"):
        axis = normalize_axis(ctx, int(ctx.attr("axis")), len(shape))
    else:
        axis, shape = 0, (math.prod(shape),)
        data = _reshaped_value(ctx, data, shape)
    if condition.size > shape[axis]:
        raise ctx.error(
            f"condition of {condition.size} elements is longer than axis {axis} "
            f"({shape[axis]})"
        )
    positions = np.flatnonzero(condition).astype(np.int64)
    if isinstance(data, np.ndarray):
        return [np.asarray(np.take(data, positions, axis=axis))]
    if positions.size == 0:
        empty = list(shape)
        empty[axis] = 0
        return [np.zeros(empty, dtype=_dtype_of(data))]
    index = _constant(ctx, positions, "positions")
    return [ctx.emit(graph.GatherOp(data, index, axis)).results[0]]
