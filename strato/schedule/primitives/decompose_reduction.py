"""decompose_reduction: a reduction's init moved from its own nest to just before a loop
of its update nest, looping over the data-parallel loops from there inward."""

from __future__ import annotations

from strato.schedule.primitives.checks import fail, leaf
from strato.schedule.state import ScheduleState


def decompose_reduction(state: ScheduleState, stage_name: str, var: str) -> None:
    stage = state.stage(stage_name)
    pos = leaf("decompose_reduction", stage, var)
    if not stage.is_reduction:
        raise fail("decompose_reduction", f"stage {stage.name} is not a reduction")
    for outer in stage.leaves[:pos]:
        if stage.is_reduction_var(outer):
            raise fail(
                "decompose_reduction",
                f"loop {outer} of stage {stage.name} is a reduction loop outside loop {var}",
            )
    stage.init_at = var
