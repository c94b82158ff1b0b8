"""transform_layout: a local buffer stored in another layout, given as an index map
over its dimensions (`"i, j -> j, i"`, `"n, c, h, w -> n, c // 8, h, w, c % 8"`); every
load and store of it is rewritten."""

from __future__ import annotations

from strato.schedule.layout import IndexMap, LayoutError
from strato.schedule.primitives.cache import resolve_read_buffer
from strato.schedule.primitives.checks import fail
from strato.schedule.state import ScheduleState


def transform_layout(state: ScheduleState, stage_name: str, buffer: str | int | None, index_map: str) -> None:
    stage = state.stage(stage_name)
    if buffer is None or buffer == state.buffers[stage.buffer].name:
        target = stage.buffer
    else:
        target = resolve_read_buffer("transform_layout", state, stage, buffer)
    b = state.buffers[target]
    if state.is_output(target):
        raise fail("transform_layout", f"buffer {b.name} is an argument of the kernel; its layout is fixed")
    if b.layout is not None:
        raise fail("transform_layout", f"buffer {b.name} already has a layout")
    try:
        layout = IndexMap.parse(index_map, b.logical_shape)
    except LayoutError as error:
        raise fail("transform_layout", str(error)) from None
    b.layout = layout
