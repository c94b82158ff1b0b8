"""conv2d in NCHW: a register tile of output channels x output columns.

    for n, c.outer, h, w.outer:
      for ic, kh, kw:                          (the reduction)
        for c.inner (unrolled, `rows`):        one broadcast weight per row
          for w.inner (vectorized, `lanes`):   one input vector shared by all rows
            out[n, c, h, w] += x[n, ic, h*s+kh, w*s+kw] * w[c, ic, kh, kw]

The rows x lanes accumulators stay in registers for the whole reduction. A stride
makes the input loads gathers; they are still shared by the rows.

Knobs: `vector_width` (lanes along the output row), `rows` (output channels per tile).
"""

from __future__ import annotations

from typing import Any

from strato.schedule import Schedule, StageHandle
from strato.schedule.templates.base import (
    Knob,
    Template,
    host_lanes,
    is_reduction,
    read_strides,
    register_template,
    spatial_and_reduction_loops,
    stage_kind,
    tile_for_registers,
)


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


def schedule_conv2d(sch: Schedule, stage: StageHandle, knobs: dict[str, Any]) -> None:
    spatial, _ = spatial_and_reduction_loops(sch, stage)
    if len(spatial) < 2:
        return
    rows_axis = spatial[1].axis if len(spatial) >= 4 else None
    tile_for_registers(sch, stage, spatial[-1].axis, rows_axis, knobs["vector_width"], knobs["rows"])


CONV2D = register_template(
    Template(
        "conv2d_nchw",
        (
            Knob("vector_width", (4, 8, 16, 32, 64), host_lanes),
            Knob("rows", (1, 2, 4, 6, 8, 12, 16, 24), 24),
        ),
        lambda sch, stage: (
            is_reduction(sch, stage)
            and stage_kind(stage) == "conv"
            and not channel_shares_input(sch, stage)
        ),
        schedule_conv2d,
    )
)
