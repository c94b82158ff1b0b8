"""conv2d-transpose: a gather over the kernel window per output pixel (with a
divisibility select per tap); the output row is vectorized inside the window loops,
the taps' loads becoming gathers.

Knobs: `vector_width`."""

from __future__ import annotations

from strato.schedule.templates.base import (
    Knob,
    Template,
    is_reduction,
    machine_lanes,
    stage_kind,
)
from strato.targets.llvm.templates.reduction import schedule_reduction

CONV2D_TRANSPOSE = Template(
    "conv2d_transpose",
    (Knob("vector_width", (1, 4, 8, 16, 32), machine_lanes),),
    lambda sch, stage: is_reduction(sch, stage) and stage_kind(stage) == "conv_transpose",
    lambda sch, stage, knobs, context: schedule_reduction(sch, stage, knobs, context, any_stride=True),
)
