"""Pooling (max, average, global average).

A window pool in the blocked layout NCHW{c} (max or average over [N, C/b, H, W, b]) is
tiled like the blocked convolution: a register tile of `rows` output columns x one
channel block, accumulated over the window in registers and copied out once, with the
padding inlined into the window's loads (a padded copy of the whole input ahead of the
pool is a pass over memory as large as the pool's own: ResNet-18's 3x3 stride-2 max
pool of 112x112x64, one thread, 0.50 ms with the copy, 0.19 ms inlined and tiled):

    for n, cb, h, w.outer:                 (output tiles)
      tile = -inf (or 0)
      for kh, kw:                          (the window)
        for w.inner (unrolled, `rows`):
          for c (vectorized, the block):
            tile[w, c] = max(tile[w, c], x[n, cb, h*s+kh-p, w*s+kw-p, c] or -inf outside)
      out[n, cb, h, w, :] = epilogue(tile)

Every other pool has the innermost output loop vectorized inside the window loops, as for
any reduction, also when the window strides make its loads gathers (the stores stay
contiguous and the window values accumulate in registers).

Knobs: `vector_width` (the other pools' lanes), `rows` (the blocked window pools'
columns per tile)."""

from __future__ import annotations

from typing import Any

from strato.schedule import Schedule, StageHandle
from strato.schedule.templates.base import (
    Knob,
    ScheduleContext,
    Template,
    is_reduction,
    machine_lanes,
    spatial_and_reduction_loops,
    stage_kind,
)
from strato.targets.llvm.templates.conv2d_nchwc import register_tile
from strato.targets.llvm.templates.reduction import schedule_reduction

POOLS = {"max_pool", "avg_pool_sum", "global_avg_pool_sum", "blocked_max_pool",
         "blocked_avg_pool_sum", "blocked_global_avg_pool_sum"}  # fmt: skip
BLOCKED_WINDOW_POOLS = {"blocked_max_pool", "blocked_avg_pool_sum"}


def schedule_pooling(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    spatial, reduction = spatial_and_reduction_loops(sch, stage)
    if stage_kind(stage) in BLOCKED_WINDOW_POOLS and len(spatial) == 5 and reduction:
        for producer in sch.get_producers(stage):
            if stage_kind(producer) == "pad":
                sch.compute_inline(producer)
        register_tile(sch, stage, knobs["rows"], knobs["rows"])
        return
    schedule_reduction(sch, stage, knobs, context, any_stride=True)


POOLING = Template(
    "pooling",
    (
        Knob("vector_width", (1, 4, 8, 16, 32, 64), machine_lanes),
        Knob("rows", (1, 2, 4, 7, 8, 14), 8),
    ),
    lambda sch, stage: is_reduction(sch, stage) and stage_kind(stage) in POOLS,
    schedule_pooling,
)
