"""Pooling (max, average, global average): the innermost output loop vectorized inside
the window loops, as for any reduction, also when the window strides make its loads
gathers (the stores stay contiguous and the window values accumulate in registers).

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

POOLS = {"max_pool", "avg_pool_sum", "global_avg_pool_sum", "blocked_max_pool",
         "blocked_avg_pool_sum", "blocked_global_avg_pool_sum"}  # fmt: skip

POOLING = register_template(
    Template(
        "pooling",
        (Knob("vector_width", (1, 4, 8, 16, 32, 64), host_lanes),),
        lambda sch, stage: is_reduction(sch, stage) and stage_kind(stage) in POOLS,
        lambda sch, stage, knobs: schedule_reduction(sch, stage, knobs, any_stride=True),
    )
)
