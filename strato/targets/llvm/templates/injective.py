"""Injective and elementwise stages (fused chains included: each stage of the chain is
scheduled alike): the innermost loop, which walks the output contiguously, vectorized.

When the stage is the last of a kernel made only of elementwise and reduction stages
(softmax, layer normalization: reductions along the rows, then elementwise stages over
them), the stages before it are computed inside its loop over rows, each for the row
at hand (`compute_at`, the last producer first): the row's intermediates stay in
cache between the passes over it, their buffers shrink to one row, and the kernel is
one loop nest, which is one parallel region over the rows on several threads.

    softmax over [4, 128, 128]: for each of the 512 rows: max, exp, sum, divide

A copy whose output rows are the input's columns (a transpose of the two innermost
dimensions, a blocked layout back to a plain one: `out[c, w] = in[c // 16, w, c % 16]`)
reads each lane of its vector from another input row, one element per lane. Such a
stage moves a block of rows at a time: the loop over the input's contiguous dimension
is split by its run (the block, 16) and its inner part unrolled right outside the
vectorized loop, so `vectorize_loops` sees the block's copies side by side and moves the
block through registers as a transpose (whole rows in, whole rows out).

    out[128, 28, 28] = in[8, 28, 28, 16]:  for c.outer, h, w.outer: 16 x 14 block

Knobs: `vector_width`, the lanes of the vectorized loop (1 leaves it scalar)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

from strato.schedule import LoopHandle, Schedule, ScheduleError, StageHandle
from strato.schedule.templates.base import (
    Knob,
    ScheduleContext,
    Template,
    fit,
    is_reduction,
    machine_lanes,
    vectorize_innermost,
)
from strato.targets.llvm.unroll_loops import EXPLICIT_UNROLL
from strato.targets.llvm.vectorize_loops import copied

ROW_TEMPLATES = ("injective", "reduction")
"""The templates of the stages a row-wise kernel is made of."""


def _schedule(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    if sch.state.stage(stage.name).attach is not None:
        # computed inside another stage's nest, whose template shaped its loops for
        # the region computed there (a convolution's tile: `copy_out_per_tile`)
        loops = sch.get_loops(stage)
        if loops and knobs["vector_width"] > 1:
            sch.vectorize(loops[-1])
        return
    loops = sch.get_loops(stage)
    vectorized = None
    if loops:
        walking = next((loop for loop in reversed(loops) if loop.extent > 1), loops[-1])
        if walking is not loops[-1]:
            # unit loops innermost (a block of one channel: NCHW1c): the loop the copy
            # walks contiguously goes inside them, to be vectorized
            units = loops[loops.index(walking) + 1 :]
            sch.reorder(*units, walking)
            walking = sch.get_loop(stage, walking.axis)
        vectorized = vectorize_innermost(sch, stage, walking, knobs["vector_width"])
    if not compute_rows_inside(sch, stage, context) and vectorized is not None:
        transpose_blocks(sch, stage, vectorized, knobs["vector_width"])


def transpose_blocks(
    sch: Schedule, stage: StageHandle, vectorized: LoopHandle, lanes: int
) -> bool:
    """Move a transposing copy (see the module docstring) a block of rows at a time:
    the loop over the input's contiguous dimension split by its run, the inner part
    unrolled right outside `vectorized`; whether it was."""
    state = sch.state.stage(stage.name)
    if vectorized.extent > lanes or len(state.roots_of(vectorized.axis)) != 1:
        return False
    (lane_axis,) = state.roots_of(vectorized.axis)
    block = transposed_block(sch, stage, lane_axis)
    if block is None:
        return False
    axis, run, remainder = block
    if axis not in state.leaves:
        return False
    factor = fit(state.root_extent(axis), min(run, lanes))
    # a remainder by the run is a plain index only for blocks of the whole run
    if factor < 4 or (remainder and factor != run):
        return False
    snapshot, trace_length = sch.state.copy(), len(sch.trace.steps)
    try:
        unroll_block_rows(sch, stage, axis, factor, vectorized.axis)
    except ScheduleError:
        sch.restore(snapshot, trace_length)
        return False
    return True


def unroll_block_rows(sch: Schedule, stage: StageHandle, axis: str, run: int, lane: str) -> None:
    """Split loop `axis` (the input's rows of a transposed block) by `run` and unroll its
    inner part at the loop level right outside loop `lane` (the vector's), so that the
    copies of the block's rows stand side by side."""
    _, inner = sch.split(sch.get_loop(stage, axis), [None, run])
    loops = sch.get_loops(stage)
    below = loops[[loop.axis for loop in loops].index(inner.axis) :]
    order = [loop for loop in below if loop.axis not in (inner.axis, lane)]
    sch.reorder(*order, sch.get_loop(stage, inner.axis), sch.get_loop(stage, lane))
    sch.unroll(sch.get_loop(stage, inner.axis))
    sch.annotate(sch.get_loop(stage, inner.axis), EXPLICIT_UNROLL)


def transposed_block(
    sch: Schedule, stage: StageHandle, lane_axis: str
) -> tuple[str, int, bool] | None:
    """For a stage that copies one buffer into another, each vector lane (`lane_axis`)
    reading another input row: the axis the input's innermost index walks (itself, or
    its unsigned remainder by a constant), the run of that index (the dimension's size, or the
    constant) and whether it is a remainder. None for any other stage."""
    state = sch.state.stage(stage.name)
    body = state.body
    pair = copied(body.block.ops)
    if pair is None:
        return None
    load, store = pair
    names = dict(zip(body.vars, state.root_vars, strict=True))
    lane_var = next(var for var, name in names.items() if name == lane_axis)
    if store.indices[-1] is not lane_var or not _uses(load.indices, lane_var):
        return None
    innermost = load.indices[-1]
    run = None
    remainder = isinstance(innermost.owner, arith.RemUIOp)
    if remainder:
        divisor = innermost.owner.rhs.owner
        if not (isinstance(divisor, arith.ConstantOp) and isinstance(divisor.value, IntegerAttr)):
            return None
        run = divisor.value.value.data
        innermost = innermost.owner.lhs
    if innermost not in names or innermost is lane_var:
        return None
    if run is None:
        buffer = body.buffer_of(load.memref)
        if buffer is None:
            return None
        run = sch.state.buffers[buffer].logical_shape[-1]
    return names[innermost], run, remainder


def _uses(values: Sequence[SSAValue], var: SSAValue) -> bool:
    """Whether any of `values` is computed from `var`."""
    pending = list(values)
    while pending:
        value = pending.pop()
        if value is var:
            return True
        if isinstance(value.owner, Operation):
            pending.extend(value.owner.operands)
    return False


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
