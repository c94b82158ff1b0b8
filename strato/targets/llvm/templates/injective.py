"""Injective and elementwise stages (fused chains included: each stage of the chain is
scheduled alike): the innermost loop, which walks the output contiguously, vectorized.

When the stage is the last of a kernel made only of elementwise and reduction stages
(softmax, layer normalization: reductions along the rows, then elementwise stages over
them), the stages before it are computed inside its loop over rows, each for the row
at hand (`compute_at`, the last producer first): the row's intermediates stay in
cache between the passes over it, their buffers shrink to one row, and the kernel is
one loop nest, which is one parallel region over the rows on several threads.

    softmax over [4, 128, 128]: for each of the 512 rows: max, exp, sum, divide

Knobs: `vector_width`, the lanes of the vectorized loop (1 leaves it scalar)."""

from __future__ import annotations

from typing import Any

from strato.schedule import LoopHandle, Schedule, ScheduleError, StageHandle
from strato.schedule.templates.base import (
    Knob,
    ScheduleContext,
    Template,
    is_reduction,
    machine_lanes,
    vectorize_innermost,
)

ROW_TEMPLATES = ("injective", "reduction")
"""The templates of the stages a row-wise kernel is made of."""


def _schedule(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    loops = sch.get_loops(stage)
    if loops:
        vectorize_innermost(sch, stage, loops[-1], knobs["vector_width"])
    compute_rows_inside(sch, stage, context)


def row_loop(sch: Schedule, stage: StageHandle) -> LoopHandle | None:
    """The innermost loop of `stage` outside the loops of its innermost axis (the rows
    of a row-major output), if there is one."""
    loops = sch.get_loops(stage)
    if not loops:
        return None
    state = sch.state.stage(stage.name)
    innermost = state.roots_of(loops[-1].axis)
    for loop in reversed(loops):
        if not state.roots_of(loop.axis) & innermost:
            return loop
    return None


def compute_rows_inside(sch: Schedule, stage: StageHandle, context: ScheduleContext) -> bool:
    """Compute every other stage of the kernel inside the row loop of `stage` when the
    kernel is a row-wise chain ending in `stage` (see the module docstring); whether it
    did. A producer the schedule refuses to move leaves the kernel as it was."""
    stages = sch.get_stages()
    if len(stages) < 2 or stages[-1] != stage or sch.get_consumers(stage):
        return False
    for other in stages:
        template = context.template_for(sch, other)
        if template is None or template.name not in ROW_TEMPLATES:
            return False
        if sch.state.stage(other.name).attach is not None:
            return False
    loop = row_loop(sch, stage)
    if loop is None or loop.extent < 2:
        return False
    producers = stages[:-1]
    work = {p.name: _work(sch.get_loops(p)) for p in producers}
    snapshot, trace_length = sch.state.copy(), len(sch.trace.steps)
    try:
        for producer in reversed(producers):
            sch.compute_at(producer, sch.get_loop(stage, loop.axis))
    except ScheduleError:
        sch.restore(snapshot, trace_length)
        return False
    # a producer whose row needs more than its share (a column reduction read by every
    # row) would be recomputed for each row: not worth it
    loops = sch.get_loops(stage)
    rows = _work(loops[: [x.axis for x in loops].index(loop.axis) + 1])
    if any(rows * _work(sch.get_loops(p)) > work[p.name] for p in producers):
        sch.restore(snapshot, trace_length)
        return False
    return True


def _work(loops: list[LoopHandle]) -> int:
    total = 1
    for loop in loops:
        total *= loop.extent
    return total


INJECTIVE = Template(
    "injective",
    (Knob("vector_width", (1, 4, 8, 16, 32, 64), machine_lanes),),
    lambda sch, stage: not is_reduction(sch, stage),
    _schedule,
)
