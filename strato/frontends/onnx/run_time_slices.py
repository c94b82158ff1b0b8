"""Slices of a dimension of run-time size padded back to its length, and windows of one
padded longer.

A run-time dimension is a size of the model's inputs (`graph.dims`), or one computed
from them, such as `sequence - 1` (`SizeSum`). Exporters slice such a dimension and
often pad the slice back to the length it had: MobileBERT's trigram input shifts the
embeddings by one token each way,

    left = Pad(Slice(x, starts=[1], ends=[INT_MAX], axes=[1]), pads=[0, 0, 0, 0, 1, 0])
    right = Pad(Slice(x, starts=[0], ends=[-1], axes=[1]), pads=[0, 1, 0, 0, 0, 0])

The slice of a run-time dimension, a `Cropped`, is kept for the Pad that reads it: when
the Pad gives back what the slice took at the other end (constant mode, as many
elements), the two are one shift of the dimension, a `graph.pad` whose pads of that
dimension sum to 0. The model
then takes only sizes of at least what the slice takes (`least`), where the slice is not
empty. Any other op reads the slice as a tensor of its own (`sliced`), of a size
computed from the dimension's (`sequence - 1`).

A Pad that makes a run-time dimension longer, a `Padded`, is kept for a Gather of its
windows, as torch's `unfold` reads it (ConvBERT's span convolution):

    windows = Gather(Pad(x, 4 before and after the sequence),
                     Unsqueeze(Range(0, sequence)) + [[0], [1], .., [8]], axis=sequence)

Window k at position i is x at i + k - 4 (zeros outside): the shift of x by 4 - k, so
the Gather is the shifts stacked along the offsets' dimension (`windows`). Any other op
reads it as a tensor of its own (`padded`), of the size plus the pads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import Operation, SSAValue

from strato.dialects import graph
from strato.dialects.graph.dims import RunTimeDims
from strato.frontends.onnx.shape_values import StaticShapesOnly

END = 2**31 - 1
"""An end at or past this is the end of the dimension (exporters write INT64_MAX)."""


class Cropped:
    """`value` without its first `start` and last `end` elements along `axis`, a
    dimension of run-time size (`x[:, 1:]` is Cropped(x, 1, 1, 0))."""

    def __init__(self, value: SSAValue, axis: int, start: int, end: int):
        self.value = value
        self.axis = axis
        self.start = start
        self.end = end

    @property
    def least(self) -> int:
        """The least size of the dimension for which the slice takes what it says."""
        return self.start + self.end

    def __repr__(self) -> str:
        return f"Cropped({self.value}, axis={self.axis}, start={self.start}, end={self.end})"


def sliced(cropped: Cropped, emit) -> SSAValue:
    """The slice `cropped` keeps, a tensor of its own: its dimension of the size less
    what it drops (`sequence - 1`, `graph.slice` with `drops`)."""
    shape = list(cropped.value.type.get_shape())
    starts, drops = [0] * len(shape), [0] * len(shape)
    starts[cropped.axis], drops[cropped.axis] = cropped.start, cropped.end
    op = graph.SliceOp(cropped.value, starts, [1] * len(shape), shape, drops)
    return emit(op).results[0]


def padded(value: Padded, emit) -> SSAValue:
    """The tensor `value` pads, of its own: its dimension of the size plus the pads
    (`sequence + 8`, `graph.pad` lengthening it)."""
    rank = len(value.value.type.get_shape())
    low, high = [0] * rank, [0] * rank
    low[value.axis], high[value.axis] = value.low, value.high
    op = graph.PadOp(value.value, low, high, graph.PadMode.CONSTANT, value.fill or None)
    return emit(op).results[0]


def _with_tensors(ctx, kind: type, make, suffix: str) -> onnx.NodeProto:
    """The node of `ctx` reading each input of `kind` as the tensor `make` gives."""
    values = {n: ctx.static_value(n) for n, name in enumerate(ctx.node.input) if name}
    return ctx.with_inputs(
        {n: make(value, ctx.emit) for n, value in values.items() if isinstance(value, kind)}, suffix
    )


def sliced_inputs(ctx) -> onnx.NodeProto:
    """The node of `ctx` reading each `Cropped` input as the tensor it keeps (`sliced`)."""
    return _with_tensors(ctx, Cropped, sliced, "sliced")


def padded_inputs(ctx) -> onnx.NodeProto:
    """The node of `ctx` reading each `Padded` input as the tensor it is (`padded`)."""
    return _with_tensors(ctx, Padded, padded, "padded")


def run_time_slice(
    label: str, value: SSAValue, axis: int, start: int, end: int, step: int
) -> Cropped | None:
    """The ONNX slice start:end:step of the run-time dimension `axis` of `value`: None
    when it keeps the whole dimension, a `Cropped` when it drops elements at either
    end; any other slice (a stride, a window of a fixed length, one counted from the
    end) is refused (`StaticShapesOnly`)."""
    if step == 1 and start >= 0 and (end >= END or end < 0):
        dropped = 0 if end >= END else -end
        return None if start == 0 and dropped == 0 else Cropped(value, axis, start, dropped)
    raise StaticShapesOnly(
        f"{label} slices a dimension of run-time size other than by dropping elements "
        "at its ends"
    )


def shifted(
    label: str,
    cropped: Cropped,
    mode: graph.PadMode,
    low: Sequence[int],
    high: Sequence[int],
    value: float,
) -> graph.PadOp | None:
    """The Pad of a `Cropped` (pads `low`, `high` per dimension) as one `graph.pad` of
    the tensor before the slice: a shift of the sliced dimension, when the pads give
    back what the slice took in constant mode; pads of other run-time dimensions must
    be 0, of static ones at least 0. None when the pads of the sliced dimension are
    other constant ones, at least 0 (x[:, 2:] padded by one each side: the slice
    padded, a tensor of the dimension's size less 0)."""
    axis = cropped.axis
    lo, hi = low[axis], high[axis]
    if mode != graph.PadMode.CONSTANT or lo < 0 or hi < 0:
        raise StaticShapesOnly(
            f"{label} pads a slice of a run-time dimension other than by constant pads"
        )
    shape = cropped.value.type.get_shape()  # type: ignore[union-attr]
    for d, (before, after) in enumerate(zip(low, high)):
        if d != axis and (before < 0 or after < 0 or (shape[d] < 0 and (before or after))):
            raise StaticShapesOnly(
                f"{label} pads a slice of a run-time dimension, and dimension {d} by "
                f"({before}, {after}), which changes a run-time size or crops"
            )
    if lo + hi != cropped.least or (lo and cropped.start) or (hi and cropped.end):
        return None
    low, high = list(low), list(high)
    low[axis] -= cropped.start
    high[axis] -= cropped.end
    return graph.PadOp(cropped.value, low, high, mode, value if value != 0.0 else None)


class Padded:
    """`value` padded by `low` zeros (the constant `fill`) before and `high` after along
    `axis`, a dimension of run-time size: kept for a Gather of windows of it
    (`windows`), as torch's `unfold` reads a padded sequence."""

    def __init__(self, value: SSAValue, axis: int, low: int, high: int, fill: float):
        self.value = value
        self.axis = axis
        self.low = low
        self.high = high
        self.fill = fill

    def __repr__(self) -> str:
        return f"Padded({self.value}, axis={self.axis}, low={self.low}, high={self.high})"


def window_offsets(index: SSAValue, padded: Padded, dims: RunTimeDims) -> tuple[int, list[int]] | None:
    """When `index` holds the positions along `padded`'s run-time dimension plus a column
    of offsets (`Range(0, n)` unsqueezed, plus a constant [k, 1] or [1, k]: the windows
    of `unfold`), the dimension of `index` the positions run along and the offsets
    (their order along the other dimension); None otherwise."""
    op = index.owner
    shape = _shape_of(index)
    if not isinstance(op, graph.AddOp) or len(shape) != 2 or DYNAMIC_INDEX not in shape:
        return None
    along = shape.index(DYNAMIC_INDEX)
    for positions, column in (op.operands, reversed(op.operands)):
        source = positions.owner
        if isinstance(source, graph.ReshapeOp):
            source = source.input.owner
        constant = column.owner
        if not isinstance(source, graph.IotaOp) or not isinstance(constant, graph.ConstantOp):
            continue
        like, dim = source.operands[0], source.properties["dim"].value.data  # type: ignore[union-attr]
        offsets = np.asarray(constant.evaluate([])[0])
        # the positions run along `along` alone, the offsets along the other dimension
        expected = [DYNAMIC_INDEX if d == along else 1 for d in range(2)]
        if (
            not dims.same((like, dim), (padded.value, padded.axis))
            or offsets.ndim != 2
            or offsets.shape[along] != 1
            or list(_shape_of(positions)) != expected
        ):
            continue
        offsets = [int(v) for v in offsets.reshape(-1)]
        if any(not 0 <= v <= padded.low + padded.high for v in offsets):
            continue  # positions before the padded start, or past its end
        return along, offsets
    return None


def _shape_of(value: SSAValue) -> tuple[int, ...]:
    return tuple(value.type.get_shape())  # type: ignore[union-attr]


def windows(padded: Padded, along: int, offsets: list[int]) -> list[Operation]:
    """Gather of the windows `offsets` of `padded` (positions along its run-time
    dimension, plus each offset): the shifts of the tensor before the pad by low -
    offset, each a slice of the result, stacked along the offsets' dimension (before
    the positions when `along` is 1, after them when 0). The ops, the last the result."""
    value, axis = padded.value, padded.axis
    shape = list(_shape_of(value))
    ops: list[Operation] = []
    pieces: list[SSAValue] = []
    stacked = axis if along == 1 else axis + 1
    for offset in offsets:
        shift = padded.low - offset
        low, high = [0] * len(shape), [0] * len(shape)
        low[axis], high[axis] = shift, -shift
        piece = value
        if shift:
            ops.append(graph.PadOp(value, low, high, graph.PadMode.CONSTANT, padded.fill or None))
            piece = ops[-1].results[0]
        ops.append(graph.ReshapeOp(piece, [*shape[:stacked], 1, *shape[stacked:]]))
        pieces.append(ops[-1].results[0])
    if len(pieces) > 1:
        ops.append(graph.ConcatOp(pieces, stacked))
    return ops


__all__ = ["END", "Cropped", "Padded", "run_time_slice", "shifted", "window_offsets", "windows"]
