"""conv3d in NCDHW: a register tile of output columns x output-channel vectors.

The output channels are the vector lanes, as in conv2d NCHW's `channel_lanes` form
(conv2d.py), with the depth as one more outer axis of the tile and one more reduction
axis:

    pack w into [ic, kd, kh, kw, c]            (a copy of the weights, once per call,
                                               one vector of output channels at a time)
    for n, c.outer, d, h, w.outer:             (output tiles)
      tile[w, c] = 0                           (cache_write, laid out [.., w, c])
      for ic, kd, kh, kw:                      (the reduction)
        for w.inner (unrolled, `columns`):     one broadcast input per column
          for c.outer (unrolled):
            for c.inner (vectorized):          one weight vector per channel vector
              tile[w, c] += x[n, ic, d*s+kd, h*s+kh, w*s+kw] * w'[ic, kd, kh, kw, c]
      for w.inner:                             (the copy out, once per tile: a loop, not
        out[n, c, d, h, w] = epilogue(tile[w, c])   unrolled; lane by lane)

Up to `accumulators` vectors stay in registers for the whole reduction (16 by default:
14 columns x one vector; R3D-18's 64-channel layer, one thread, 52 ms at 16, 71 ms at
28, two channel vectors of 14 columns, 28 accumulators beside their operands in the 32
registers of AVX-512). The elementwise stages after the convolution (bias, residual
add, ReLU) are folded into the copy out (`fold_epilogue`): no pass over the output
for them.

Before this template conv3d took conv2d.py's rows x columns form, accumulating in the
output itself: as fast on one thread, but 6-10x slower on two threads than on one
for R3D-18's 64-channel layers, whose parallel loop fuses the channel and depth loops
(the tile in a local buffer does not slow down so; why the other form does was not
pinned down).

Output channels that are no multiple of the vector width, and grouped convolutions
(whose input would be a gather across the channel lanes), take conv2d's rows x columns
tile.

A kernel with one tap along rows and columns (R(2+1)D's 3x1x1, a 1x1x1 projection)
reads each reduction step's columns from another plane of the input, far from the
last; its default tile is 7 columns x four channel vectors (28 accumulators), so each
input line read serves four vectors instead of one (`PLANE_TILE`).

Knobs: `vector_width` (lanes), `columns` (output columns per tile), `accumulators`
(most vectors in the tile; both by default `BY_TAPS`: chosen by the kernel's taps),
`rows` (output channels per tile of the fallback), `epilogue` (fold the elementwise stages into the copy out), `pack_by_vectors` (copy the
weights one vector of output channels at a time rather than in their own order).
"""

from __future__ import annotations

from typing import Any

from strato.schedule import Schedule, StageHandle
from strato.schedule.templates.base import (
    Knob,
    ScheduleContext,
    Template,
    is_reduction,
    machine_lanes,
    read_strides,
    spatial_and_reduction_loops,
    stage_kind,
    tile_for_registers,
)
from strato.targets.llvm.templates.conv2d import (
    _channel_lanes_tile,
    _channel_strided_operand,
    channel_shares_input,
)


def schedule_conv3d(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    spatial, reduction = spatial_and_reduction_loops(sch, stage)
    lanes = knobs["vector_width"]
    weights = _channel_strided_operand(sch, stage, spatial)
    if (
        weights is not None
        and reduction
        and lanes > 1
        and spatial[1].extent % lanes == 0
        and _input_broadcasts(sch, stage, spatial[1].axis, weights)
    ):
        columns, accumulators = knobs["columns"], knobs["accumulators"]
        if BY_TAPS in (columns, accumulators):
            planes = _reads_whole_planes(sch, stage, weights, [loop.axis for loop in reduction])
            tile = PLANE_TILE if planes else WINDOW_TILE
            columns = tile[0] if columns == BY_TAPS else columns
            accumulators = tile[1] if accumulators == BY_TAPS else accumulators
        _channel_lanes_tile(
            sch, stage, weights, lanes, columns, accumulators,
            epilogue=knobs["epilogue"], pack_by_vectors=knobs["pack_by_vectors"],
            unroll_copy=False,
        )
        return
    tile_for_registers(sch, stage, spatial[-1].axis, spatial[1].axis, lanes, knobs["rows"])


def _reads_whole_planes(
    sch: Schedule, stage: StageHandle, weights: str, reduction: list[str]
) -> bool:
    """Whether no reduction step moves within a plane [h, w] of the input: the kernel
    has one tap along rows and columns (3x1x1, 1x1x1), so each step of the reduction
    reads its columns from another plane."""
    output = sch.state.buffers[sch.state.stage(stage.name).buffer].name
    extents = {loop.axis: loop.extent for loop in sch.get_loops(stage)}
    shapes = {info.name: info.logical_shape for info in sch.state.buffers}
    for name, strides in read_strides(sch, stage).items():
        shape = shapes.get(name, ())
        if name in (output, weights) or len(shape) < 3:
            continue
        plane = shape[-1] * shape[-2]
        for axis in reduction:
            stride = strides.get(axis)
            if extents.get(axis, 1) > 1 and (stride is None or 0 < stride < plane):
                return False
    return True


def _input_broadcasts(sch: Schedule, stage: StageHandle, channel: str, weights: str) -> bool:
    """Whether the input is the same for every output channel (groups = 1), so that a
    column's input value is one broadcast for all the channel lanes; a grouped
    convolution's input channel follows the output channel's group (a gather)."""
    output = sch.state.buffers[sch.state.stage(stage.name).buffer].name
    return all(
        strides.get(channel) == 0
        for name, strides in read_strides(sch, stage).items()
        if name not in (output, weights)
    )


def is_conv3d(sch: Schedule, stage: StageHandle) -> bool:
    """A regular (not depthwise or grouped) convolution over [n, c, d, h, w]."""
    if not is_reduction(sch, stage) or stage_kind(stage) != "conv":
        return False
    spatial, _ = spatial_and_reduction_loops(sch, stage)
    return len(spatial) == 5 and not channel_shares_input(sch, stage)


BY_TAPS = 0
"""The default of `columns` and `accumulators`: chosen by the kernel's taps."""
WINDOW_TILE = (14, 16)
"""(columns, accumulators) of a kernel with taps along rows or columns (3x3x3, 1x3x3)."""
PLANE_TILE = (7, 28)
"""(columns, accumulators) of a kernel with none (3x1x1, 1x1x1): each reduction step
reads a new plane of the input, so a tile of four channel vectors reads it once for
all four. R(2+1)D's 144 -> 64 channel 3x1x1 convolution over 8x56x56, one thread:
34.5 ms at (14, 16), 15.9 ms at (7, 28); 3x3x3 over the same: 55.6 against 58.1 ms."""

CONV3D = Template(
    "conv3d_ncdhw",
    (
        Knob("vector_width", (4, 8, 16, 32, 64), machine_lanes),
        Knob("columns", (BY_TAPS, 1, 2, 4, 7, 8, 14), BY_TAPS),
        Knob("accumulators", (BY_TAPS, 8, 14, 16, 24, 28), BY_TAPS),
        Knob("rows", (1, 2, 4, 6, 8, 12, 16, 24), 24),
        Knob("epilogue", (False, True), True),
        Knob("pack_by_vectors", (False, True), True),
    ),
    is_conv3d,
    schedule_conv3d,
)
