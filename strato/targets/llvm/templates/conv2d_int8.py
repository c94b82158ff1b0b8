"""Integer conv2d (graph.qconv, NCHW, uint8 input x int8 weights -> int32): a register
tile of output columns x output-channel vectors updated by the int8 dot product
`cpu.dot_i8` (vpdpbusd where the CPU has VNNI):

    pad x into [n, h, w, c]                     (the pad stage laid out channels last)
    pack w into [kh, kw, c / 4, m, c % 4]       (unless graph.qconv's weight is packed:
                                                 graph-fold-qdq packs constants once)
    for n, m.outer, h, w.outer:                 (output tiles)
      tile[w, m] = 0                            (cache_write, laid out [.., w, m])
      for kh, kw, c.outer:                      (the reduction, 4 channels a step)
        for w.inner (unrolled, `columns`):      four input bytes broadcast per column
          for m.vector (unrolled):              one weight vector per channel vector
            cpu.dot_i8.<L>x4                    tile[w, m:m+L] += x[.., c:c+4] . w[.., m:m+L, :]
      out[n, m, h, w] = epilogue(tile[w, m])    (bias, requantization folded in)

It needs the input channels (per group) a multiple of 4 and the output channels a
multiple of the lanes L, one group; other integer convolutions are scheduled as any
reduction.

Knobs: `columns` (output columns per tile), `accumulators` (vectors in the tile).
"""

from __future__ import annotations

from typing import Any

from strato.schedule import Schedule, ScheduleError, StageHandle
from strato.schedule.templates.base import (
    Knob,
    ScheduleContext,
    Template,
    fit,
    is_reduction,
    read_strides,
    spatial_and_reduction_loops,
    stage_kind,
    vectorize_innermost,
)
from strato.targets.llvm.dot_i8 import DEPTH, dot_i8_lanes, dot_i8_name
from strato.targets.llvm.templates.conv2d_nchwc import fold_epilogue
from strato.targets.llvm.templates.reduction import REDUCTION, schedule_reduction


