"""Depthwise (and grouped) conv2d in NCHW: each output channel reads its own input
channel, so a tile over channels shares nothing; the tile is rows of output pixels
instead: `rows` output rows (unrolled) x `vector_width` columns (vectorized), inside the
kernel-window loops.

Knobs: `vector_width`, `rows` (output rows per tile)."""

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
    tile_for_registers,
)
from strato.targets.llvm.templates.conv2d import channel_shares_input


def schedule_depthwise(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    spatial, _ = spatial_and_reduction_loops(sch, stage)
    if len(spatial) < 2:
        return
    tile_for_registers(
        sch, stage, spatial[-1].axis, spatial[-2].axis, knobs["vector_width"], knobs["rows"]
    )


DEPTHWISE_CONV2D = Template(
    "depthwise_conv2d_nchw",
    (
        Knob("vector_width", (4, 8, 16, 32, 64), machine_lanes),
        Knob("rows", (1, 2, 4), 2),
    ),
    lambda sch, stage: (
        is_reduction(sch, stage)
        and stage_kind(stage) == "conv"
        and channel_shares_input(sch, stage)
    ),
    schedule_depthwise,
)
