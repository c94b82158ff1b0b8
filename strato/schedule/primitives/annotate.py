"""annotate: a named value on a loop (or on a stage: its outermost loop), emitted as an
attribute of the loop for later passes."""

from __future__ import annotations

from strato.dialects.loop import INIT_ATTR, REDUCTION_ATTR, STAGE_ATTR
from strato.schedule.primitives.checks import fail, leaf
from strato.schedule.state import ScheduleState

RESERVED = {STAGE_ATTR, REDUCTION_ATTR, INIT_ATTR}
STAGE_KEY = ""
"""Where stage annotations are kept: they follow the stage's outermost loop."""


def annotate(state: ScheduleState, stage_name: str, var: str | None, key: str, value: object) -> None:
    stage = state.stage(stage_name)
    if var is not None:
        leaf("annotate", stage, var)
    if not key or key in RESERVED or not all(c.isalnum() or c in "._" for c in key):
        raise fail("annotate", f"{key!r} is not an annotation name (reserved: {', '.join(sorted(RESERVED))})")
    if value is not None and not isinstance(value, str | int | float | bool):
        raise fail("annotate", f"annotation {key} must be a string, number or boolean, got {value!r}")
    stage.annotations.setdefault(STAGE_KEY if var is None else var, {})[key] = value
