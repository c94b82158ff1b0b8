"""tensorize, as the schedule records it: the loop is marked with the intrinsic's name;
each time the kernel is rebuilt, `strato.schedule.tensorize.tensorize` matches the
loop's body against the intrinsic and replaces it (or refuses with a ScheduleError)."""

from __future__ import annotations

from strato.schedule.primitives.checks import fail, leaf
from strato.schedule.state import ScheduleState


def tensorize(state: ScheduleState, stage_name: str, var: str, intrinsic: str) -> None:
    stage = state.stage(stage_name)
    leaf("tensorize", stage, var)
    pos = stage.leaves.index(var)
    for inner in stage.leaves[pos:]:
        if inner in stage.tensorized:
            raise fail("tensorize", f"loop {inner} of stage {stage.name} is already tensorized")
    try:
        import strato.schedule.tensorize  # noqa: F401
    except ImportError:
        raise fail("tensorize", "no intrinsics are available (strato.schedule.tensorize is missing)") from None
    stage.tensorized[var] = intrinsic
