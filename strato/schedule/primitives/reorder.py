"""reorder: the given loops of one stage take the positions they occupy, in the order
given; the other loops stay where they are."""

from __future__ import annotations

from strato.schedule.primitives.checks import fail, init_stays_outside_reductions, leaf, not_tensorized
from strato.schedule.state import ScheduleState


def reorder(state: ScheduleState, stage_name: str, vars_: list[str]) -> None:
    stage = state.stage(stage_name)
    if len(set(vars_)) != len(vars_):
        raise fail("reorder", f"loops {', '.join(vars_)} repeat a loop")
    positions = sorted(leaf("reorder", stage, v) for v in vars_)
    not_tensorized("reorder", stage, vars_)
    leaves = list(stage.leaves)
    for pos, var in zip(positions, vars_):
        leaves[pos] = var
    init_stays_outside_reductions("reorder", stage, leaves)
    for other in state.stages:
        attach = other.attach
        if attach is None or not attach.reverse or attach.stage != stage.name:
            continue
        for outer in leaves[: leaves.index(attach.var) + 1]:
            if stage.is_reduction_var(outer):
                raise fail(
                    "reorder",
                    f"stage {other.name} is computed after loop {attach.var} of stage "
                    f"{stage.name}, which would run inside reduction loop {outer}",
                )
    stage.leaves = leaves
