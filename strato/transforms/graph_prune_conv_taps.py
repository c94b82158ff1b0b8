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


@dataclass(frozen=True)
class GraphPruneConvTapsPass(ModulePass):
    """Drop the kernel taps of convolutions that read only padding, for every output."""

    name = "graph-prune-conv-taps"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]:
            for conv in [o for o in function.body.block.ops if isinstance(o, graph.ConvOp)]:
                prune_conv(conv)


__all__ = ["GraphPruneConvTapsPass", "live_taps", "prune_conv"]
