"""Reductions (softmax's max/sum, layer-norm's moments, mean and the other reduce ops,
and any reduction stage no other template claims): when the loads move by at most one
element per step of the innermost output loop, that loop is vectorized inside the
reduction loops, so each lane accumulates one output in a vector register. A reduction
along the contiguous axis (a row sum) is left to LLVM, whose loop vectorizer may
reassociate it (its updates carry `reassoc`).

Knobs: `vector_width` (1 leaves the stage as it is)."""

from __future__ import annotations

from typing import Any

from strato.schedule import Schedule, StageHandle
from strato.schedule.templates.base import (
    Knob,
    ScheduleContext,
    Template,
    is_reduction,
    machine_lanes,
    read_strides,
    spatial_and_reduction_loops,
    tile_for_registers,
)


def lanes_axis(sch: Schedule, stage: StageHandle, *, any_stride: bool = False) -> str | None:
    """The innermost output loop, if vectorizing it reads contiguous or invariant data
    (any affine data when `any_stride`)."""
    spatial, _ = spatial_and_reduction_loops(sch, stage)
    if not spatial:
        return None
    axis = spatial[-1].axis
    root = sch.state.stage(stage.name).roots_of(axis)
    if len(root) != 1:
        return None
    (var,) = root
    for strides in read_strides(sch, stage).values():
        stride = strides.get(var)
        if stride is None or (not any_stride and stride not in (0, 1)):
            return None
    return axis


def schedule_reduction(
    sch: Schedule,
    stage: StageHandle,
    knobs: dict[str, Any],
    context: ScheduleContext,
    *,
    any_stride: bool = False,
) -> None:
    width = knobs["vector_width"]
    if width <= 1:
        return
    axis = lanes_axis(sch, stage, any_stride=any_stride)
    if axis is not None:
        tile_for_registers(sch, stage, axis, None, width, 1)


REDUCTION = Template(
    "reduction",
    (Knob("vector_width", (1, 4, 8, 16, 32, 64), machine_lanes),),
    lambda sch, stage: is_reduction(sch, stage),
    schedule_reduction,
)
"""Last of the CPU's templates (the fallback of every reduction): see templates/__init__.py."""
