"""Matrix-vector products (one output row: a dense layer at batch 1, an LSTM step's
gates): `rows` outputs at a time, their weights' rows read together along the
contiguous reduction axis.

    for .., g.outer:                       (blocks of `rows` outputs; parallel-ready)
      acc[0:rows] = 0                      (cache_write: a local tile at this loop)
      for k:                               (the reduction, contiguous in the weights)
        for g.inner (unrolled, `rows`):
          acc[g] += x[k] * w[g, k]
      out[.., g.outer, :] = acc

After unrolling, the tile's indices are static, so its accumulators are registers, and
the reduction loop is innermost with `rows` independent sums whose adds may be
reassociated: LLVM vectorizes it along k (one vector of x shared by the rows, one
contiguous vector of each weight row per step, `rows` vector accumulators reduced once
at the end). The weights stream from memory once, so the kernel runs at the memory
bandwidth rather than at the latency of one serial sum per output.

Used by the dense template when its tile cannot form (a single row) and by the LSTM
gate template. Knobs: `rows`.
"""

from __future__ import annotations

from strato.schedule import Schedule, StageHandle
from strato.schedule.templates.base import (
    Knob,
    fit,
    read_strides,
    spatial_and_reduction_loops,
)

ROWS = Knob("rows", (1, 2, 4, 8, 16), 8)


def gemv_operand(sch: Schedule, stage: StageHandle) -> str | None:
    """The matrix of a matrix-vector stage: the operand contiguous along its only
    reduction axis that moves along the innermost output axis; None when the stage is
    not one (several reduction axes, no such operand)."""
    spatial, reduction = spatial_and_reduction_loops(sch, stage)
    if len(reduction) != 1 or not spatial:
        return None
    state = sch.state.stage(stage.name)
    (k,) = state.roots_of(reduction[0].axis)
    rows = state.roots_of(spatial[-1].axis)
    if len(rows) != 1:
        return None
    (row,) = rows
    output = sch.state.buffers[state.buffer].name
    for name, strides in read_strides(sch, stage).items():
        if name != output and strides.get(k) == 1 and strides.get(row) not in (0, 1, None):
            return name
    return None


def schedule_gemv(sch: Schedule, stage: StageHandle, rows: int) -> bool:
    """Schedule `stage` as a matrix-vector product with `rows` outputs a block (see the
    module docstring); False (and nothing done) when it is not one."""
    if rows < 2 or gemv_operand(sch, stage) is None:
        return False
    spatial, _ = spatial_and_reduction_loops(sch, stage)
    count = fit(spatial[-1].extent, rows)
    if count < 2:
        return False
    tile = sch.cache_write(stage, "local")
    *outer, g = sch.get_loops(stage)
    go, gi = sch.split(g, [None, count]) if count < g.extent else (None, g)
    at = go if go is not None else (outer[-1] if outer else None)
    if at is None:
        # a single block: the tile is the whole output, computed at the root
        sch.unroll(gi)
    else:
        sch.compute_at(tile, at)
    spatial, reduction = spatial_and_reduction_loops(sch, tile)
    *tile_outer, tile_rows = spatial
    sch.reorder(*tile_outer, *reduction, tile_rows)
    sch.unroll(sch.get_loop(tile, tile_rows.axis))
    sch.decompose_reduction(tile, sch.get_loop(tile, reduction[0].axis))
    return True