def schedule_conv2d_int8(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    lanes, vnni = dot_i8_lanes(set(context.features), context.lanes)
    spatial, reduction = spatial_and_reduction_loops(sch, stage)
    plan = _operands(sch, stage, spatial, reduction, lanes)
    if plan is None:
        schedule_reduction(sch, stage, REDUCTION.defaults(context), context)
        return
    weights, padded = plan
    _dot_tile(sch, stage, weights, padded, lanes, vnni, knobs)


def _operands(sch: Schedule, stage: StageHandle, spatial, reduction, lanes: int):
    """(weights, the pad stage or input) when the tile applies, else None. The
    reduction is over the channels, then the window's taps of more than one position
    (none for a 1x1 kernel)."""
    if len(spatial) != 4 or not 1 <= len(reduction) <= 4 or spatial[1].extent % lanes:
        return None
    packed = len(reduction) == 4
    if packed and reduction[1].extent != DEPTH:
        return None
    if not packed and reduction[0].extent % DEPTH:
        return None
    output = sch.state.buffers[sch.state.stage(stage.name).buffer].name
    channel = spatial[1].axis
    weights = padded = None
    for name, strides in read_strides(sch, stage).items():
        if name == output:
            continue
        if strides.get(channel) not in (0, None):
            weights = name
        else:
            padded = name
    if weights is None or padded is None:
        return None
    return weights, padded


def _dot_tile(
    sch: Schedule,
    stage: StageHandle,
    weights: str,
    padded: str,
    lanes: int,
    vnni: bool,
    knobs: dict[str, Any],
) -> None:
    prepacked = len(spatial_and_reduction_loops(sch, stage)[1]) == 4
    pad = pad_stage_writing(sch, padded)
    if pad is not None:
        sch.transform_layout(pad, "d0, d1, d2, d3 -> d0, d2, d3, d1")
        _channels_innermost(sch, pad, lanes)
    tile = sch.cache_write(stage, "local")
    sch.transform_layout(tile, "d0, d1, d2, d3 -> d0, d2, d3, d1")
    if pad is None:
        copy = sch.cache_read(tile, padded, "local")
        sch.transform_layout(copy, "d0, d1, d2, d3 -> d0, d2, d3, d1")
    packed = None
    if not prepacked:
        # the weights packed on every call (graph-fold-qdq packs constant ones once)
        packed = sch.cache_read(tile, weights, "local")
        sch.transform_layout(packed, f"d0, d1, d2, d3 -> d2, d3, d1 // {DEPTH}, d0, d1 % {DEPTH}")
    fold_epilogue(sch, stage)
    n, c, h, w = sch.get_loops(stage)
    count = fit(w.extent, knobs["columns"])
    vectors = fit(c.extent // lanes, max(knobs["accumulators"] // count, 1))
    chunk = vectors * lanes
    co, ci = sch.split(c, [None, chunk]) if chunk < c.extent else (None, c)
    wo, wi = sch.split(w, [None, count]) if count < w.extent else (None, w)
    outer = [loop for loop in (n, co, h, wo) if loop is not None]
    sch.reorder(*outer, wi, ci)
    if wi.extent > 1:
        sch.unroll(sch.get_loop(stage, wi.axis))
    if ci.extent > lanes:
        # one machine vector at a time: LLVM's SLP vectorizer takes seconds over a
        # block of several vectors' strided stores
        cio, ci = sch.split(ci, [None, lanes])
        sch.unroll(sch.get_loop(stage, cio.axis))
    sch.vectorize(sch.get_loop(stage, ci.axis))
    sch.compute_at(tile, outer[-1])
    spatial, reduction = spatial_and_reduction_loops(sch, tile)
    tn, tc, th, tw = spatial
    if prepacked:
        cgo, cq, *taps = reduction
    else:
        channels, *taps = reduction
        cgo, cq = sch.split(channels, [None, DEPTH])
    tco, tci = sch.split(tc, [None, lanes]) if lanes < tc.extent else (None, tc)
    channel_loops = [tco] if tco is not None else []
    sch.reorder(tn, th, *taps, cgo, tw, *channel_loops, tci, cq)
    for loop in (tw, *channel_loops):
        if loop.extent > 1:
            sch.unroll(sch.get_loop(tile, loop.axis))
    first = taps[0] if taps else cgo
    sch.decompose_reduction(tile, sch.get_loop(tile, first.axis))
    sch.tensorize(sch.get_loop(tile, tci.axis), dot_i8_name(lanes, vnni))
    loops = sch.get_loops(packed) if packed is not None else []
    if loops:
        vectorize_innermost(sch, packed, loops[-1], lanes)


def _channels_innermost(sch: Schedule, pad: StageHandle, lanes: int) -> None:
    """The pad stage's channel loop innermost and vectorized: its stores are then
    contiguous in the channels-last copy, and the bounds test of the padding (on the
    row and column) is the same for every lane, so each lane is one strided load
    instead of a clamped gather (the copy cost about as much as the reduction of the
    112 x 112 benchmark's convolutions otherwise)."""
    snapshot, length = sch.state.copy(), len(sch.trace.steps)
    try:
        loops = sch.get_loops(pad)
        channel = loops[1]
        if channel.extent < lanes:
            return  # a few channels (an image's): the rows stay the vectors
        others = [loop for loop in loops if loop.axis != channel.axis]
        sch.reorder(*others, channel)
        vectorize_innermost(sch, pad, sch.get_loop(pad, channel.axis), 4 * lanes)
    except ScheduleError:
        sch.restore(snapshot, length)


def pad_stage_writing(sch: Schedule, buffer: str) -> StageHandle | None:
    """The pad stage of `sch` that writes the buffer named `buffer`, if there is one."""
    for other in sch.get_stages():
        state = sch.state.stage(other.name)
        if sch.state.buffers[state.buffer].name == buffer and stage_kind(other) == "pad":
            return other
    return None


CONV2D_INT8 = Template(
    "conv2d_int8",
    (
        Knob("columns", (1, 2, 4, 7, 8, 14), 8),
        Knob("accumulators", (8, 14, 16, 24, 28), 24),
    ),
    lambda sch, stage: is_reduction(sch, stage) and stage_kind(stage) == "qconv",
    schedule_conv2d_int8,
)
