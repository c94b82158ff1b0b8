"""Integer dense layer (graph.qdense: uint8 [.., K] x int8 [N, K] -> int32 [.., N]): a
register tile of rows x output-column vectors updated by the int8 dot product
`cpu.dot_i8` (vpdpbusd where the CPU has VNNI), as the integer convolution does:

    pack w into [K / 4, N, 4]                   (unless graph.qdense's weight is packed)
    for batch.., n.outer, m.outer:              (output tiles)
      tile[m, n] = 0                            (cache_write at the tile's loop)
      for k.outer:                              (the reduction, 4 products a step)
        for m.inner (unrolled, `rows`):         four input bytes broadcast per row
          for n.vector (unrolled):              one weight vector per column vector
            cpu.dot_i8.<L>x4                    tile[m, n:n+L] += x[m, k:k+4] . w[k/4, n:n+L, :]
      out[.., m, n] = epilogue(tile[m, n])      (bias, requantization folded in)

It needs K a multiple of 4 and N of the lanes L; other integer products are scheduled
as any reduction.

Knobs: `rows` (rows per tile), `accumulators` (vectors in the tile).
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
    read_strides,
    spatial_and_reduction_loops,
    stage_kind,
    vectorize_innermost,
)
from strato.targets.llvm.dot_i8 import DEPTH, dot_i8_lanes, dot_i8_name
from strato.targets.llvm.templates.conv2d_nchwc import fold_epilogue
from strato.targets.llvm.templates.reduction import REDUCTION, schedule_reduction


def schedule_dense_int8(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    lanes, vnni = dot_i8_lanes(set(context.features), context.lanes)
    spatial, reduction = spatial_and_reduction_loops(sch, stage)
    weights = _weights(sch, stage, spatial, reduction, lanes)
    if weights is None:
        schedule_reduction(sch, stage, REDUCTION.defaults(context), context)
        return
    prepacked = len(reduction) == 2
    tile = sch.cache_write(stage, "local")
    packed = None
    if not prepacked:
        packed = sch.cache_read(tile, weights, "local")
        sch.transform_layout(packed, f"d0, d1 -> d1 // {DEPTH}, d0, d1 % {DEPTH}")
    fold_epilogue(sch, stage)
    *batch, i, j = sch.get_loops(stage)
    rows = fit(i.extent, knobs["rows"])
    vectors = fit(j.extent // lanes, max(knobs["accumulators"] // rows, 1))
    chunk = vectors * lanes
    jo, ji = sch.split(j, [None, chunk]) if chunk < j.extent else (None, j)
    io, ii = sch.split(i, [None, rows]) if rows < i.extent else (None, i)
    outer = [*batch, *(loop for loop in (jo, io) if loop is not None)]
    sch.reorder(*outer, ii, ji)
    if ii.extent > 1:
        sch.unroll(sch.get_loop(stage, ii.axis))
    vectorize_innermost(sch, stage, sch.get_loop(stage, ji.axis), chunk)
    if outer:
        sch.compute_at(tile, outer[-1])
    spatial, reduction = spatial_and_reduction_loops(sch, tile)
    *tbatch, ti, tj = spatial
    if prepacked:
        tko, tq = reduction
    else:
        (tk,) = reduction
        tko, tq = sch.split(tk, [None, DEPTH])
    tjo, tji = sch.split(tj, [None, lanes]) if lanes < tj.extent else (None, tj)
    column_loops = [tjo] if tjo is not None else []
    sch.reorder(*tbatch, tko, ti, *column_loops, tji, tq)
    for loop in (ti, *column_loops):
        if loop.extent > 1:
            sch.unroll(sch.get_loop(tile, loop.axis))
    sch.decompose_reduction(tile, sch.get_loop(tile, tko.axis))
    sch.tensorize(sch.get_loop(tile, tji.axis), dot_i8_name(lanes, vnni))
    loops = sch.get_loops(packed) if packed is not None else []
    if loops:
        vectorize_innermost(sch, packed, loops[-1], lanes)


def _weights(sch: Schedule, stage: StageHandle, spatial, reduction, lanes: int) -> str | None:
    """The [N, K] weights when the tile applies, else None."""
    if len(spatial) < 2 or len(reduction) not in (1, 2) or spatial[-1].extent % lanes:
        return None
    if len(reduction) == 2 and reduction[1].extent != DEPTH:
        return None  # packed [K/4, N, 4]
    if len(reduction) == 1 and reduction[0].extent % DEPTH:
        return None
    output = sch.state.buffers[sch.state.stage(stage.name).buffer].name
    column, depth = spatial[-1].axis, reduction[-1].axis
    for name, strides in read_strides(sch, stage).items():
        if name != output and strides.get(column) not in (0, None) and strides.get(depth) == 1:
            return name
    return None


DENSE_INT8 = Template(
    "dense_int8",
    (
        Knob("rows", (1, 2, 4, 6, 8, 12), 8),
        Knob("accumulators", (8, 12, 16, 24, 28), 24),
    ),
    lambda sch, stage: is_reduction(sch, stage) and stage_kind(stage) == "qdense",
    schedule_dense_int8,
)
