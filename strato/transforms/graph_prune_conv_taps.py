"""graph-prune-conv-taps: drop the kernel taps of a convolution that read only padding.

A tap k of a spatial dimension reads input position o * stride + k * dilation - pad_begin
for the outputs o = 0 .. O-1. When that range lies wholly in the padding (below 0 or
past the input's size) for every output, the tap multiplies zeros only: its weights
are dead. The taps that read the input form one contiguous range [first, last] (the
positions move with k), so the convolution keeps that slice of its constant weight and
its padding shrinks by the dilated taps dropped on each side, which keeps the output
size:

    pad_begin' = pad_begin - first * dilation
    pad_end'   = pad_end - (K - 1 - last) * dilation

A dimension left with one tap gets dilation 1 (it no longer matters). Atrous
convolutions are where this pays: DeepLabV3's ASPP convolves a 14x14 feature map with
3x3 kernels dilated 24 and 36, whose eight outer taps all land in the 24- or 36-wide
padding, so each becomes a 1x1 convolution without padding (9x fewer multiply-adds and
no padded copy of the input).

Where different outputs read the input with different taps (DeepLabV3's convolution
dilated 12 over a 14x14 map: the first two rows read it with the middle and last row of
taps, the next ten with the middle row only, the last two with the first and middle
rows), the 2-D convolution is instead split into regions of outputs that read it with
the same taps (a dilated convolution only, at most 3x3 regions, and only when that at
least halves the multiply-adds): one convolution each, over the `graph.slice` of the input it reads,
with only its live taps and the padding it still needs, joined by `graph.concat` along
H and W (the dilated-12 convolution: 5.4x fewer multiply-adds). Outputs that read only
padding leave the convolution whole.

A dimension is pruned only when every tap dropped is dead and the new paddings are not
negative (a convolution with no live tap at all, whose output is its bias, is left as it
is). Only `graph.conv` ops with a constant weight change. Run it after constants are
folded (a batch norm folded into the weight) and before graph-alter-layout.

Requires: functions of graph ops. Leaves illegal: nothing.

Before:

    %w = graph.constant dense<...> : tensor<8x8x3x3xf32>
    %y = graph.conv %x, %w strides [1, 1] padding [6, 6, 6, 6] dilations [6, 6] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>

After:

    %w = graph.constant dense<...> : tensor<8x8x1x1xf32>
    %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from strato.dialects import graph
from strato.dialects.graph import static_shape
from strato.dialects.tensor_types import array_from_dense, dense_from_array


@dataclass(frozen=True)
class TapRange:
    """The live taps [first, last] of one spatial dimension and its new window."""

    first: int
    last: int
    pad_begin: int
    pad_end: int
    dilation: int


def live_taps(
    size: int, outputs: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int
) -> TapRange | None:
    """The taps of one spatial dimension that read the input for some output, with the
    padding that keeps the output size; None when no tap is dead, none is live, or the
    new padding would be negative."""
    last_output = (outputs - 1) * stride

    def live(tap: int) -> bool:
        low = tap * dilation - pad_begin
        return low + last_output >= 0 and low < size

    taps = [tap for tap in range(kernel) if live(tap)]
    if not taps or len(taps) == kernel:
        return None
    first, last = taps[0], taps[-1]
    new_begin = pad_begin - first * dilation
    new_end = pad_end - (kernel - 1 - last) * dilation
    if new_begin < 0 or new_end < 0:
        return None
    return TapRange(first, last, new_begin, new_end, dilation if first < last else 1)


def prune_conv(op: graph.ConvOp) -> bool:
    """Replace `op` by a convolution over its live taps; whether it did."""
    weight = op.weight.owner
    if not isinstance(weight, graph.ConstantOp):
        return False
    x, w = static_shape(op.input), static_shape(op.weight)
    out = static_shape(op.result)
    rank = len(x) - 2
    begins, ends = op.pads_begin, op.pads_end
    strides, dilations = op.stride_values, op.dilation_values
    ranges = [
        live_taps(x[2 + d], out[2 + d], w[2 + d], strides[d], dilations[d], begins[d], ends[d])
        for d in range(rank)
    ]
    if all(r is None for r in ranges):
        return False
    windows = [slice(None), slice(None)]
    new_begins, new_ends, new_dilations = list(begins), list(ends), list(dilations)
    for d, taps in enumerate(ranges):
        if taps is None:
            windows.append(slice(None))
            continue
        windows.append(slice(taps.first, taps.last + 1))
        new_begins[d], new_ends[d], new_dilations[d] = taps.pad_begin, taps.pad_end, taps.dilation
    array = array_from_dense(weight.value)[tuple(windows)]
    assert isinstance(op.weight.type, TensorType)
    constant = graph.ConstantOp(dense_from_array(array.copy(), op.weight.type.element_type))
    constant.result.name_hint = op.weight.name_hint
    Rewriter.insert_op(constant, InsertPoint.before(op))
    pruned = graph.ConvOp(
        op.input,
        constant.result,
        op.bias,
        strides=strides,
        padding=(*new_begins, *new_ends),
        dilations=new_dilations,
        groups=op.group_count,
    )
    pruned.attributes.update(op.attributes)
    pruned.result.name_hint = op.result.name_hint
    Rewriter.replace_op(op, pruned)
    if not weight.result.uses:
        Rewriter.erase_op(weight)
    return True


def live_range(
    output: int, size: int, kernel: int, stride: int, dilation: int, pad_begin: int
) -> tuple[int, int] | None:
    """The taps [first, last] output position `output` reads the input with (None: it
    reads only padding)."""
    low = output * stride - pad_begin
    taps = [k for k in range(kernel) if 0 <= low + k * dilation < size]
    return (taps[0], taps[-1]) if taps else None


def output_bands(
    size: int, outputs: int, kernel: int, stride: int, dilation: int, pad_begin: int
) -> list[tuple[int, int, int]]:
    """The output positions [start, stop) that read the input with the same taps, in
    order, each with its number of live taps."""
    bands: list[tuple[int, int, int]] = []
    previous = None
    for o in range(outputs):
        taps = live_range(o, size, kernel, stride, dilation, pad_begin)
        if bands and taps == previous:
            start, _, count = bands[-1]
            bands[-1] = (start, o + 1, count)
        else:
            count = 0 if taps is None else taps[1] - taps[0] + 1
            bands.append((o, o + 1, count))
        previous = taps
    return bands


MOST_REGIONS = 9
"""The most convolutions one convolution is split into."""


@dataclass(frozen=True)
class RegionWindow:
    """How one band of outputs of one spatial dimension reads the input: the input rows
    [start, stop) it slices, its padding and its live taps [first, last]."""

    start: int
    stop: int
    pad_begin: int
    pad_end: int
    first: int
    last: int


def region_window(
    band: tuple[int, int], size: int, kernel: int, stride: int, dilation: int, pad_begin: int
) -> RegionWindow | None:
    """The window of the outputs [band) (which read the input with the same taps); None
    when they read only padding."""
    taps = live_range(band[0], size, kernel, stride, dilation, pad_begin)
    if taps is None:
        return None
    first, last = taps
    low = band[0] * stride - pad_begin + first * dilation
    high = (band[1] - 1) * stride - pad_begin + last * dilation
    return RegionWindow(
        max(low, 0), min(high, size - 1) + 1, max(-low, 0), max(high - size + 1, 0), first, last
    )


def split_into_regions(op: graph.ConvOp) -> list[graph.ConvOp] | None:
    """Split a 2-D convolution whose outputs read the input with different taps in
    different regions (a wide dilation over a small map: most outputs read most taps in
    the padding) into one convolution per region over the slice of the input it reads,
    with only its live taps, joined by concatenations, when that at least halves the
    multiply-adds; the new convolutions, or None."""
    x, w = static_shape(op.input), static_shape(op.weight)
    out = static_shape(op.result)
    weight = op.weight.owner
    if len(x) != 4 or not isinstance(weight, graph.ConstantOp):
        return None
    if all(d == 1 for d in op.dilation_values):
        return None  # only border outputs miss taps: on a map small enough for that to
        # halve the work, the regions' kernels would cost more than they save
    begins = op.pads_begin
    strides, dilations = op.stride_values, op.dilation_values
    bands = [
        output_bands(x[2 + d], out[2 + d], w[2 + d], strides[d], dilations[d], begins[d])
        for d in range(2)
    ]
    regions = len(bands[0]) * len(bands[1])
    if regions > MOST_REGIONS or regions == 1:
        return None
    work = sum(
        (r1 - r0) * (c1 - c0) * rows * columns
        for r0, r1, rows in bands[0]
        for c0, c1, columns in bands[1]
    )
    if 2 * work > out[2] * out[3] * w[2] * w[3]:
        return None
    windows: list[list[RegionWindow]] = [[], []]
    for d in range(2):
        for start, stop, _ in bands[d]:
            window = region_window(
                (start, stop), x[2 + d], w[2 + d], strides[d], dilations[d], begins[d]
            )
            if window is None:
                return None  # outputs that read only padding: left whole
            windows[d].append(window)
    weights = array_from_dense(weight.value)
    assert isinstance(op.weight.type, TensorType)
    element = op.weight.type.element_type
    convs: list[graph.ConvOp] = []
    rows: list[SSAValue] = []
    for top in windows[0]:
        columns: list[SSAValue] = []
        for left in windows[1]:
            conv = _region_conv(op, top, left, weights, element)
            convs.append(conv)
            columns.append(conv.result)
        rows.append(_joined(columns, 3, op))
    joined = _joined(rows, 2, op)
    joined.name_hint = op.result.name_hint
    op.result.replace_all_uses_with(joined)
    Rewriter.erase_op(op)
    if not weight.result.uses:
        Rewriter.erase_op(weight)
    return convs


def _region_conv(
    op: graph.ConvOp, top: RegionWindow, left: RegionWindow, weights, element
) -> graph.ConvOp:
    """The convolution of one region: its slice of the input, its taps, its padding."""
    x = static_shape(op.input)
    source = op.input
    if (top.start, top.stop, left.start, left.stop) != (0, x[2], 0, x[3]):
        shape = (x[0], x[1], top.stop - top.start, left.stop - left.start)
        window = graph.SliceOp(source, (0, 0, top.start, left.start), (1, 1, 1, 1), shape)
        Rewriter.insert_op(window, InsertPoint.before(op))
        source = window.result
    taps = weights[:, :, top.first : top.last + 1, left.first : left.last + 1]
    constant = graph.ConstantOp(dense_from_array(taps.copy(), element))
    constant.result.name_hint = op.weight.name_hint
    Rewriter.insert_op(constant, InsertPoint.before(op))
    dilations = op.dilation_values
    conv = graph.ConvOp(
        source,
        constant.result,
        op.bias,
        strides=op.stride_values,
        padding=(top.pad_begin, left.pad_begin, top.pad_end, left.pad_end),
        dilations=(
            dilations[0] if top.first < top.last else 1,
            dilations[1] if left.first < left.last else 1,
        ),
        groups=op.group_count,
    )
    conv.attributes.update(op.attributes)
    Rewriter.insert_op(conv, InsertPoint.before(op))
    return conv


def _joined(values: list[SSAValue], axis: int, before: Operation) -> SSAValue:
    if len(values) == 1:
        return values[0]
    concat = graph.ConcatOp(values, axis)
    Rewriter.insert_op(concat, InsertPoint.before(before))
    return concat.result


@dataclass(frozen=True)
class GraphPruneConvTapsPass(ModulePass):
    """Drop the kernel taps of convolutions that read only padding, for every output."""

    name = "graph-prune-conv-taps"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]:
            for conv in [o for o in function.body.block.ops if isinstance(o, graph.ConvOp)]:
                if split_into_regions(conv) is None:
                    prune_conv(conv)


__all__ = [
    "GraphPruneConvTapsPass",
    "live_taps",
    "output_bands",
    "prune_conv",
    "region_window",
    "split_into_regions",
]
