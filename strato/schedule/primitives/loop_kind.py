"""vectorize, unroll, parallel and bind: the kind of one loop. A vectorized loop is the
innermost loop of its stage with a straight-line body (checked on the rebuilt IR too);
parallel loops and virtual threads never run over a reduction axis."""

from __future__ import annotations

from strato.dialects.loop import LoopKind
from strato.schedule.primitives.checks import fail, leaf, not_tensorized, nothing_attached
from strato.schedule.state import ScheduleState

THREADS = ("vthread",)
"""Thread names `bind` accepts: the CPU and VTA targets have virtual threads only."""


def set_kind(state: ScheduleState, stage_name: str, var: str, kind: LoopKind, primitive: str) -> None:
    stage = state.stage(stage_name)
    pos = leaf(primitive, stage, var)
    not_tensorized(primitive, stage, [var])
    if kind in (LoopKind.PARALLEL, LoopKind.VIRTUAL_THREAD, LoopKind.VECTORIZED) and stage.is_reduction_var(var):
        raise fail(primitive, f"loop {var} of stage {stage.name} is a reduction loop")
    if kind == LoopKind.VECTORIZED:
        if pos != len(stage.leaves) - 1:
            raise fail(
                primitive,
                f"loop {var} of stage {stage.name} is not its innermost loop "
                f"({stage.leaves[-1]} is)",
            )
        nothing_attached(primitive, state, stage, [var])
    stage.kinds[var] = kind


def vectorize(state: ScheduleState, stage_name: str, var: str) -> None:
    set_kind(state, stage_name, var, LoopKind.VECTORIZED, "vectorize")


def unroll(state: ScheduleState, stage_name: str, var: str) -> None:
    set_kind(state, stage_name, var, LoopKind.UNROLLED, "unroll")


def parallel(state: ScheduleState, stage_name: str, var: str) -> None:
    set_kind(state, stage_name, var, LoopKind.PARALLEL, "parallel")


def bind(state: ScheduleState, stage_name: str, var: str, thread: str) -> None:
    if thread not in THREADS:
        raise fail("bind", f"unknown thread {thread!r}; loops bind to {', '.join(THREADS)}")
    set_kind(state, stage_name, var, LoopKind.VIRTUAL_THREAD, "bind")
