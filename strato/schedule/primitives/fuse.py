"""fuse: consecutive loops of one stage into one loop over the product of their
extents, named after them (`i.j.fused`)."""

from __future__ import annotations

from strato.schedule.primitives.checks import (
    fail,
    fresh_var,
    leaf,
    not_tensorized,
    nothing_attached,
)
from strato.schedule.state import Fuse, ScheduleState


def fuse(state: ScheduleState, stage_name: str, vars_: list[str]) -> str:
    stage = state.stage(stage_name)
    if len(vars_) < 2:
        raise fail("fuse", "give at least two loops")
    positions = [leaf("fuse", stage, v) for v in vars_]
    if positions != list(range(positions[0], positions[0] + len(vars_))):
        raise fail(
            "fuse",
            f"loops {', '.join(vars_)} of stage {stage.name} are not consecutive, outermost "
            f"first (the loops are {', '.join(stage.leaves)})",
        )
    kinds = {stage.is_reduction_var(v) for v in vars_}
    if len(kinds) > 1:
        raise fail("fuse", f"loops {', '.join(vars_)} of stage {stage.name} mix reduction and data-parallel loops")
    not_tensorized("fuse", stage, vars_)
    nothing_attached("fuse", state, stage, vars_)
    if stage.init_at in vars_[1:]:
        raise fail("fuse", f"the init of stage {stage.name} is decomposed at loop {stage.init_at}, inside the fused loops")
    name = fresh_var(stage, ".".join(vars_) + ".fused")
    stage.relations.append(Fuse(tuple(vars_), name))
    stage.leaves[positions[0] : positions[-1] + 1] = [name]
    for v in vars_:
        stage.kinds.pop(v, None)
        stage.annotations.pop(v, None)
    if stage.init_at == vars_[0]:
        stage.init_at = name
    return name
