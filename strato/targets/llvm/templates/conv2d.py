"""conv2d in NCHW: a register tile of output columns x output-channel vectors.

With `channel_lanes` (the default, when the weights move with the output channel and
the channels fill whole vectors) the output channels are the vector lanes:

    pack w into [ic, kh, kw, c]                (a copy of the weights, once per call)
    for n, c.outer, h, w.outer:                (output tiles)
      tile[w, c] = 0                           (cache_write, laid out [.., w, c])
      for ic, kh, kw:                          (the reduction)
        for w.inner (unrolled, `columns`):     one broadcast input per column, at any
          for c.outer (unrolled):              stride: never a gather
            for c.inner (vectorized):          one weight vector per channel vector
              tile[w, c] += x[n, ic, h*s+kh, w*s+kw] * w'[ic, kh, kw, c]
      out[n, c, h, w] = tile[w, c]             (lane by lane, once per tile)

Up to `accumulators` vectors stay in registers for the whole reduction (the first
convolution of an image network, 3 input channels and a 7x7 window at stride 2, runs
at onnxruntime's speed this way instead of half of it with the gathers below).

Otherwise (`channel_lanes` off, or channels not a multiple of the vector width):

    for n, c.outer, h, w.outer:
      for ic, kh, kw:                          (the reduction)
        for c.inner (unrolled, `rows`):        one broadcast weight per row
          for w.inner (vectorized, `lanes`):   one input vector shared by all rows
            out[n, c, h, w] += x[n, ic, h*s+kh, w*s+kw] * w[c, ic, kh, kw]

The rows x lanes accumulators stay in registers for the whole reduction. A stride
makes the input loads gathers; they are still shared by the rows.

Knobs: `vector_width` (lanes), `rows` (output channels per tile, second form),
`channel_lanes`, `columns` (output columns per tile, first form), `accumulators`.
"""

from __future__ import annotations

from typing import Any

from strato.schedule import Schedule, StageHandle
from strato.schedule.templates.base import (
    Knob,
    ScheduleContext,
    Template,
    fit,
    is_reduction,
    machine_lanes,
    read_strides,
    spatial_and_reduction_loops,
    stage_kind,
    tile_for_registers,
    vectorize_innermost,
)
from strato.targets.llvm.templates.conv2d_nchwc import fold_epilogue


def channel_shares_input(sch: Schedule, stage: StageHandle) -> bool:
    """Whether the input read along the output row also moves with the output channel
    (a depthwise or grouped convolution: no input reuse across channels)."""
    spatial, _ = spatial_and_reduction_loops(sch, stage)
    if len(spatial) < 4:
        return True
    channel, column = spatial[1].axis, spatial[-1].axis
    output = sch.state.buffers[sch.state.stage(stage.name).buffer].name
    for name, strides in read_strides(sch, stage).items():
        if name == output:
            continue
        if strides.get(column) not in (0, None) and strides.get(channel) not in (0,):
            return True
    return False


