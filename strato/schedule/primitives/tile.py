"""tile: split two loops and order the outer loops before the inner ones."""

from __future__ import annotations

from strato.schedule.primitives.reorder import reorder
from strato.schedule.primitives.split import split
from strato.schedule.state import ScheduleState


def tile(
    state: ScheduleState, stage_name: str, x: str, y: str, x_factor: int, y_factor: int, tail: str = "guard"
) -> list[str]:
    xo, xi = split(state, stage_name, x, [None, x_factor], tail)
    yo, yi = split(state, stage_name, y, [None, y_factor], tail)
    reorder(state, stage_name, [xo, yo, xi, yi])
    return [xo, yo, xi, yi]
