"""conv2d-transpose: a gather over the kernel window per output pixel (with a
divisibility select per tap); the output row is vectorized inside the window loops,
the taps' loads becoming gathers.

Knobs: `vector_width`."""

from __future__ import annotations

from strato.schedule.templates.base import (
    Knob,
    Template,
    host_lanes,
    is_reduction,
    register_template,
    stage_kind,
)
from strato.schedule.templates.reduction import schedule_reduction

CONV2D_TRANSPOSE = register_template(
    Template(
        "conv2d_transpose",
        (Knob("vector_width", (1, 4, 8, 16, 32), host_lanes),),
        lambda sch, stage: is_reduction(sch, stage) and stage_kind(stage) == "conv_transpose",
        lambda sch, stage, knobs: schedule_reduction(sch, stage, knobs, any_stride=True),
    )
)