def schedule_conv2d(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    spatial, reduction = spatial_and_reduction_loops(sch, stage)
    if len(spatial) < 2:
        return
    lanes = knobs["vector_width"]
    weights = _channel_strided_operand(sch, stage, spatial) if len(spatial) == 4 else None
    if (
        knobs["channel_lanes"]
        and weights is not None
        and len(reduction) == 3
        and lanes > 1
        and spatial[1].extent % lanes == 0
    ):
        _channel_lanes_tile(sch, stage, weights, lanes, knobs["columns"], knobs["accumulators"])
        return
    rows_axis = spatial[1].axis if len(spatial) >= 4 else None
    tile_for_registers(sch, stage, spatial[-1].axis, rows_axis, lanes, knobs["rows"])


def _channel_strided_operand(sch: Schedule, stage: StageHandle, spatial) -> str | None:
    """The weights: the operand that moves with the output channel."""
    output = sch.state.buffers[sch.state.stage(stage.name).buffer].name
    channel = spatial[1].axis
    for name, strides in read_strides(sch, stage).items():
        if name != output and strides.get(channel) not in (0, None):
            return name
    return None


def _channel_lanes_tile(
    sch: Schedule,
    stage: StageHandle,
    weights: str,
    lanes: int,
    columns: int,
    accumulators: int,
    epilogue: bool = False,
    pack_by_vectors: bool = False,
    unroll_copy: bool = True,
) -> StageHandle:
    """Output channels as the vector lanes: a tile of `columns` output columns x a few
    channel vectors accumulated in a local buffer laid out [.., w, c] at the tile loop
    (registers after unrolling); each reduction step broadcasts one input value per
    column and loads one weight vector per channel vector, from a copy of the weights
    laid out [ic, k.., c] (a pass over the weights, small next to the convolution).
    Strided convolutions read the input as broadcasts, never as gathers. Any number of
    spatial axes (conv2d [n, c, h, w], conv3d [n, c, d, h, w]): the ones before the
    row are outer loops of one iteration in the tile. Returns the tile's stage.

    `epilogue`: fold the elementwise stages after the convolution into the tile's copy
    out (`fold_epilogue`). `pack_by_vectors`: copy the weights one vector of output
    channels at a time (`_pack_by_vectors`) instead of in their own order.
    `unroll_copy`: unroll the copy out's columns; off, the copy is a loop over them
    reading the tile back from the stack once per tile, as fast (R3D-18's 64-channel
    layer, one thread) and a third of the LLVM compile time of a kernel whose copy
    applies a residual add and a ReLU."""
    tile = sch.cache_write(stage, "local")
    if epilogue:
        fold_epilogue(sch, stage)
    rank = len(sch.get_loops(stage))
    dims = [f"d{n}" for n in range(rank)]
    channel_last = [dims[0], *dims[2:], dims[1]]
    sch.transform_layout(tile, f"{', '.join(dims)} -> {', '.join(channel_last)}")
    packed = sch.cache_read(tile, weights, "local")
    out_last = [*dims[1:], dims[0]]
    sch.transform_layout(packed, f"{', '.join(dims)} -> {', '.join(out_last)}")
    n, c, *middle, w = sch.get_loops(stage)
    count = fit(w.extent, columns)
    vectors = fit(c.extent // lanes, max(accumulators // count, 1))
    chunk = vectors * lanes
    co, ci = sch.split(c, [None, chunk]) if chunk < c.extent else (None, c)
    wo, wi = sch.split(w, [None, count]) if count < w.extent else (None, w)
    outer = [loop for loop in (n, co, *middle, wo) if loop is not None]
    # the copy out: a vector of channels per column (contiguous in the tile; stored
    # lane by lane, once per tile)
    sch.reorder(*outer, wi, ci)
    if wi.extent > 1 and unroll_copy:
        sch.unroll(sch.get_loop(stage, wi.axis))
    sch.vectorize(sch.get_loop(stage, ci.axis))
    sch.compute_at(tile, outer[-1])
    spatial, reduction = spatial_and_reduction_loops(sch, tile)
    tn, tc, *tmiddle, tw = spatial
    tco, tci = sch.split(tc, [None, lanes]) if lanes < tc.extent else (None, tc)
    channel_loops = [tco] if tco is not None else []
    sch.reorder(tn, *tmiddle, *reduction, tw, *channel_loops, tci)
    for loop in (tw, *channel_loops):
        if loop.extent > 1:
            sch.unroll(sch.get_loop(tile, loop.axis))
    sch.vectorize(sch.get_loop(tile, tci.axis))
    sch.decompose_reduction(tile, sch.get_loop(tile, reduction[0].axis))
    if pack_by_vectors and _pack_by_vectors(sch, packed, lanes):
        return tile
    loops = sch.get_loops(packed)
    if loops:
        vectorize_innermost(sch, packed, loops[-1], lanes)
    return tile


def _pack_by_vectors(sch: Schedule, packed: StageHandle, lanes: int) -> bool:
    """Loop over the weights' copy [ic, k.., c] as (c.outer, ic, k.., c.inner): each
    step stores one whole vector of output channels (a full cache line at 16 lanes)
    read from `lanes` rows of the weights [c, ic, k..], each row read in order, so the
    lines read stay in L1 until all their values are used. In the weights' own order
    a step stores a few values `c` apart and each line of the copy is written in
    pieces far apart in time (R3D-18's 9.4 MB layer-4 weights: most of the layer's
    time). False when the output channels are no multiple of `lanes`."""
    loops = sch.get_loops(packed)
    if len(loops) < 2 or loops[0].extent % lanes or loops[0].extent <= lanes:
        return False
    outer, inner = sch.split(loops[0], [None, lanes])
    rest = sch.get_loops(packed)[2:]
    sch.reorder(outer, *rest, inner)
    sch.vectorize(sch.get_loop(packed, inner.axis))
    return True


CONV2D = Template(
    "conv2d_nchw",
    (
        Knob("vector_width", (4, 8, 16, 32, 64), machine_lanes),
        Knob("rows", (1, 2, 4, 6, 8, 12, 16, 24), 24),
        Knob("channel_lanes", (False, True), True),
        Knob("columns", (1, 2, 4, 7, 8, 14), 14),
        Knob("accumulators", (8, 14, 16, 24, 28), 28),
    ),
    lambda sch, stage: (
        is_reduction(sch, stage)
        and stage_kind(stage) == "conv"
        and not channel_shares_input(sch, stage)
    ),
    schedule_conv2d,
)
